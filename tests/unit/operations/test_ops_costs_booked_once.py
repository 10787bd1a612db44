"""Cost ledger: each cost is booked once, in its category (GPU hours priced once, LLM spend from the ledgers;
failed attempts through a materialized run: tests/integration/test_ops_costs_booked_once_materialize.py)."""

import pytest

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.operations.costs import FAILED_ATTEMPTS, CostConfig, build_ledger

PROD = CostConfig.from_profile_section(load_profile("production").phases["ops"])
PRICE = PROD.gpu_usd_per_hour


def _ev(asset, sid, part=None, **meta):
    return {"asset": asset, "partition": part, "storage_id": sid, "metadata": meta}


def _stage(sid, hours, **extra):
    # what training/stage_run.py reports: the hours and its own dollar estimate at training.yaml's price
    return _ev("stage2_5_checkpoint", sid, gpu_hours=hours, cost_usd=hours * 3.5, device="cuda", **extra)


def test_one_training_run_costs_its_hours_times_the_price_once():
    led = build_ledger([_stage(1, 10.0)], PROD)
    row, t = led["per_asset"]["stage2_5_checkpoint"], led["totals"]
    assert row["gpu_usd"] == pytest.approx(10 * PRICE) and row["api_usd"] == 0.0
    assert row["cash_usd"] == pytest.approx(10 * PRICE)
    assert t["cash_usd"] == pytest.approx(10 * PRICE) and t["api_usd"] == 0.0


def test_reused_finished_run_is_not_booked_again():
    led = build_ledger([_stage(1, 10.0, reused_finished_run=False), _stage(2, 10.0, reused_finished_run=True)], PROD)
    assert led["totals"]["gpu_hours"] == pytest.approx(10.0)
    assert led["totals"]["cash_usd"] == pytest.approx(10 * PRICE)


def test_55_gpu_hours_plus_200_of_synthesis():
    synth = [_ev("orchestrator_traces", 10 + i, f"batch-{i:03d}", batch_usd=20.0,
                 ledger={"batch_usd": 20.0, "billed_usd": 20.0}) for i in range(10)]
    events = [_stage(1, 20.0), _stage(2, 35.0), *synth]
    led = build_ledger(events, PROD, store_llm_usd=200.0)  # the ledger files hold the same 10 x $20
    t = led["totals"]
    assert t["api_usd"] == pytest.approx(200.0) and t["gpu_hours"] == pytest.approx(55.0)
    assert t["cash_usd"] == pytest.approx(55 * PRICE + 200)
    assert FAILED_ATTEMPTS not in led["per_asset"]


def test_llm_ledger_store_with_failed_attempts(tmp_path):
    import json

    from surrogate_dagster.operations.costs import llm_ledger_usd
    from surrogate_dagster.storage import LocalObjectStore

    store = LocalObjectStore(tmp_path / "store")
    store.put_bytes("llm-ledger/batch-000.json", json.dumps(
        {"batch": "batch-000", "attempts": {"r1/0": {"batch_usd": 7.0}, "r1/1": {"batch_usd": 20.0}}}).encode())
    store.put_bytes("llm-ledger/evals/devsecops_tasks.json", json.dumps(
        {"batch": "evals/devsecops_tasks", "attempts": {"r2/0": {"batch_usd": 3.0}}}).encode())
    assert llm_ledger_usd(store) == pytest.approx(30.0)
