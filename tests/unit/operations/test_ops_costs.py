"""Cost ledger: sums per asset and in total; the budget check warns at 80% and fails at 100%."""

import json
from datetime import date

import pytest
import yaml
from dagster import (
    AssetCheckSeverity,
    DagsterInstance,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.operations.cost_ledger import cost_budget_check, cost_ledger
from surrogate_dagster.operations.costs import (
    FAILED_ATTEMPTS,
    CostConfig,
    budget_status,
    build_ledger,
    costs_from_metadata,
    months_elapsed,
)
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.storage import LocalObjectStore

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
    assert months_elapsed(date(2026, 1, 5), date(2026, 3, 4)) == 2 and months_elapsed(date(2026, 1, 5), date(2026, 3, 5)) == 3


def test_production_profile_prices():
    cfg = CostConfig.from_profile_section(load_profile("production").phases["ops"])
    assert cfg.cash_usd == 400 and cfg.monthly_usd == 15 and cfg.gpu_usd_per_hour > 0


def _profile(tmp_path, cash):
    prof = yaml.safe_load(open(load_profile.__globals__["PROFILES_DIR"] / "local.yaml"))
    prof["object_store"]["root"] = str(tmp_path / "store")
    prof["hub"].update(mirror_dir=str(tmp_path / "hub"), push_dir=str(tmp_path / "push"))
    prof.setdefault("phases", {})["ops"] = {"costs": {"gpu_usd_per_hour": 10.0},
                                            "budget": {"cash_usd": cash, "monthly_usd": 15}}
    path = tmp_path / f"p{cash}.yaml"
    path.write_text(yaml.safe_dump(prof))
    return path


def test_ledger_asset_and_budget_check(tmp_path, monkeypatch):
    @asset(partitions_def=StaticPartitionsDefinition(["b0", "b1"]), group_name="synth")
    def traces(context):
        return MaterializeResult(metadata={"api_cost_usd": 30.0, "bytes": 5_000_000})

    @asset(group_name="training")
    def stage1_checkpoint():
        return MaterializeResult(metadata={"gpu_hours": 3.0, "uri": "s3://x"})

    store = LocalObjectStore(tmp_path / "store")
    store.put_bytes("llm-ledger/traces-b0.json", json.dumps(
        {"batch": "b0", "attempts": {"a1": {"batch_usd": 12.0}, "a2": {"batch_usd": 30.0}}}).encode())
    store.put_bytes("llm-ledger/traces-b1.json", json.dumps({"batch": "b1", "attempts": {"a1": {"batch_usd": 30.0}}}).encode())
    resources = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path / "store"))}
    instance = DagsterInstance.ephemeral()
    for p in ("b0", "b1"):
        materialize([traces], partition_key=p, instance=instance)
    materialize([stage1_checkpoint], instance=instance)
    outcomes = {}
    for cash in (1000, 120, 100):  # spend is 60 API + 12 failed attempt + 30 GPU = $102
        monkeypatch.setenv("SURROGATE_PROFILE", str(_profile(tmp_path, cash)))
        res = materialize([cost_ledger, cost_budget_check], instance=instance, resources=resources,
                          raise_on_error=False)
        meta = res.asset_materializations_for_node("cost_ledger")[-1].metadata
        assert meta["cash_usd"].value == pytest.approx(102.0) and meta["gpu_usd"].value == 30.0
        assert meta["bytes"].value == 10_000_000
        ev = res.get_asset_check_evaluations()[0]
        outcomes[cash] = (ev.passed, ev.severity)
    assert outcomes == {1000: (True, AssetCheckSeverity.ERROR), 120: (False, AssetCheckSeverity.WARN),
                        100: (False, AssetCheckSeverity.ERROR)}
    assert isinstance(meta["per_asset"], MetadataValue.md("").__class__)
