"""The baseline smoke gate as configured: the base model is checkpoint zero of every Tier-1 benchmark, stage 2
and the exec-graded pairs depend on the gate, the local profile overrides it and production enforces it,
variants gate on their own thresholds (the gate materialized: tests/integration/test_evals_baseline_smoke.py)."""

from __future__ import annotations

import pytest
import yaml
from dagster import AssetKey

from surrogate_dagster.evals import assets as A
from surrogate_dagster.evals.config import TIER1, EvalsProfile, load_eval_catalog, threshold
from surrogate_dagster.paths import ASSETS_DIR


SMOKE = A.CATALOG.smoke_gate


def test_base_model_is_checkpoint_zero_of_every_tier1_benchmark():
    assert A.CATALOG.evaluated[0] == A.CATALOG.baseline == "base_model"
    assert A.CATALOG.previous("stage1_checkpoint") == "base_model" and A.CATALOG.previous("base_model") is None
    base = A.BASELINE_REPORT
    assert base.key == AssetKey("base_model_eval_report")
    assert set(base.partitions_def.get_partition_keys()) == set(TIER1)
    assert AssetKey("base_model") in base.dependency_keys
    stage1 = next(a for a in A.CHECKPOINT_REPORTS if a.key == AssetKey("stage1_eval_report"))
    assert AssetKey("base_model_eval_report") in stage1.dependency_keys


def test_stage2_and_exec_graded_pairs_depend_on_the_smoke_gate():
    from surrogate_dagster import definitions

    graph = definitions.defs.resolve_asset_graph()
    gate = AssetKey(SMOKE.asset)
    for key in ("stage2_checkpoint", "exec_graded_pairs"):
        assert gate in graph.get(AssetKey(key)).parent_keys, key
    assert AssetKey(A.report_asset_name(SMOKE.checkpoint)) in graph.get(gate).parent_keys
    spec = next(iter(A.stage1_6_smoke_gate.check_specs))
    assert spec.name == "smoke_tests_pass" and spec.blocking
    assert "stage2_checkpoint" in spec.description and "exec_graded_pairs" in spec.description


def test_local_profile_overrides_the_smoke_gate_and_production_enforces_it():
    from surrogate_dagster.catalog import load_profile
    from surrogate_dagster.evals.config import evals_profile

    local, prod = evals_profile(load_profile("local")), evals_profile(load_profile("production"))
    assert local.smoke_gate == "report_only" and local.smoke_gate_reason
    assert prod.smoke_gate == "enforce"


def _raw() -> dict:
    return yaml.safe_load((ASSETS_DIR / "evals.yaml").read_text())


def _load(tmp_path, raw):
    p = tmp_path / "evals.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_eval_catalog(p)


def test_variants_use_their_own_threshold_never_the_runbook_figure():
    cat = load_eval_catalog()
    prof = EvalsProfile(offline=False)
    assert cat.tier1.bfcl.threshold == 70 and cat.tier1.bfcl.variant.name == "bfcl-v4-overall-offline"
    thr, src = threshold(cat, prof, "bfcl")
    assert thr == cat.tier1.bfcl.variant.threshold and "variant bfcl-v4-overall-offline" in src
    # RULER online runs all 13 tasks: the runbook's 90 on the 13-task mean gates
    assert threshold(cat, prof, "ruler_32k") == (90, "runbook (assets/evals.yaml)")
    assert threshold(cat, prof, "humaneval_plus") == (84, "runbook (assets/evals.yaml)")  # the runbook's run


@pytest.mark.parametrize("bench", ["bfcl", "livecodebench"])
def test_a_variant_without_its_own_threshold_fails_at_load(tmp_path, bench):
    raw = _raw()
    del raw["tier1"][bench]["variant"]
    with pytest.raises(ValueError, match=f"tier1.{bench} is a variant"):
        _load(tmp_path, raw)
    raw = _raw()
    del raw["tier1"][bench]["variant"]["threshold"]
    with pytest.raises(ValueError, match="threshold"):
        _load(tmp_path, raw)
    raw = _raw()
    raw["tier1"][bench]["variant"]["reason"] = ""
    with pytest.raises(ValueError, match="reason"):
        _load(tmp_path, raw)
