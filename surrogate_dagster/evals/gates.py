"""The gates, as pure functions of stored report summaries (Dagster-free).

- target gate: ``score >= threshold`` (runbook targets). A benchmark that did not run
  (``status: unavailable``) fails a gate that has a target: not evaluated is not a pass. An
  informative threshold (config.gating) makes a non-blocking gate: recorded and shown, never
  deciding a release or the smoke gate, and counted apart (``informative``) in the tallies.
- regression gate (runbook risk register: "rollback if regression > 5%"): a Tier-1 score more
  than ``tolerance`` below the previous checkpoint's is an ERROR that blocks promotion. Reports are
  compared only when they ran the same variant, version and item count; otherwise the gate fails
  and says to re-run the earlier checkpoint.
- currency: a report counts only for the checkpoint revision it was computed on.
A gate whose report does not exist yet is ``pending``: it does not pass (nothing is promoted on a
report that was never computed), and the summaries (``tally``) count it apart from the failures, so a
benchmark still waiting for its run never reads as a benchmark that missed its target.
The asset checks and the release asset call the same functions, so the release re-checks the
gates itself (Dagster's blocking checks stop downstream assets only within one run, PITFALLS).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Gate:
    name: str  # e.g. "stage2_5_checkpoint/humaneval_plus: meets_target"
    passed: bool
    description: str
    blocking: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)
    pending: bool = False  # its report (or the previous checkpoint's) has not been computed yet

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_gate(name: str, summary: dict | None, threshold: float | None, source: str = "",
                blocking: bool = True) -> Gate:
    """score >= threshold; unavailable or missing reports fail when there is a threshold."""
    meta = {"threshold": threshold, "threshold_source": source, "gating": blocking}
    gate = _target_gate(name, summary, threshold, blocking, meta)
    if not blocking and threshold is not None:
        gate.description = f"informative (not gating): {gate.description}"
    return gate


def _target_gate(name: str, summary: dict | None, threshold: float | None, blocking: bool, meta: dict) -> Gate:
    if summary is None:
        if threshold is None:
            return Gate(name, True, "no target; not run yet", blocking, meta)
        return Gate(name, False, "pending: not run yet", blocking, meta, pending=True)
    meta.update({"score": summary.get("score"), "variant": summary.get("variant"), "status": summary.get("status")})
    if summary.get("status") != "ok":
        why = summary.get("reason") or "not evaluated"
        if threshold is None:
            return Gate(name, True, f"no target; not evaluated: {why}", blocking, meta)
        return Gate(name, False, f"not evaluated ({why}): not a pass", blocking, meta)
    if threshold is None:
        return Gate(name, True, f"no target set; score {summary['score']}", blocking, meta)
    ok = summary["score"] is not None and summary["score"] >= threshold
    return Gate(name, ok, f"score {summary['score']} {'>=' if ok else '<'} target {threshold} "
                          f"({summary.get('score_name', '')})", blocking, meta)


def comparable(a: dict, b: dict) -> tuple[bool, str]:
    for k in ("variant", "version", "n_items"):
        if a.get(k) != b.get(k):
            return False, f"{k} differs ({b.get(k)!r} before, {a.get(k)!r} now)"
    return True, ""


def regression_floor(previous: float, tolerance: float, mode: str) -> float:
    return previous * (1 - tolerance) if mode == "relative" else previous - 100 * tolerance


def regression_gate(name: str, current: dict | None, previous: dict | None, *, tolerance: float, mode: str,
                    previous_checkpoint: str | None) -> Gate:
    """Fails when the current score is more than ``tolerance`` below the previous checkpoint's."""
    meta: dict[str, Any] = {"tolerance": tolerance, "mode": mode, "previous_checkpoint": previous_checkpoint}
    if current is None:
        return Gate(name, False, "pending: not run yet", True, meta, pending=True)
    if current.get("status") != "ok":
        return Gate(name, False, "no usable report for this checkpoint", True, meta)
    if previous_checkpoint is None:
        return Gate(name, True, "first checkpoint: nothing to regress from", True, meta)
    if previous is None:
        return Gate(name, False, f"pending: {previous_checkpoint} has no report for this benchmark yet: a "
                                 "regression cannot be ruled out", True, meta, pending=True)
    if previous.get("status") != "ok":
        return Gate(name, False, f"{previous_checkpoint} has no usable report for this benchmark: a regression "
                                 "cannot be ruled out", True, meta)
    ok, why = comparable(current, previous)
    meta.update({"previous_score": previous.get("score"), "score": current.get("score")})
    if not ok:
        return Gate(name, False, f"not comparable with {previous_checkpoint}: {why}; re-run its report", True, meta)
    floor = regression_floor(previous["score"], tolerance, mode)
    meta["floor"] = round(floor, 4)
    passed = current["score"] >= floor
    verb = "within" if passed else "MORE than"
    return Gate(name, passed, f"{current['score']} vs {previous['score']} at {previous_checkpoint}: {verb} "
                              f"{tolerance:.0%} ({mode}) below", True, meta)


def currency_gate(name: str, summary: dict | None, revision: str | None) -> Gate:
    """The report was computed on the checkpoint revision that is current now."""
    if summary is None:
        return Gate(name, False, "pending: not run yet", True, {"revision": revision}, pending=True)
    rev = (summary.get("checkpoint") or {}).get("revision")
    ok = revision is not None and rev == revision
    return Gate(name, ok, "report is for the current checkpoint" if ok else
                f"stale report: computed on revision {rev!r}, checkpoint is now {revision!r}", True,
                {"report_revision": rev, "checkpoint_revision": revision})


def blocking_not_passed(gates: list[Gate]) -> list[Gate]:
    """The gates that stop a release or the smoke gate: blocking and not passed (failed or pending)."""
    return [g for g in gates if g.blocking and not g.passed]


def decide(gates: list[Gate]) -> tuple[bool, list[Gate]]:
    """(promote?, the blocking gates that did not pass: failed or pending)."""
    failed = blocking_not_passed(gates)
    return not failed, failed


def tally(gates: list[Gate]) -> dict[str, int]:
    """How many gates passed, failed, are pending (their report not computed yet) and are informative
    misses (a non-blocking gate that did not pass: never a failure)."""
    informative = sum(1 for g in gates if not g.passed and not g.blocking)
    pending = sum(1 for g in gates if not g.passed and g.blocking and g.pending)
    failed = sum(1 for g in gates if not g.passed and g.blocking and not g.pending)
    return {"passed": len(gates) - failed - pending - informative, "failed": failed, "pending": pending,
            "informative": informative}


def tally_line(gates: list[Gate]) -> str:
    """One line such as "2 failed, 3 pending (not run yet), 13 passed of 18 gates"; pending gates and
    informative misses are never counted among the failures."""
    t = tally(gates)
    parts = [f"{t['failed']} failed"] + ([f"{t['pending']} pending (not run yet)"] if t["pending"] else []) + (
        [f"{t['informative']} informative not met (not gating)"] if t["informative"] else [])
    return ", ".join(parts) + f", {t['passed']} passed of {len(gates)} gates"
