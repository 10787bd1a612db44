"""Sensors: re-curate sources whose HF revision changed; explain failed eval gates.

Re-curation is declarative: every materializable asset of the sources and curation groups carries
`RECURATION_CONDITION` (Dagster's `AutomationCondition.eager()`: run when a parent was updated
since the last evaluation, or is about to be in the same evaluation, unless a parent is missing
or in progress), applied in `with_recuration_condition`. `hf_revisions` is the root: observing it
records each source's pin as that partition's data version, and a partition counts as updated
only when its data version changed, so moving one pin requests that partition of `source_rows`
and, in the same evaluation, the same partition of every per-source step below it; the
cross-source steps and the mixtures follow on the next evaluation, once the per-source steps
have materialized (Dagster does not put steps of different partitionings into one run). A
re-observation that finds every pin unchanged requests nothing. `recuration_sensor` is the
automation condition sensor that evaluates these conditions (every minute); it is STOPPED
unless the profile turns scheduled re-curation on (schedules.recuration_enabled), since a
re-curation re-pushes the stage datasets.

`revision_backfill_sensor` is the explicit alternative for a person or a script that wants the
plan spelled out: one public `RunRequest` per changed source (that partition of every
sources/curation asset downstream of `source_rows`, plus the cross-source steps and mixtures),
from the observed vs mirrored revisions in the event log, with a cursor so an in-flight request
is not made twice. The code location does not register it.

`regression_report_sensor` watches the latest evaluation of every check on an evals-group asset
whose name says it is a gate (GATE_PATTERN); a failed evaluation launches `regression_report_job`
for the checkpoint the check names (metadata `checkpoint` / `baseline_checkpoint`, as
`lineage_report.report_link_metadata` writes them) or, failing that, the eval asset's nearest
training-group ancestor. It compares with what `lineage_report.comparison_for` picks (the gate's
baseline, the checkpoint's previous materialization, or on a first run the nearest earlier model
that exists) and requests nothing, with the reason in its log, when nothing exists to compare
with; gates that judge the same checkpoint against the same model share one report run.
"""


import json
import re

from dagster import (
    AssetSelection,
    AssetsDefinition,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    map_asset_specs,
    sensor,
)

from .lineage_report import REPORT_ASSET, comparison_for, regression_report_job
from ..runtime.planning import describe, recuration_plan
from ..sources.revisions import SOURCE_ROWS, mirrored_revisions, observed_revisions

RECURATION_GROUPS = ("sources", "curation")
GATE_PATTERN = re.compile(r"(gate|regress)", re.IGNORECASE)


def revision_changes(instance, requested: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{source: (mirrored, observed)} for sources whose observed revision is new and not yet requested."""
    observed = observed_revisions(instance)
    mirrored = mirrored_revisions(instance, list(observed))
    return {p: (mirrored[p], rev) for p, (rev, _) in observed.items()
            if p in mirrored and mirrored[p] != rev and requested.get(p) != rev}


def recuration_requests(plan, changes: dict[str, tuple[str, str]], tags: dict[str, str]) -> list[RunRequest]:
    """One run per changed source: its partition of every planned partitioned asset, plus the
    planned unpartitioned (cross-source) assets."""
    shared = sorted((k for k, ps in plan.items() if None in ps), key=lambda k: k.to_user_string())
    out = []
    for source, (_, new) in sorted(changes.items()):
        keys = sorted((k for k, ps in plan.items() if source in ps), key=lambda k: k.to_user_string())
        out.append(RunRequest(run_key=f"recurate:{source}:{new}", partition_key=source,
                              asset_selection=keys + shared, tags={**tags, "surrogate/source": source}))
    return out


RECURATION_CONDITION = AutomationCondition.eager().with_label("recurate_when_parents_change")


def with_recuration_condition(assets: list) -> list:
    """`assets` with RECURATION_CONDITION on every asset of the re-curation groups (others unchanged)."""
    def add(spec):
        if spec.group_name in RECURATION_GROUPS:
            return spec.replace_attributes(automation_condition=RECURATION_CONDITION)
        return spec

    return [map_asset_specs(add, [a])[0] if isinstance(a, AssetsDefinition) and a.is_executable else a
            for a in assets]


def build_recuration_sensor(enabled: bool = False) -> AutomationConditionSensorDefinition:
    """The automation condition sensor of the re-curation groups, RUNNING by default only when
    `enabled` (schedules.recuration_enabled)."""
    status = DefaultSensorStatus.RUNNING if enabled else DefaultSensorStatus.STOPPED
    return AutomationConditionSensorDefinition(
        "recuration_sensor", target=AssetSelection.groups(*RECURATION_GROUPS), default_status=status,
        minimum_interval_seconds=60,
        description="Declarative re-curation: a source whose observed HF revision changed re-runs its "
                    "partition of the sources/curation chain, then the cross-source steps and mixtures")


def build_revision_backfill_sensor(enabled: bool = False):
    """The explicit re-curation sensor (one run per changed source), RUNNING by default only when `enabled`."""
    status = DefaultSensorStatus.RUNNING if enabled else DefaultSensorStatus.STOPPED

    @sensor(name="revision_backfill_sensor", minimum_interval_seconds=60, default_status=status,
            asset_selection=AssetSelection.groups(*RECURATION_GROUPS),
            description="Backfill the sources whose observed HF revision differs from the mirrored one, "
                        "then the cross-source steps and mixtures")
    def revision_backfill_sensor(context: SensorEvaluationContext):
        requested = json.loads(context.cursor) if context.cursor else {}
        changes = revision_changes(context.instance, requested)
        if not changes:
            return SkipReason("every observed HF revision is already mirrored (or requested)")
        graph = context.repository_def.asset_graph
        plan = recuration_plan(graph, changes, SOURCE_ROWS, RECURATION_GROUPS, instance=context.instance)
        context.log.info(f"re-curating {sorted(changes)}: {json.dumps(describe(plan))}")
        tags = {"surrogate/trigger": "hf_revision_changed", "surrogate/sources": ",".join(sorted(changes))}
        requested.update({p: new for p, (_, new) in changes.items()})
        return SensorResult(run_requests=recuration_requests(plan, changes, tags),
                            cursor=json.dumps(requested, sort_keys=True))

    return revision_backfill_sensor


recuration_sensor = build_recuration_sensor()
revision_backfill_sensor = build_revision_backfill_sensor()


def gate_check_keys(asset_graph, group: str = "evals"):
    """Checks on `group` assets whose names mark them as gates."""
    return sorted((k for k in asset_graph.asset_check_keys
                   if asset_graph.get(k.asset_key).group_name == group and GATE_PATTERN.search(k.name)),
                  key=lambda k: k.to_user_string())


def _nearest_ancestor(asset_graph, key, group: str):
    frontier, seen = [key], set()
    while frontier:
        nxt = []
        for k in frontier:
            for p in sorted(asset_graph.get(k).parent_keys, key=lambda x: x.to_user_string()):
                if p in seen or not asset_graph.has(p):
                    continue
                seen.add(p)
                if asset_graph.get(p).group_name == group:
                    return p
                nxt.append(p)
        frontier = nxt
    return None


@sensor(name="regression_report_sensor", job=regression_report_job, minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.RUNNING,
        description="When an eval gate fails, build the lineage report of the checkpoint it judged")
def regression_report_sensor(context: SensorEvaluationContext):
    graph = context.repository_def.asset_graph
    keys = gate_check_keys(graph)
    if not keys:
        return SkipReason("no gate checks on evals assets yet")
    seen = json.loads(context.cursor) if context.cursor else {}
    latest = context.instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    # Several gates judge one checkpoint (one per benchmark): one report per comparison.
    requests: dict[tuple[str, str], RunRequest] = {}
    for key, rec in sorted(latest.items(), key=lambda kv: kv[0].to_user_string()):
        ev = rec.event.asset_check_evaluation if rec.event and rec.event.dagster_event else None
        if ev is None or rec.id <= seen.get(key.to_user_string(), -1):
            continue
        seen[key.to_user_string()] = rec.id
        if ev.passed:
            continue
        meta = {k: getattr(v, "value", v) for k, v in (ev.metadata or {}).items()}
        ckpt = meta.get("checkpoint")
        if not ckpt:
            anc = _nearest_ancestor(graph, key.asset_key, "training")
            if anc is None:
                context.log.warning(f"{key.to_user_string()} failed but names no checkpoint and has no training ancestor")
                continue
            ckpt = anc.to_user_string()
        against, why = comparison_for(context.instance, ckpt, meta.get("baseline_checkpoint"))
        if against is None:
            context.log.info(f"{key.to_user_string()} failed; no lineage report: {why}")
            continue
        cfg = {"checkpoint_b": f"{ckpt}@latest", "checkpoint_a": against, "comparison": why}
        if (ckpt, against) in requests:
            continue
        requests[(ckpt, against)] = RunRequest(
            run_key=f"{key.to_user_string()}:{rec.id}", run_config={"ops": {REPORT_ASSET: {"config": cfg}}},
            tags={"surrogate/trigger": "gate_failed", "surrogate/check": key.to_user_string(),
                  "surrogate/compared_with": why[:200]})
    return SensorResult(run_requests=list(requests.values()), cursor=json.dumps(seen, sort_keys=True))
