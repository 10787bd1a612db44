"""The Day-14 verdict, re-read by every step it gates.

The smoke gate (evals, `catalog.keys.SMOKE_GATE`) carries a blocking check, but a blocking check
only stops what runs after it in the same run: stage 2 or the exec-graded sampling materialized in
a run of its own would start past a failed gate. So each gated step reads the gate's latest
verdict from the instance before it spends anything, and refuses to start unless the gate

- has been materialized after the latest materialization of the checkpoint it judges, and
- passed, or failed with the profile's recorded override (`phases.evals.smoke_gate: report_only`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import AssetKey, DagsterInstance, Failure

from ..catalog.keys import AGENT_CHECKPOINT, SMOKE_GATE


@dataclass(frozen=True)
class SmokeVerdict:
    proceed: bool
    reason: str


def smoke_verdict(instance: DagsterInstance, gate: str = SMOKE_GATE, judged: str = AGENT_CHECKPOINT) -> SmokeVerdict:
    """Whether a step gated by `gate` may start now, and why."""
    ev = instance.get_latest_materialization_event(AssetKey(gate))
    if ev is None or ev.asset_materialization is None:
        return SmokeVerdict(False, f"{gate} has never run: the Day-14 smoke tests of {judged} have no verdict")
    judged_ev = instance.get_latest_materialization_event(AssetKey(judged))
    if judged_ev is not None and judged_ev.timestamp > ev.timestamp:
        return SmokeVerdict(False, f"{judged} was materialized after {gate}'s last verdict: re-run {gate}")
    meta = {k: getattr(v, "value", v) for k, v in ev.asset_materialization.metadata.items()}
    if meta.get("smoke_tests_passed") is True:
        return SmokeVerdict(True, f"{gate} passed")
    if meta.get("overridden_by_profile") is True:
        return SmokeVerdict(True, f"{gate} failed, overridden by the profile: {meta.get('override_reason') or '?'}")
    failed = meta.get("failed_gates", "?")
    return SmokeVerdict(False, f"{gate} failed ({failed} gate(s)) and the profile enforces it (runbook Day 14)")


def require_smoke_gate(context, step: str) -> None:
    """Raise a non-retried Failure naming the reason unless the Day-14 verdict lets `step` start."""
    verdict = smoke_verdict(context.instance)
    if not verdict.proceed:
        raise Failure(description=f"{step} does not start: {verdict.reason}", allow_retries=False)
    context.log.info(f"{step}: Day-14 verdict: {verdict.reason}")
