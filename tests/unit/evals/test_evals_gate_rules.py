"""The evals' gate rules: target and regression gates, comparable reports, currency and the decision
(the gate assets materialized: tests/integration/test_evals_gates.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.evals.gates import comparable, currency_gate, decide, regression_gate, target_gate
from surrogate_dagster.evals.harness.common import unavailable


def S(score, status="ok", **kw):
    return {"score": score, "status": status, "variant": "v", "version": "1", "n_items": 10, "score_name": "pass@1",
            **kw}


def test_target_gate():
    assert target_gate("g", S(84.0), 84).passed
    assert not target_gate("g", S(83.9), 84).passed
    g = target_gate("g", S(None, status="unavailable", reason="Docker unavailable"), 25)
    assert not g.passed and "not a pass" in g.description and "Docker" in g.description
    assert target_gate("g", S(None, status="unavailable", reason="x"), None).passed  # no target: informative
    assert not target_gate("g", None, 70).passed


@pytest.mark.parametrize("cur, prev, mode, ok", [
    (95.0, 100.0, "relative", True), (94.9, 100.0, "relative", False), (0.0, 0.0, "relative", True),
    (45.0, 50.0, "points", True), (44.9, 50.0, "points", False), (47.6, 50.0, "relative", True),
])
def test_regression_gate(cur, prev, mode, ok):
    g = regression_gate("g", S(cur), S(prev), tolerance=0.05, mode=mode, previous_checkpoint="stage1_checkpoint")
    assert g.passed is ok and g.blocking


def test_regression_needs_comparable_reports():
    assert regression_gate("g", S(50.0), None, tolerance=0.05, mode="relative", previous_checkpoint=None).passed
    missing = regression_gate("g", S(50.0), None, tolerance=0.05, mode="relative", previous_checkpoint="stage1")
    assert not missing.passed and "cannot be ruled out" in missing.description
    other = S(99.0, n_items=20)
    assert comparable(S(50.0), other) == (False, "n_items differs (20 before, 10 now)")
    assert not regression_gate("g", S(50.0), other, tolerance=0.05, mode="relative", previous_checkpoint="s").passed


def test_currency_and_decide():
    assert currency_gate("c", S(1.0, checkpoint={"revision": "abc"}), "abc").passed
    assert not currency_gate("c", S(1.0, checkpoint={"revision": "abc"}), "def").passed
    gates = [target_gate("a", S(90.0), 84), target_gate("b", S(10.0), 84)]
    promote, failed = decide(gates)
    assert not promote and [g.name for g in failed] == ["b"]


def test_a_report_not_computed_yet_is_pending_not_failed():
    from surrogate_dagster.evals.gates import tally, tally_line

    pending = [target_gate("t", None, 84), currency_gate("c", None, "abc"),
               regression_gate("r", None, S(50.0), tolerance=0.05, mode="relative", previous_checkpoint="s1"),
               regression_gate("p", S(50.0), None, tolerance=0.05, mode="relative", previous_checkpoint="s1")]
    assert all(g.pending and not g.passed for g in pending)
    assert all(g.description.startswith("pending:") for g in pending)
    assert target_gate("t", None, None).passed and not target_gate("t", None, None).pending  # no target: informative
    # an unavailable report ran and was not a pass: failed, not pending
    unavail = target_gate("u", S(None, status="unavailable", reason="x"), 25)
    assert not unavail.passed and not unavail.pending
    gates = pending + [unavail, target_gate("ok", S(90.0), 84)]
    assert tally(gates) == {"passed": 1, "failed": 1, "pending": 4, "informative": 0}
    assert tally_line(gates) == "1 failed, 4 pending (not run yet), 1 passed of 6 gates"
    assert tally_line(gates[-2:]) == "1 failed, 1 passed of 2 gates"
    assert decide(pending)[0] is False  # nothing is promoted on a report that was never computed


def test_a_pending_gate_is_never_an_error_check():
    from dagster import AssetCheckSeverity

    from surrogate_dagster.evals.checks import gate_result

    waiting = regression_gate("r", S(50.0), None, tolerance=0.05, mode="relative", previous_checkpoint="s1")
    res = gate_result("no_regression", waiting, error=True, bench="bfcl")
    assert not res.passed and res.severity == AssetCheckSeverity.WARN
    failed = gate_result("no_regression", regression_gate("r", S(10.0), S(50.0), tolerance=0.05, mode="relative",
                                                          previous_checkpoint="s1"), error=True, bench="bfcl")
    assert failed.severity == AssetCheckSeverity.ERROR
    # numbers per benchmark, text as is
    assert failed.metadata["bfcl/previous_score"].value == 50.0 and failed.metadata["mode"].text == "relative"
