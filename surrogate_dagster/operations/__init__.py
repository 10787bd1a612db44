"""Operations: re-curation schedule and sensor, the regression lineage report, the cost ledger, the
`preflight` job (`preflight.py`: the runbook's read-only pre-flight checks), and
the resources a deployment adds (the Pipes k8s client, built by `runtime.k8s`). `OPS_ASSETS` also
carries `hf_revisions` (`sources/revisions.py`), which the schedules observe. `definitions.py` adds
them as:

    from .operations import OPS_ASSETS, OPS_CHECKS, OPS_JOBS, ops_schedules, ops_sensors
    Definitions(assets=[..., *OPS_ASSETS], asset_checks=[..., *OPS_CHECKS], jobs=[*OPS_JOBS],
                schedules=ops_schedules(PROFILE), sensors=ops_sensors(PROFILE),
                resources={**resources_for_profile(PROFILE)})

OPS_SCHEDULES / OPS_SENSORS are the same objects with scheduled re-curation STOPPED (the default).
"""

from __future__ import annotations

from .cost_ledger import cost_budget_check, cost_ledger, cost_resources
from .lineage_report import regression_lineage_report, regression_report_job
from .preflight_job import preflight_job
from ..sources.revisions import catalog_sync_sensor, hf_revisions
from .schedules import (
    build_weekly_recuration_schedule,
    monthly_tier2_schedule,
    observe_hf_revisions_job,
    recuration_enabled,
    tier2_eval_job,
    weekly_recuration_schedule,
)
from .sensors import build_recuration_sensor, recuration_sensor, regression_report_sensor

OPS_ASSETS = [hf_revisions, regression_lineage_report, cost_ledger]
OPS_CHECKS = [cost_budget_check]
OPS_JOBS = [observe_hf_revisions_job, tier2_eval_job, regression_report_job, preflight_job]
OPS_SCHEDULES = [weekly_recuration_schedule, monthly_tier2_schedule]
OPS_SENSORS = [recuration_sensor, regression_report_sensor, catalog_sync_sensor]


def ops_resources(profile) -> dict:
    """Resources the operations add for a profile (prices and budget of the cost ledger)."""
    return cost_resources(profile)


def ops_schedules(profile) -> list:
    """OPS_SCHEDULES with weekly re-curation RUNNING only where the profile turns it on."""
    return [build_weekly_recuration_schedule(recuration_enabled(profile)), monthly_tier2_schedule]


def ops_sensors(profile) -> list:
    """OPS_SENSORS with the re-curation sensor RUNNING only where the profile turns it on."""
    return [build_recuration_sensor(recuration_enabled(profile)), regression_report_sensor, catalog_sync_sensor]


__all__ = ["OPS_ASSETS", "OPS_CHECKS", "OPS_JOBS", "OPS_SCHEDULES", "OPS_SENSORS", "ops_resources",
           "ops_schedules", "ops_sensors"]
