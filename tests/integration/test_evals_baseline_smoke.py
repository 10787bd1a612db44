"""The base model as checkpoint 0, the Day-14 smoke gate before stage 2, and variant thresholds.

- ``base_model_eval_report`` exists per Tier-1 benchmark and stage 1's ``no_regression`` compares with it.
- ``stage2_checkpoint`` and ``exec_graded_pairs`` depend on ``stage1_6_smoke_gate``, whose blocking check
  stops them when it fails in ``enforce`` mode and, in ``report_only``, lets them run while the check is
  recorded as failed and overridden.
- A Tier-1 benchmark run differently from the runbook must declare a variant with its own threshold.

The configuration half (dependencies, profiles, thresholds): tests/unit/evals/test_evals_baseline_config.py.
"""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance, asset, materialize

from surrogate_dagster.evals import assets as A
from surrogate_dagster.evals.config import TIER1, EvalsProfile
from surrogate_dagster.evals.harness.common import EvalReport
from surrogate_dagster.evals.reports import read_summary, summary_key, write_report
from surrogate_dagster.evals.resources import EvalSettings, dir_revision
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.resources import ObjectStoreResource
from tests.support.evals_release import RULER_TEST_OVERRIDE
from tests.unit.evals.test_evals_baseline_config import SMOKE


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny") / "model")


def _resources(tmp, model, **section):
    section = {"offline": True, "work_dir": str(tmp / "work"),
               "overrides": {"ruler_32k": RULER_TEST_OVERRIDE},
               **section}
    dirs = {c: str(model) for c in A.CATALOG.evaluated}
    return {"object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
            "evals": EvalSettings(**section, model_dirs=dirs)}


def _check_evals(run) -> dict:
    return {e.event_specific_data.check_name: e.event_specific_data
            for e in run.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}


# ---------------------------------------------------------------- baseline


def test_stage1_regression_gate_compares_with_the_base_model_report(tmp_path, model):
    res = _resources(tmp_path, model)
    inst = DagsterInstance.ephemeral()
    base_run = materialize([A.BASELINE_REPORT], partition_key="ruler_32k", resources=res, instance=inst)
    meta = base_run.asset_materializations_for_node("base_model_eval_report")[0].metadata
    assert meta["checkpoint_revision"].value == dir_revision(model)
    store = res["object_store"].get_store()
    base = read_summary(store, "base_model", "ruler_32k")
    assert base["status"] == "ok"

    stage1 = next(a for a in A.CHECKPOINT_REPORTS if a.key == AssetKey("stage1_eval_report"))
    ok = _check_evals(materialize([stage1], partition_key="ruler_32k", resources=res, instance=inst))
    assert ok["no_regression"].passed and "at base_model" in ok["no_regression"].description
    assert ok["no_regression"].metadata["previous_checkpoint"].value == "base_model"

    # the base model scoring higher than stage 1 by more than 5% is a regression from base
    store.put_bytes(summary_key("base_model", "ruler_32k"), json.dumps({**base, "score": 95.0}).encode())
    bad = _check_evals(materialize([stage1], partition_key="ruler_32k", resources=res, instance=inst))
    assert not bad["no_regression"].passed
    assert "vs 95.0 at base_model: MORE than 5%" in bad["no_regression"].description


# ---------------------------------------------------------------- smoke gate before stage 2


def _stubs():
    ran: list[str] = []

    @asset(name="stage2_checkpoint", deps=[AssetKey(SMOKE.asset)])
    def stage2():
        ran.append("stage2_checkpoint")

    @asset(name="exec_graded_pairs", deps=[AssetKey(SMOKE.asset)])
    def pairs():
        ran.append("exec_graded_pairs")

    return [stage2, pairs], ran


def test_failing_smoke_gate_blocks_stage2_in_enforce_mode(tmp_path, model):
    res = _resources(tmp_path, model)  # enforce is the default: the runbook's gate
    stubs, ran = _stubs()
    run = materialize([A.stage1_6_smoke_gate, *stubs], resources=res, instance=DagsterInstance.ephemeral(),
                      raise_on_error=False)
    assert not run.success and ran == []
    check = _check_evals(run)["smoke_tests_pass"]
    assert not check.passed and check.description.startswith("BLOCKED")
    meta = run.asset_materializations_for_node(SMOKE.asset)[0].metadata
    assert meta["smoke_gate_mode"].value == "enforce" and meta["overridden_by_profile"].value is False


def test_report_only_proceeds_with_a_visible_override(tmp_path, model):
    res = _resources(tmp_path, model, smoke_gate="report_only", smoke_gate_reason="tiny local model")
    stubs, ran = _stubs()
    run = materialize([A.stage1_6_smoke_gate, *stubs], resources=res, instance=DagsterInstance.ephemeral())
    assert run.success and sorted(ran) == ["exec_graded_pairs", "stage2_checkpoint"]
    check = _check_evals(run)["smoke_tests_pass"]
    assert not check.passed  # never a silent pass
    assert check.severity.value == "WARN" and "OVERRIDDEN" in check.description and "tiny local model" in check.description
    meta = run.asset_materializations_for_node(SMOKE.asset)[0].metadata
    assert meta["overridden_by_profile"].value is True and meta["override_reason"].value == "tiny local model"
    with pytest.raises(ValueError, match="smoke_gate_reason"):
        EvalsProfile.model_validate({"offline": True, "smoke_gate": "report_only"})


def test_passing_smoke_gate_lets_stage2_run_in_enforce_mode(tmp_path, model):
    res = _resources(tmp_path, model)
    store = res["object_store"].get_store()
    ckpt = {"name": "x", "revision": dir_revision(model)}
    for c in (A.CATALOG.baseline, SMOKE.checkpoint):
        for b in TIER1:
            write_report(store, c, b, EvalReport(b, f"{b} test", "1", "ok", 96.0, "pass@1", n_items=10,
                                                 samples=[{"i": 1}]), ckpt)
    stubs, ran = _stubs()
    run = materialize([A.stage1_6_smoke_gate, *stubs], resources=res, instance=DagsterInstance.ephemeral())
    assert run.success and sorted(ran) == ["exec_graded_pairs", "stage2_checkpoint"]
    assert _check_evals(run)["smoke_tests_pass"].passed


# ---------------------------------------------------------------- variant thresholds
