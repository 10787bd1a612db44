"""LiveCodeBench's stand-in problems are dated and parsed, and encoded tests refuse code objects
(the sandboxed runs: tests/integration/test_evals_lcb.py)."""

from __future__ import annotations

import base64
import pickle
import zlib
from datetime import date

import pytest

from surrogate_dagster.evals.harness import livecodebench as L
from surrogate_dagster.paths import shared_dir


STANDIN = shared_dir() / "data/benchmarks/leetcode_contests_20240121-Jul.OpenCoder.jsonl"


@pytest.fixture(scope="module")
def problems():
    return L.load_standin(STANDIN)


def test_standin_is_dated_and_parsed(problems):
    assert len(problems) == 180
    assert min(p.date for p in problems) == date(2023, 7, 2) and max(p.date for p in problems) == date(2024, 1, 21)
    p = problems[0]
    assert p.starter_code.startswith("class Solution:") and "Telephone keypads" in p.question
    # its assert script read into functional tests: the row's first pair, copied by hand
    assert p.mode == "functional" and p.fn_name == "minimumPushes"
    assert p.tests[0] == {"kwargs": {"word": "abcde"}, "output": "5"} and len(p.tests) == 100
    # the two linked-list problems build ListNode values in the test: kept whole (sealed asserts)
    kept = sorted(q.id for q in problems if q.mode == "asserts")
    assert kept == ["biweekly-contest-110-insert-greatest-common-divisors-in-linked-list",
                    "weekly-contest-358-double-a-number-represented-as-a-linked-list"]


def test_standin_asserts_of_other_shapes_are_kept_whole():
    assert L.standin_functional_tests("my_solution = Solution()\nassert my_solution.f(1) == 2\n") is None
    assert L.standin_functional_tests("my_solution = Solution()\ntest_input = {'a': (1, 2)}\n"
                                      "assert my_solution.f(**test_input) == 2\n") is None  # a tuple
    assert L.standin_functional_tests("my_solution = Solution()\ntest_input = {'a': 1}\n"
                                      "assert my_solution.f(**test_input) != 2\n") is None
    got = L.standin_functional_tests("my_solution = Solution()\ntest_input = {'a': [1]}\n"
                                     "assert my_solution.f(**test_input) == [[1], 'x']\n")
    assert got == ("f", [{"kwargs": {"a": [1]}, "output": '[[1], "x"]'}])


def test_encoded_tests_refuse_code_objects():
    evil = base64.b64encode(zlib.compress(pickle.dumps(OSError("x")))).decode()
    with pytest.raises(pickle.UnpicklingError):
        L._decode_tests(evil)
