"""Gates as Dagster asset checks.

Recorded with every report (``check_specs`` of the report assets, computed in the same
materialization, so every run that evaluates a checkpoint records them however it was launched):

- ``meets_target``: the runbook's target from assets/evals.yaml (or the profile's labelled local
  override); ERROR on the release checkpoint and on Tier 2, WARN on earlier checkpoints (their
  targets are informative).
- ``no_regression``: more than the tolerance (5%, relative) below the previous checkpoint: ERROR.
These are not blocking: a failing report still materializes, later checkpoints are still evaluated,
and the release asset (which re-checks every gate from the stored reports) explains what failed.

Blocking, in ``EVAL_CHECKS``: ``release_gate`` on the release checkpoint's Tier-1 report asset and on
the Tier-2 report asset, over all their benchmarks (from the stored reports). In any run that
includes them (a UI "materialize" of those reports together with ``mvp_release``), a failing gate
stops the release in that same run.
Also ``reports_current`` (WARN) per checkpoint report asset: every benchmark has a report computed
on the checkpoint's current revision (a retrained checkpoint makes its reports stale).
"""

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
    asset_check,
)

from ..resources import ObjectStoreResource
from .config import TIER1, TIER2, EvalCatalog
from .gates import Gate
from .resources import EvalSettings


def gate_specs(asset_name: str, with_regression: bool = True) -> list[AssetCheckSpec]:
    specs = [AssetCheckSpec("meets_target", asset=asset_name,
                            description="score >= the runbook target (assets/evals.yaml)")]
    if with_regression:
        specs.append(AssetCheckSpec("no_regression", asset=asset_name,
                                    description="not more than the tolerance below the previous checkpoint"))
    return specs


def gate_result(check_name: str, gate: Gate, error: bool) -> AssetCheckResult:
    """A gate as a check result; ``error`` picks ERROR (gating) or WARN (informative)."""
    meta = {k: v for k, v in gate.metadata.items() if v is not None and isinstance(v, (int, float, str, bool))}
    return AssetCheckResult(check_name=check_name, passed=gate.passed,
                            severity=AssetCheckSeverity.ERROR if error else AssetCheckSeverity.WARN,
                            description=gate.description[:1000], metadata=meta)


def _reports_current_check(asset_name: str, checkpoint: str, benches: tuple[str, ...]):
    @asset_check(asset=AssetKey(asset_name), name="reports_current",
                 description=f"every benchmark has a report on the current revision of {checkpoint}")
    def _check(context: AssetCheckExecutionContext, object_store: ObjectStoreResource,
               evals: EvalSettings) -> AssetCheckResult:
        from .checkpoints import checkpoint_revision
        from .gates import currency_gate
        from .reports import read_summary
        from .resources import dir_revision

        store = object_store.get_store()
        rev = dir_revision(evals.model_dirs[checkpoint]) if checkpoint in evals.model_dirs \
            else checkpoint_revision(store, checkpoint)
        gates = [currency_gate(b, read_summary(store, checkpoint, b), rev) for b in benches]
        bad = [f"{g.name}: {g.description}" for g in gates if not g.passed]
        return AssetCheckResult(passed=not bad, severity=AssetCheckSeverity.WARN,
                                description="all reports current" if not bad else f"{len(bad)} stale or missing",
                                metadata={"checkpoint_revision": rev or "never trained",
                                          "problems": MetadataValue.md("\n".join(f"- {b}" for b in bad) or "none")})

    return _check


def _release_gate_check(catalog: EvalCatalog, asset_name: str, benches: tuple[str, ...], tier1: bool):
    rel = catalog.release.checkpoint
    idx = catalog.checkpoints.index(rel)
    previous = catalog.checkpoints[idx - 1] if tier1 and idx else None

    @asset_check(asset=AssetKey(asset_name), name="release_gate", blocking=True,
                 description=f"blocking: on every benchmark of this asset, {rel} meets the target"
                             f"{', does not regress' if tier1 else ''} and has a report on its current revision")
    def _check(context: AssetCheckExecutionContext, object_store: ObjectStoreResource,
               evals: EvalSettings) -> AssetCheckResult:
        from .checkpoints import checkpoint_revision
        from .config import threshold
        from .gates import currency_gate, regression_gate, target_gate
        from .reports import read_summary
        from .resources import dir_revision

        store = object_store.get_store()
        rev = dir_revision(evals.model_dirs[rel]) if rel in evals.model_dirs else checkpoint_revision(store, rel)
        gates = []
        for bench in benches:
            summary = read_summary(store, rel, bench)
            thr, src = threshold(catalog, evals.profile(), bench)
            gates += [currency_gate(f"{bench}: current", summary, rev),
                      target_gate(f"{bench}: meets_target", summary, thr, src)]
            if tier1:
                prev = read_summary(store, previous, bench) if previous else None
                gates.append(regression_gate(f"{bench}: no_regression", summary, prev,
                                             tolerance=catalog.regression.tolerance, mode=catalog.regression.mode,
                                             previous_checkpoint=previous))
        failed = [g for g in gates if not g.passed]
        return AssetCheckResult(passed=not failed, severity=AssetCheckSeverity.ERROR,
                                description=(f"{len(failed)} of {len(gates)} gates failed: " + "; ".join(
                                    f"{g.name} ({g.description})" for g in failed))[:2000] if failed
                                else f"all {len(gates)} gates pass",
                                metadata={"failed": MetadataValue.md("\n".join(f"- {g.name}: {g.description}"
                                                                               for g in failed) or "none")})

    return _check


def build_checks(catalog: EvalCatalog, report_asset_name) -> list:
    checks = [_reports_current_check(report_asset_name(c), c, TIER1) for c in catalog.checkpoints]
    checks.append(_reports_current_check("tier2_eval_report", catalog.release.checkpoint, TIER2))
    checks.append(_release_gate_check(catalog, report_asset_name(catalog.release.checkpoint), TIER1, True))
    checks.append(_release_gate_check(catalog, "tier2_eval_report", TIER2, False))
    return checks
