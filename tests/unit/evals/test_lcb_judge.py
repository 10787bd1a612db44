"""The host comparator's rules on hand-written outputs (lcb_runner's grade_stdio and
grade_call_based; the end-to-end parity set is tests/support/lcb_parity_cases.py)."""

from __future__ import annotations

import time

import pytest

from surrogate_dagster.evals.harness import lcb_judge as J


@pytest.mark.parametrize("got,want,same", [
    ("5\n", "5", True), ("  5  \n\n\n", "5\n", True), ("5\r\n6\r\n", "5\n6\n", True),
    ("2.5", "2.500000", True), ("1e3", "1000", True), ("-0", "0", True), ("3   4", "3 4", True),
    ("0.3333333", "0.333333", False), ("5\n\n6", "5\n6", False), ("YES", "yes", False),
    ("3,4", "3 4", False), ("1 2", "1 2 3", False), ("", "0", False), ("", "", True),
    ("nan", "nan", True), ("nan", "NaN", False),  # text first; then Decimal('NaN') != Decimal('NaN')
])
def test_stdout_rules(got, want, same):
    assert J.stdout_matches(got, want) is same


def enc(v):  # the sandbox's tagged encoding, written out by hand for the cases below
    if v is None:
        return ["none"]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        return ["float", repr(v)]
    if isinstance(v, str):
        return ["str", v]
    if isinstance(v, (list, tuple, set)):
        return [type(v).__name__, [enc(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", [[enc(k), enc(x)] for k, x in v.items()]]
    raise TypeError(v)


@pytest.mark.parametrize("value,output,same", [
    (3, "3", True), (3, "3.0", True), (True, "1", True), (1, "true", True), (0, "false", True),
    ((0, 1), "[0, 1]", True), ([(0, 1)], "[[0, 1]]", False), ({0, 1}, "[0, 1]", False),
    ({"a": 1}, '{"a": 1}', True), ({1: 1}, '{"1": 1}', False), ({"a": 1, "b": 2}, '{"a": 1}', False),
    ("abc", '"abc"', True), ("abc ", '"abc"', False), (None, "null", True), (None, "0", False),
    (2.5, "2.5", True), (2.5000001, "2.5", False), ([1, [2, [3]]], "[1, [2, [3]]]", True),
    ([1, 2], "[1, 2, 3]", False), ("1", "1", False), (float("nan"), "1", False),
])
def test_value_rules(value, output, same):
    assert J.value_matches(enc(value), J.load_expected(output)) is same


def test_big_int_literals_compare_by_digits():
    digits = "7" * 6000
    assert J.value_matches(["int", digits], J.load_expected(digits))
    assert not J.value_matches(["int", "0" + digits], J.load_expected(digits))  # not canonical
    assert not J.value_matches(["int", "7" * 5999 + "8"], J.load_expected(digits))
    assert not J.value_matches(["float", "1e300"], J.load_expected(digits))


@pytest.mark.parametrize("tree", [
    "3", [], ["int"], ["int", 3], ["int", "3.0"], ["list", "x"], ["dict", [["str", "a"]]],
    ["dict", [[["str", "a"], ["int", "1"]], [["str", "a"], ["int", "1"]]]],  # repeated key
    ["weird", 1], ["float", "x"],
])
def test_malformed_trees_never_match(tree):
    assert J.value_matches(tree, J.load_expected('{"a": 1}')) is False
    assert J.value_matches(tree, J.load_expected("3")) is False


def test_colliding_keys_cost_linear_time():
    # ints that all hash alike (multiples of 2**61 - 1) as dict keys: never built on the host
    n = 26_000
    tree = ["dict", [[["int", str(k * (2 ** 61 - 1))], ["int", "0"]] for k in range(n)]]
    want = J.load_expected("{" + ", ".join(f'"{k}": 0' for k in range(n)) + "}")
    t = time.perf_counter()
    assert J.value_matches(tree, want) is False
    assert J.value_matches(["set", [["int", str(k * (2 ** 61 - 1))] for k in range(n)]], []) is False
    assert time.perf_counter() - t < 1.0


def test_judge_stops_at_the_first_failure():
    tests = [{"input": "", "output": "1"}, {"input": "", "output": "2"}, {"input": "", "output": "3"}]
    v = J.judge("stdin", tests, [{"compile": None}, {"out": "1"}, {"out": "9"}, {"out": "3"}])
    assert (v.passed, v.passed_tests, v.error) == (False, 1, "wrong_answer")
    v = J.judge("stdin", tests, [{"compile": None}, {"out": "1"}, {"err": "timeout"}])
    assert (v.passed, v.passed_tests, v.error) == (False, 1, "timeout")
    v = J.judge("stdin", tests, [{"compile": None}, {"out": "1"}], problem="global_timeout")
    assert (v.passed, v.passed_tests, v.error, v.detail) == (False, 1, "no_result", "global_timeout")
    v = J.judge("stdin", tests, [{"compile": "SyntaxError: x"}])
    assert (v.passed, v.passed_tests, v.error) == (False, 0, "runtime_error")
    v = J.judge("stdin", tests, [{"compile": None}, {"out": "1"}, {"out": "2"}, {"out": "3"}, {"out": "x"}])
    assert (v.passed, v.passed_tests) == (True, 3)  # records past the last test are ignored
    v = J.judge("functional", tests[:1], [{"compile": None}, {"enc": "not plain data: numpy.int64"}])
    assert (v.passed, v.error) == (False, "wrong_answer")
    v = J.judge("functional", tests[:1], [{"compile": None}, {"passed": True}])
    assert (v.passed, v.error) == (False, "wrong_answer")
