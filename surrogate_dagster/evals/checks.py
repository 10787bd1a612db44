"""Gates as Dagster asset checks.

Recorded with every report (``check_specs`` of the report assets, computed in the same
materialization, so every run that evaluates a checkpoint records them however it was launched).
They are partitioned like their report asset (one partition per benchmark): the Checks tab shows each
benchmark's latest verdict, not the verdict of whichever benchmark ran last, and each numeric figure
is named per benchmark (``humaneval_plus/score``), so a plot of a check's history never mixes
benchmarks.

- ``meets_target``: the runbook's target from assets/evals.yaml (or the profile's labelled local
  override); ERROR on the release checkpoint and on Tier 2, WARN on earlier checkpoints (their
  targets are informative).
- ``no_regression``: more than the tolerance (5%, relative) below the previous checkpoint: ERROR.
These are not blocking: a failing report still materializes, later checkpoints are still evaluated,
and the release asset (which re-checks every gate from the stored reports) explains what failed.

Blocking, in ``EVAL_CHECKS``: ``release_gate`` on the release checkpoint's Tier-1 report asset and on
the Tier-2 report asset, partitioned the same way: each run judges the benchmark it computed (its
report current, its target met and, on Tier 1, no regression), from the stored reports; a gate whose
input is not computed yet (the previous checkpoint's report) is pending: not passed, at WARN. In any run
that includes them (a UI "materialize" of those reports together with ``mvp_release``), a failing
gate stops the release in that same run. The verdict over every benchmark is ``mvp_release``'s
``all_gates_passed``, evaluated once, when the release runs after all reports; a benchmark not run
yet is counted as pending there, never as failed.
Also ``reports_current`` (WARN) per checkpoint report asset: no benchmark's report was computed on an
older revision of the checkpoint (a retrained checkpoint makes its reports stale); benchmarks not run
yet are listed as pending.

The smoke gate (runbook Day 14, "If smoke tests pass -> proceed to Stage 2"): the asset named by
``smoke_gate.asset`` in assets/evals.yaml carries the blocking check ``smoke_tests_pass`` over the
smoke checkpoint's Tier-1 reports: every target met, no regression from the baseline (Day 13,
"Don't regress base"), every report current. The assets that wait for it depend on that asset. With
``phases.evals.smoke_gate: enforce`` a failure is an ERROR and stops them in the same run; with
``report_only`` it is still recorded as failed, at WARN (which does not block), and the description
and metadata say that the profile overrides the gate and why.
"""

import warnings

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
    PartitionsDefinition,
    PreviewWarning,
    asset_check,
)

from ..resources import ObjectStoreResource
from .config import TIER1, TIER2, EvalCatalog, EvalsProfile
from .gates import Gate, blocking_not_passed, tally, tally_line
from .resources import EvalSettings


def baseline_revision(store, base_source: str) -> str | None:
    """The base model's data version: the pinned Hub revision, or the local build's (None if not built)."""
    from ..training.config import load_training_catalog
    from ..training.refs import base_model_resolution

    try:
        return base_model_resolution(store, load_training_catalog(), base_source).data_version
    except FileNotFoundError:
        return None


def current_revision(store, evals: EvalSettings, catalog: EvalCatalog, name: str) -> str | None:
    """The revision a report on ``name`` (a checkpoint or the baseline) must have been computed on."""
    from .checkpoints import checkpoint_revision
    from .resources import dir_revision

    if name in evals.model_dirs:
        return dir_revision(evals.model_dirs[name])
    if name == catalog.baseline:
        return baseline_revision(store, evals.base_source)
    return checkpoint_revision(store, name)


def partitioned_spec(name: str, asset_name: str, partitions_def: PartitionsDefinition, **kw) -> AssetCheckSpec:
    """A check spec partitioned like its asset. Partitioned checks are a preview feature of the
    pinned Dagster; its warning is silenced here only, where the project opts in."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(name, asset=asset_name, partitions_def=partitions_def, **kw)


def gate_specs(asset_name: str, partitions_def: PartitionsDefinition, with_regression: bool = True) -> list[AssetCheckSpec]:
    specs = [partitioned_spec("meets_target", asset_name, partitions_def,
                              description="per benchmark (partition): score >= the runbook target (assets/evals.yaml)")]
    if with_regression:
        specs.append(partitioned_spec("no_regression", asset_name, partitions_def,
                                      description="per benchmark (partition): not more than the tolerance below the "
                                                  "previous checkpoint (the base model for the first)"))
    return specs


def gate_metadata(gate: Gate, bench: str) -> dict:
    """A gate's metadata for a check result: text as is, numbers under ``<bench>/<name>`` so each
    benchmark's figures trend on their own."""
    meta: dict = {"benchmark": bench}
    for k, v in gate.metadata.items():
        if v is None or not isinstance(v, (int, float, str, bool)):
            continue
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        meta[f"{bench}/{k}" if numeric else k] = MetadataValue.float(float(v)) if numeric else v
    return meta


def gate_result(check_name: str, gate: Gate, error: bool, bench: str) -> AssetCheckResult:
    """A gate as a check result; ``error`` picks ERROR (gating) or WARN (informative). A pending gate
    (the report it compares with is not computed yet) and a non-blocking gate (an informative
    threshold) are never an ERROR."""
    return AssetCheckResult(check_name=check_name, passed=gate.passed,
                            severity=AssetCheckSeverity.ERROR if error and gate.blocking and not gate.pending
                            else AssetCheckSeverity.WARN,
                            description=gate.description[:1000], metadata=gate_metadata(gate, bench))


def _reports_current_check(catalog: EvalCatalog, asset_name: str, checkpoint: str, benches: tuple[str, ...]):
    @asset_check(asset=AssetKey(asset_name), name="reports_current",
                 description=f"no benchmark's report is for an older revision of {checkpoint} "
                             "(benchmarks not run yet are listed as pending)")
    def _check(context: AssetCheckExecutionContext, object_store: ObjectStoreResource,
               evals: EvalSettings) -> AssetCheckResult:
        from .gates import currency_gate
        from .reports import read_summary

        store = object_store.get_store()
        rev = current_revision(store, evals, catalog, checkpoint)
        gates = [currency_gate(b, read_summary(store, checkpoint, b), rev) for b in benches]
        stale = [f"{g.name}: {g.description}" for g in gates if not g.passed and not g.pending]
        pending = [g.name for g in gates if g.pending]
        desc = f"{len(stale)} stale" if stale else "no stale report"
        if pending:
            desc += f"; {len(pending)} pending (not run yet): {', '.join(pending)}"
        return AssetCheckResult(passed=not stale, severity=AssetCheckSeverity.WARN, description=desc,
                                metadata={"checkpoint_revision": rev or "never trained",
                                          "stale": MetadataValue.int(len(stale)),
                                          "pending": MetadataValue.int(len(pending)),
                                          "problems": MetadataValue.md("\n".join(f"- {b}" for b in stale) or "none")})

    return _check


def release_benchmark_gates(catalog: EvalCatalog, prof: EvalsProfile, store, bench: str, revision: str | None,
                            tier1: bool) -> list[Gate]:
    """The release checkpoint's gates on one benchmark, from the stored reports."""
    from .config import gating, threshold
    from .gates import currency_gate, regression_gate, target_gate
    from .reports import read_summary

    rel = catalog.release.checkpoint
    summary = read_summary(store, rel, bench)
    thr, src = threshold(catalog, prof, bench)
    gates = [currency_gate(f"{bench}: current", summary, revision),
             target_gate(f"{bench}: meets_target", summary, thr, src, blocking=gating(catalog, prof, bench))]
    if tier1:
        previous = catalog.previous(rel)
        prev = read_summary(store, previous, bench) if previous else None
        gates.append(regression_gate(f"{bench}: no_regression", summary, prev,
                                     tolerance=catalog.regression.tolerance, mode=catalog.regression.mode,
                                     previous_checkpoint=previous))
    return gates


def _release_gate_check(catalog: EvalCatalog, asset_name: str, partitions_def: PartitionsDefinition, tier1: bool):
    rel = catalog.release.checkpoint

    with warnings.catch_warnings():  # partitioned checks: see partitioned_spec
        warnings.simplefilter("ignore", PreviewWarning)

        @asset_check(asset=AssetKey(asset_name), name="release_gate", blocking=True, partitions_def=partitions_def,
                     description=f"blocking, per benchmark (partition): {rel} meets the target"
                                 f"{', does not regress' if tier1 else ''} and has a report on its current revision")
        def _check(context: AssetCheckExecutionContext, object_store: ObjectStoreResource,
                   evals: EvalSettings) -> AssetCheckResult:
            bench = context.partition_key
            store = object_store.get_store()
            rev = current_revision(store, evals, catalog, rel)
            gates = release_benchmark_gates(catalog, evals.profile(), store, bench, rev, tier1)
            bad = blocking_not_passed(gates)  # an informative target never blocks
            t = tally(gates)
            desc = (f"{bench}: " + "; ".join(f"{g.name.split(': ', 1)[1]} ({g.description})" for g in bad))[:2000] \
                if bad else f"{bench}: all {len(gates)} gates pass"
            # Only a failure blocks (ERROR); a gate waiting on a report not computed yet is pending (WARN):
            # it does not pass, and the release, which re-checks every gate, promotes nothing on it.
            return AssetCheckResult(passed=not bad, description=desc,
                                    severity=AssetCheckSeverity.ERROR if t["failed"] or not bad else AssetCheckSeverity.WARN,
                                    metadata={"benchmark": bench, "checkpoint": rel,
                                              "failed_gates": MetadataValue.int(t["failed"]),
                                              "pending_gates": MetadataValue.int(t["pending"]),
                                              "gates": MetadataValue.md("\n".join(
                                                  f"- `{g.name}`: {'pass' if g.passed else 'PENDING' if g.pending else 'FAIL'}"
                                                  f" ({g.description})" for g in gates))})

    return _check


SMOKE_CHECK = "smoke_tests_pass"


def smoke_gate_spec(catalog: EvalCatalog, gated: list[str]) -> AssetCheckSpec:
    sg = catalog.smoke_gate
    return AssetCheckSpec(
        SMOKE_CHECK, asset=sg.asset, blocking=True,
        description=f"blocking: {', '.join(gated)} wait for {sg.checkpoint}'s Tier-1 smoke tests (runbook Day 14: "
                    f"every target met, no regression from {catalog.baseline}, reports current); a profile with "
                    "phases.evals.smoke_gate: report_only records a failure as overridden instead")


def smoke_gates(catalog: EvalCatalog, prof: EvalsProfile, summaries: dict[tuple[str, str], dict],
                revision: str | None) -> list[Gate]:
    """The Day-14 gates of the smoke checkpoint, from its stored reports and the baseline's."""
    from .config import gating, threshold
    from .gates import currency_gate, regression_gate, target_gate

    ck, base = catalog.smoke_gate.checkpoint, catalog.baseline
    gates: list[Gate] = []
    for b in TIER1:
        cur = summaries.get((ck, b))
        thr, src = threshold(catalog, prof, b)
        gates += [currency_gate(f"{ck}/{b}: current", cur, revision),
                  target_gate(f"{ck}/{b}: meets_target", cur, thr, src, blocking=gating(catalog, prof, b)),
                  regression_gate(f"{ck}/{b}: no_regression_from_{base}", cur, summaries.get((base, b)),
                                  tolerance=catalog.regression.tolerance, mode=catalog.regression.mode,
                                  previous_checkpoint=base)]
    return gates


def smoke_gate_result(gates: list[Gate], mode: str, reason: str | None) -> tuple[AssetCheckResult, dict]:
    """The blocking check's result and the gate asset's metadata. A failure is never reported as a
    pass: ``report_only`` keeps ``passed=False`` and only lowers the severity to WARN (not blocking)."""
    failed = blocking_not_passed(gates)  # an informative target is listed, never failing the gate
    enforce = mode == "enforce"
    listing = "\n".join(f"- `{g.name}`: {g.description}" for g in failed) or "none"
    counts = tally(gates)
    if not failed:
        desc = f"every gating smoke gate passes ({tally_line(gates)}): stage 2 may proceed"
    elif enforce:
        desc = f"BLOCKED (enforced): smoke gates {tally_line(gates)}: " + "; ".join(g.name for g in failed)
    else:
        desc = (f"FAILED, OVERRIDDEN by the profile (phases.evals.smoke_gate: report_only: {reason}): "
                f"smoke gates {tally_line(gates)}; downstream proceeds: " + "; ".join(g.name for g in failed))
    meta = {"smoke_gate_mode": mode, "smoke_tests_passed": not failed,
            "overridden_by_profile": bool(failed) and not enforce,
            "override_reason": (reason or "") if not enforce else "",
            "gates": len(gates), "failed_gates": counts["failed"], "pending_gates": counts["pending"],
            "failed": MetadataValue.md(listing)}
    check = AssetCheckResult(check_name=SMOKE_CHECK, passed=not failed,
                             severity=AssetCheckSeverity.ERROR if enforce else AssetCheckSeverity.WARN,
                             description=desc[:2000], metadata=meta)
    return check, meta


def build_checks(catalog: EvalCatalog, report_asset_name, tier1_partitions: PartitionsDefinition,
                 tier2_partitions: PartitionsDefinition) -> list:
    checks = [_reports_current_check(catalog, report_asset_name(c), c, TIER1) for c in catalog.evaluated]
    checks.append(_reports_current_check(catalog, "tier2_eval_report", catalog.release.checkpoint, TIER2))
    checks.append(_release_gate_check(catalog, report_asset_name(catalog.release.checkpoint), tier1_partitions, True))
    checks.append(_release_gate_check(catalog, "tier2_eval_report", tier2_partitions, False))
    return checks
