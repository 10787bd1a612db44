"""Operations: re-curation schedule and sensor, the regression lineage report, the cost ledger,
scale-out (datatrove executors, Kubernetes). The lead adds these lists to `definitions.py`:

    from .ops import OPS_ASSETS, OPS_CHECKS, OPS_JOBS, OPS_SCHEDULES, OPS_SENSORS, ops_resources
    Definitions(assets=[..., *OPS_ASSETS], asset_checks=[..., *OPS_CHECKS], jobs=[*OPS_JOBS],
                schedules=OPS_SCHEDULES, sensors=OPS_SENSORS,
                resources={**resources_for_profile(PROFILE), **ops_resources(PROFILE)})
"""

from __future__ import annotations

from .cost_ledger import cost_budget_check, cost_ledger
from .k8s import k8s_resources
from .lineage_report import regression_lineage_report, regression_report_job
from .revisions import hf_revisions
from .schedules import monthly_tier2_schedule, observe_hf_revisions_job, tier2_eval_job, weekly_recuration_schedule
from .sensors import recuration_sensor, regression_report_sensor

OPS_ASSETS = [hf_revisions, regression_lineage_report, cost_ledger]
OPS_CHECKS = [cost_budget_check]
OPS_JOBS = [observe_hf_revisions_job, tier2_eval_job, regression_report_job]
OPS_SCHEDULES = [weekly_recuration_schedule, monthly_tier2_schedule]
OPS_SENSORS = [recuration_sensor, regression_report_sensor]


def ops_resources(profile) -> dict:
    """Resources the ops pieces add for a profile (the Pipes k8s client on a k8s profile)."""
    return k8s_resources(profile)


__all__ = ["OPS_ASSETS", "OPS_CHECKS", "OPS_JOBS", "OPS_SCHEDULES", "OPS_SENSORS", "ops_resources"]
