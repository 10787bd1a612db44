"""The gates, as pure functions of stored report summaries (Dagster-free).

- target gate: ``score >= threshold`` (runbook targets). A benchmark that did not run
  (``status: unavailable``) fails a gate that has a target: not evaluated is not a pass.
- regression gate (runbook risk register: "rollback if regression > 5%"): a Tier-1 score more
  than ``tolerance`` below the previous checkpoint's is an ERROR that blocks promotion. Reports are
  compared only when they ran the same variant, version and item count; otherwise the gate fails
  and says to re-run the earlier checkpoint.
- currency: a report counts only for the checkpoint revision it was computed on.
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_gate(name: str, summary: dict | None, threshold: float | None, source: str = "",
                blocking: bool = True) -> Gate:
    """score >= threshold; unavailable or missing reports fail when there is a threshold."""
    meta = {"threshold": threshold, "threshold_source": source}
    if summary is None:
        return Gate(name, threshold is None, "no report" + ("" if threshold is None else ": cannot meet the target"),
                    blocking, meta)
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
    if current is None or current.get("status") != "ok":
        return Gate(name, False, "no usable report for this checkpoint", True, meta)
    if previous_checkpoint is None:
        return Gate(name, True, "first checkpoint: nothing to regress from", True, meta)
    if previous is None or previous.get("status") != "ok":
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
        return Gate(name, False, "no report", True, {"revision": revision})
    rev = (summary.get("checkpoint") or {}).get("revision")
    ok = revision is not None and rev == revision
    return Gate(name, ok, "report is for the current checkpoint" if ok else
                f"stale report: computed on revision {rev!r}, checkpoint is now {revision!r}", True,
                {"report_revision": rev, "checkpoint_revision": revision})


def decide(gates: list[Gate]) -> tuple[bool, list[Gate]]:
    """(promote?, the blocking gates that failed)."""
    failed = [g for g in gates if g.blocking and not g.passed]
    return not failed, failed
