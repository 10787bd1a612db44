"""Cost ledger: sums per asset and in total; the budget thresholds warn at 80% and fail at 100%
(the asset and its check, materialized: tests/integration/test_ops_costs_materialize.py)."""

from datetime import date

import pytest
from dagster import asset

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.operations.costs import (
    FAILED_ATTEMPTS,
    CostConfig,
    budget_status,
    build_ledger,
    costs_from_metadata,
    months_elapsed,
)

CFG = CostConfig(gpu_usd_per_hour=2.0, storage_usd_per_gb_month=0.00699, storage_min_billable_gb=1000,
                 fixed_usd_per_month={"hf_pro": 9.0}, cash_usd=400, monthly_usd=19)


def _ev(asset, sid, part=None, **meta):
    return {"asset": asset, "partition": part, "storage_id": sid, "metadata": meta}


def test_ledger_sums_history_prices_gpu_and_keeps_latest_storage():
    events = [_ev("synth", 1, "b0", api_cost_usd=10.0), _ev("synth", 2, "b0", api_cost_usd=5.0),  # a re-run costs again
              _ev("synth", 3, "b1", ledger={"batch_usd": 2.5, "billed_usd": 2.0}),
              _ev("stage1", 4, gpu_hours=3.0), _ev("stage1", 5, gpu_seconds=3600.0),
              _ev("mirror", 6, "s", bytes=2e9), _ev("mirror", 7, "s", bytes=3e9), _ev("mirror", 8, "t", bytes=1e9)]
    led = build_ledger(events, CFG, store_llm_usd=20.0)
    pa, t = led["per_asset"], led["totals"]
    assert pa["synth"]["api_usd"] == 17.5 and pa["synth"]["materializations"] == 3
    assert pa["stage1"]["gpu_hours"] == 4.0 and pa["stage1"]["gpu_usd"] == 8.0
    assert pa["mirror"]["bytes"] == 4e9  # latest per partition: 3 GB + 1 GB
    assert pa[FAILED_ATTEMPTS]["api_usd"] == 2.5  # LLM ledger saw $20, materializations only $17.5
    assert t["cash_usd"] == 28.0 and t["api_usd"] == 20.0
    assert t["storage_usd_per_month"] == pytest.approx(6.99)  # 1 TB minimum charge
    assert t["monthly_usd"] == pytest.approx(15.99)
    assert budget_status(led, CFG)[0] == "warn"  # monthly at 84%


@pytest.mark.parametrize("api,level", [(100, "ok"), (320, "warn"), (399.99, "warn"), (400, "fail"), (1000, "fail")])
def test_budget_thresholds(api, level):
    cfg = CostConfig(cash_usd=400, monthly_usd=15)
    assert budget_status(build_ledger([_ev("a", 1, api_cost_usd=api)], cfg), cfg)[0] == level


def test_bad_metadata_and_config_are_errors():
    with pytest.raises(ValueError, match="negative api"):
        costs_from_metadata({"api_cost_usd": -1.0})
    assert costs_from_metadata({"api_cost_usd": True, "rows": 3}) == {"api_usd": 0.0, "gpu_hours": 0.0, "bytes": 0.0}
    with pytest.raises(ValueError, match="unknown cost/budget keys"):
        CostConfig.from_profile_section({"costs": {"gpu_usd_per_hr": 2}})
    for bad in (float("inf"), float("nan"), -5, True):  # .inf would be no budget; true is not a sum of money
        with pytest.raises(ValueError, match="monthly_usd must be a finite number"):
            CostConfig.from_profile_section({"budget": {"monthly_usd": bad}})
    assert CostConfig.from_profile_section({"budget": {"monthly_usd": 0}}).monthly_usd == 0  # no monthly spend allowed
    assert months_elapsed(date(2026, 1, 5), date(2026, 3, 4)) == 2 and months_elapsed(date(2026, 1, 5), date(2026, 3, 5)) == 3


def test_production_profile_prices():
    cfg = CostConfig.from_profile_section(load_profile("production").phases["ops"])
    assert cfg.cash_usd == 400 and cfg.monthly_usd == 20 and cfg.gpu_usd_per_hour > 0


def test_production_budget_holds_the_runbooks_monthly_items_from_day_one():
    """Nothing spent yet: Wasabi's minimum charge and HF PRO alone must not warn or fail; a TB
    stored beyond the minimum does warn."""
    from datetime import date

    from surrogate_dagster.operations.costs import budget_status, build_ledger

    cfg = CostConfig.from_profile_section(load_profile("production").phases["ops"])
    day_one = build_ledger([], cfg, today=cfg.start or date(2026, 1, 5))
    assert day_one["totals"]["monthly_usd"] == pytest.approx(15.99)
    assert budget_status(day_one, cfg)[0] == "ok"
    two_tb = [{"asset": "raw", "partition": None, "storage_id": 1, "metadata": {"bytes": 2_000_000_000_000}}]
    assert budget_status(build_ledger(two_tb, cfg, today=cfg.start), cfg)[0] in ("warn", "fail")
