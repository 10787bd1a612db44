"""Schedules: weekly re-curation (observe every source's HF revision) and monthly Tier-2 evals.

The weekly schedule only *observes* `hf_revisions` (22 cheap hub calls); a source whose pin
moved gets a new data version, and the automation conditions on the sources/curation assets
(evaluated by `recuration_sensor`, sensors.py) re-run that source's chain, then the cross-source
steps and the mixtures. Observing from the UI ("Observe sources") starts the same re-curation at
any time.

Re-curation re-pushes the stage datasets, so it never starts by itself: the schedule (and the
sensor, sensors.py) are STOPPED unless the profile sets `phases.ops.scheduled_recuration: true`
(`recuration_enabled`). Stopped, they still show in the UI and can be started there by hand.

`monthly_tier2_evals` materializes `tier2_eval_report` on the 1st of every month, one run per
Tier-2 benchmark partition (each benchmark fails or passes on its own).
"""


from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from ..evals.assets import tier2_eval_report
from ..evals.config import TIER2
from ..sources.revisions import HF_REVISIONS

observe_hf_revisions_job = define_asset_job(
    "observe_hf_revisions", selection=AssetSelection.assets(HF_REVISIONS),
    description="Ask the hub for every source's current revision (the partitions' data versions)")
tier2_eval_job = define_asset_job(
    "tier2_evals", selection=AssetSelection.assets(tier2_eval_report),
    description="Tier-2 eval reports on the release checkpoint (runbook: monthly)")


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
          description="1st of the month 04:00 UTC: Tier-2 evals, one run per benchmark")
def monthly_tier2_schedule(context: ScheduleEvaluationContext):
    month = f"{context.scheduled_execution_time:%Y-%m}"
    for bench in TIER2:
        yield RunRequest(run_key=f"tier2-{month}-{bench}", partition_key=bench,
                         tags={"surrogate/trigger": "monthly_tier2"})
