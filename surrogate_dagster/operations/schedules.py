"""Schedules: weekly re-curation (observe every source's HF revision) and monthly Tier-2 evals.

The weekly schedule only *observes* `hf_revisions` (22 cheap hub calls); a source whose pin
moved gets a new data version, and the automation conditions on the sources/curation assets
(evaluated by `recuration_sensor`, sensors.py) re-run that source's chain, then the cross-source
steps and the mixtures. Observing from the UI ("Observe sources") starts the same re-curation at
any time.

Re-curation re-pushes the stage datasets, so it never starts by itself: the schedule (and the
sensor, sensors.py) are STOPPED unless the profile sets `phases.ops.scheduled_recuration: true`
(`recuration_enabled`). Stopped, they still show in the UI and can be started there by hand.

Tier-2 eval assets are the ones tagged `eval_tier: "2"`; the monthly job picks up whatever assets
carry the tag, and skips itself (with a reason) while none do.
"""


from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
)

from ..sources.revisions import HF_REVISIONS

TIER2_TAG = ("eval_tier", "2")
TIER2_SELECTION = AssetSelection.tag(*TIER2_TAG)

observe_hf_revisions_job = define_asset_job(
    "observe_hf_revisions", selection=AssetSelection.assets(HF_REVISIONS),
    description="Ask the hub for every source's current revision (the partitions' data versions)")
tier2_eval_job = define_asset_job(
    "tier2_evals", selection=TIER2_SELECTION, description="Tier-2 eval reports (assets tagged eval_tier=2)")


RECURATION_FLAG = "scheduled_recuration"  # phases.ops.<flag> in a profile


def recuration_enabled(profile) -> bool:
    """Whether the profile turns scheduled re-curation on (`phases.ops.scheduled_recuration`)."""
    value = (profile.phases.get("ops") or {}).get(RECURATION_FLAG, False)
    if not isinstance(value, bool):
        raise ValueError(f"profile {profile.name}: phases.ops.{RECURATION_FLAG} must be true or false, "
                         f"got {value!r}")
    return value


def build_weekly_recuration_schedule(enabled: bool = False):
    """The weekly observation schedule, RUNNING by default only when `enabled`."""
    status = DefaultScheduleStatus.RUNNING if enabled else DefaultScheduleStatus.STOPPED

    @schedule(name="weekly_recuration", cron_schedule="0 3 * * 1", job=observe_hf_revisions_job,
              execution_timezone="UTC", default_status=status,
              description="Mondays 03:00 UTC: observe HF revisions; changed sources are re-curated by "
                          "their automation conditions (recuration_sensor)")
    def weekly_recuration_schedule(context: ScheduleEvaluationContext):
        return RunRequest(run_key=f"observe-{context.scheduled_execution_time:%Y-%m-%d}",
                          tags={"surrogate/trigger": "weekly_recuration"})

    return weekly_recuration_schedule


weekly_recuration_schedule = build_weekly_recuration_schedule()


@schedule(name="monthly_tier2_evals", cron_schedule="0 4 1 * *", job=tier2_eval_job,
          execution_timezone="UTC", default_status=DefaultScheduleStatus.RUNNING,
          description="1st of the month 04:00 UTC: Tier-2 evals on the latest checkpoints")
def monthly_tier2_schedule(context: ScheduleEvaluationContext):
    graph = context.repository_def.asset_graph
    keys = TIER2_SELECTION.resolve(graph)
    if not keys:
        return SkipReason("no asset is tagged eval_tier=2 yet")
    month = f"{context.scheduled_execution_time:%Y-%m}"
    pdefs = {graph.get(k).partitions_def for k in keys}
    if pdefs == {None}:
        return RunRequest(run_key=f"tier2-{month}", tags={"surrogate/trigger": "monthly_tier2"})
    # Partitioned Tier-2 reports (e.g. one per checkpoint): evaluate the newest partition.
    requests = []
    for pdef in pdefs - {None}:
        parts = pdef.get_partition_keys(dynamic_partitions_store=context.instance)
        if parts:
            sel = [k for k in keys if graph.get(k).partitions_def == pdef]
            requests.append(RunRequest(run_key=f"tier2-{month}-{parts[-1]}", partition_key=parts[-1],
                                       asset_selection=sel, tags={"surrogate/trigger": "monthly_tier2"}))
    return requests or SkipReason("Tier-2 assets have no partitions yet")
