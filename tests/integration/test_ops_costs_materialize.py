"""The cost ledger asset and its budget check, materialized (the ledger's sums and thresholds:
tests/unit/operations/test_ops_costs.py)."""

import json

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
from surrogate_dagster.operations.cost_ledger import cost_budget_check, cost_ledger, cost_resources
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.storage import LocalObjectStore


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
        profile = load_profile(str(_profile(tmp_path, cash)))
        res = materialize([cost_ledger, cost_budget_check], instance=instance,
                          resources={**resources, **cost_resources(profile)},
                          raise_on_error=False)
        meta = res.asset_materializations_for_node("cost_ledger")[-1].metadata
        assert meta["cash_usd"].value == pytest.approx(102.0) and meta["gpu_usd"].value == 30.0
        assert meta["bytes"].value == 10_000_000
        ev = res.get_asset_check_evaluations()[0]
        outcomes[cash] = (ev.passed, ev.severity)
    assert outcomes == {1000: (True, AssetCheckSeverity.ERROR), 120: (False, AssetCheckSeverity.WARN),
                        100: (False, AssetCheckSeverity.ERROR)}
    assert isinstance(meta["per_asset"], MetadataValue.md("").__class__)
