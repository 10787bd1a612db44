"""The host's side of the assert harness is bounded and reads only the supervisor's tagged lines.

A candidate value of 26,000 ints that all hash alike made ``judge()`` build a set in time
quadratic in its size (3 s of host CPU here, 11.5 s on the probe's machine; issue 28 item 7). Now
sets and dict keys are built only once their hashes are known not to collide in bulk, sets and
dicts compare by sorting, decoded nodes and number texts are capped, and a clock per sample fails
the sample with its reason. The judge accepts only lines tagged with the run's nonce."""

from __future__ import annotations

import time

import pytest

from surrogate_dagster.sandbox import plain
from surrogate_dagster.sandbox.judge import frame_claims, judge
from surrogate_dagster.sandbox.plain import BadValue, Budget, budget_scope, decode, safe_set, typed_eq
from surrogate_dagster.sandbox.runners import assert_files, assert_input, plan_tests

NONCE = "0123456789abcdef" * 2
M = 2**61 - 1  # hash(k * M) == 0 for every int k
COLLIDING = [["int", str(k * M)] for k in range(1, 26_001)]


def _judge(test: str, value: list, **kw) -> dict:
    plans, perr = plan_tests("def f():\n    pass\n", [test])
    events = [{"sol": None}, {"setup": None}, {"t": 0, "a": 0, "v": [value]}, {"t": 0, "end": None}]
    return judge(plans, perr, frame_claims(events, NONCE), None, nonce=NONCE, **kw)


@pytest.mark.parametrize("test, value", [
    ("assert f() == {1, 2}", ["set", COLLIDING]),
    ("assert f() == {1: 0}", ["dict", [[c, ["int", "0"]] for c in COLLIDING]]),
    ("assert set(f()) == {1, 2}", ["list", COLLIDING]),
    ("assert len(frozenset(f())) == 2", ["tuple", COLLIDING]),
    ("assert f() | {%s} == {1, 2}" % ", ".join(f"{k} * {M}" for k in range(9, 17)), ["set", COLLIDING[:8]]),
])
def test_colliding_hashes_are_refused_not_hashed(test: str, value: list) -> None:
    rep = _judge(test, value)
    assert rep["errors"][0].startswith("bad value:") and "hash" in rep["errors"][0], rep["errors"]


@pytest.mark.timing
def test_host_judge_time_for_26k_colliding_ints() -> None:
    t0 = time.process_time()
    rep = _judge("assert f() == {1, 2}", ["set", COLLIDING])
    assert rep["errors"][0].startswith("bad value:")
    assert time.process_time() - t0 < 1.0  # was 3.0 s of CPU here (quadratic in the count)


def test_honest_sets_and_duplicates_still_build() -> None:
    assert safe_set([1, 2, 3] * 10_000) == {1, 2, 3}  # duplicates share a hash and do not count
    assert safe_set([k * M for k in range(8)]) == {k * M for k in range(8)}  # a few ties are fine
    with pytest.raises(BadValue):
        safe_set([k * M for k in range(1, 10)])
    rep = _judge("assert sorted(set(f())) == [1, 2]", ["list", [["int", "1"], ["int", "2"]] * 5000])
    assert rep["errors"] == [None]


def test_sets_and_dicts_compare_by_canonical_order() -> None:
    assert typed_eq({1, 2.0}, {1.0, 2}) and not typed_eq({True}, {1}) and not typed_eq({1: True}, {1: 1})
    assert typed_eq({(1, "a"): [1], "b": {2}}, {"b": {2}, (1, "a"): [1]})
    assert typed_eq(frozenset({1, frozenset({2, 3})}), frozenset({frozenset({3, 2}), 1}))
    assert not typed_eq({(1, True)}, {(1, 1)}) and not typed_eq({"a": 1}, {"b": 1})
    assert not typed_eq({float("nan")}, {float("nan")}) and not typed_eq({1, 2}, {1, 3})


def test_decode_work_is_capped() -> None:
    with pytest.raises(BadValue, match="nodes"), budget_scope(Budget(None, max_nodes=1000)):
        decode(["list", [["int", "1"]] * 2000])
    with pytest.raises(BadValue):
        decode(["int", "9" * 5000])
    with pytest.raises(BadValue):
        decode(["float", "1" * 1000])


def test_a_sample_past_its_host_budget_fails_with_the_reason(monkeypatch) -> None:
    clock = iter(range(0, 10**6, 5))
    monkeypatch.setattr(plain.time, "monotonic", lambda: next(clock))  # 5 "seconds" per reading
    rep = _judge("assert f() == [1]", ["list", [["int", "1"]] * 5000], budget_s=2.0)
    assert rep.get("host_budget_exceeded") and rep["errors"][0].startswith("host_budget:"), rep["errors"]


def test_only_lines_tagged_with_the_nonce_count() -> None:
    plans, perr = plan_tests("def f():\n    return 1\n", ["assert f() == 1"])
    good = [{"sol": None}, {"setup": None}, {"t": 0, "a": 0, "v": [["int", "1"]]}, {"t": 0, "end": None}]
    assert judge(plans, perr, frame_claims(good, NONCE), None, nonce=NONCE)["errors"] == [None]
    for forged in (frame_claims(good, "f" * 32),  # another nonce
                   frame_claims(good, NONCE) + '{"t": 0, "end": null}\n',  # an untagged line
                   frame_claims(good, NONCE).replace(" W ", " X ", 1),  # an unknown channel
                   frame_claims(good, NONCE) + f"{NONCE} W " + '{"t": 0, "a": 0, "v": [["int", "1"]]}\n'):  # twice
        rep = judge(plans, perr, forged, None, nonce=NONCE)
        assert rep["tampered"] and rep["errors"] == [f"tampered: {rep['tampered']}"], forged


def test_nothing_the_harness_sends_holds_expected_values() -> None:
    code = "def f(x):\n    return x\n"
    tests = ["assert f(1) == 'x9z'", "CASES = {2: 'q7w', 3: 'k2v'}\nfor k, want in CASES.items():\n    assert f(k) == want",
             "for v in f([5]):\n    assert v in ['m4n']"]  # unsealed: not sent at all
    plans, _ = plan_tests(code, tests)
    sent = assert_input(plans, nonce=NONCE).decode() + "".join(assert_files(code).values())
    assert all(s not in sent for s in ("x9z", "q7w", "k2v", "m4n")) and "f(2)" in sent and "f(3)" in sent
    assert NONCE in assert_input(plans, nonce=NONCE).decode()  # the supervisor's stdin (it keeps it)
    assert NONCE not in "".join(assert_files(code).values())
