"""The re-curation schedules (the re-curation runs: tests/integration/test_ops_recuration.py)."""

from dagster import build_schedule_context

from surrogate_dagster.operations.schedules import weekly_recuration_schedule


def test_schedules():
    ctx = build_schedule_context(scheduled_execution_time=__import__("datetime").datetime(2026, 3, 2, 3))
    req = weekly_recuration_schedule(ctx)
    assert req.run_key == "observe-2026-03-02"

    # one Tier-2 schedule, and it selects a real asset: the code location's job holds tier2_eval_report
    from surrogate_dagster.definitions import defs as code_location

    names = [s.name for s in code_location.schedules if "tier2" in s.name]
    assert names == ["monthly_tier2_evals"]
    job = code_location.resolve_job_def("tier2_evals")
    assert {k.to_user_string() for k in job.asset_layer.executable_asset_keys} == {"tier2_eval_report"}
