"""Runbook Day 14 holds in a run of its own: a smoke-gated step re-reads the gate's latest verdict
from the instance before it starts (runtime/smoke_gate.py)."""

import time

import pytest
from dagster import AssetMaterialization, DagsterInstance, Failure, asset, build_asset_context, materialize

from surrogate_dagster.catalog.keys import AGENT_CHECKPOINT, SMOKE_GATE
from surrogate_dagster.runtime.smoke_gate import require_smoke_gate, smoke_verdict
from tests.support.smoke_gate import record_verdict


def test_no_verdict_failed_verdict_and_stale_verdict_refuse():
    inst = DagsterInstance.ephemeral()
    v = smoke_verdict(inst)
    assert not v.proceed and "never run" in v.reason
    record_verdict(inst, passed=False)
    v = smoke_verdict(inst)
    assert not v.proceed and "enforces" in v.reason
    record_verdict(inst, passed=False, overridden=True)
    assert smoke_verdict(inst).proceed  # report_only: failed, overridden, recorded as such
    record_verdict(inst, passed=True)
    assert smoke_verdict(inst).proceed
    time.sleep(0.01)
    inst.report_runless_asset_event(AssetMaterialization(AGENT_CHECKPOINT))  # stage 1.6 retrained since
    v = smoke_verdict(inst)
    assert not v.proceed and "re-run" in v.reason


def test_a_gated_step_in_a_run_of_its_own_stops_on_a_failed_verdict():
    ran = []

    @asset(name="stage2_checkpoint")
    def gated(context):
        require_smoke_gate(context, "stage2_checkpoint")
        ran.append(1)

    inst = record_verdict(DagsterInstance.ephemeral(), passed=False)
    res = materialize([gated], instance=inst, raise_on_error=False)
    assert not res.success and ran == []
    failure = next(e for e in res.all_events if e.event_type_value == "STEP_FAILURE")
    assert "does not start" in failure.event_specific_data.error.message and SMOKE_GATE in \
        failure.event_specific_data.error.message
    record_verdict(inst, passed=True)
    assert materialize([gated], instance=inst).success and ran == [1]


def test_the_real_gated_assets_call_the_recheck():
    from surrogate_dagster.catalog.code_version import reached_modules

    for module, fn in (("surrogate_dagster.synth.assets", "exec_graded_pairs"),
                       ("surrogate_dagster.training.assets", "build_stage_asset")):
        assert "runtime.smoke_gate" not in reached_modules(module, fn)  # runtime is opaque to versions...
    import inspect

    from surrogate_dagster.synth import assets as synth_assets
    from surrogate_dagster.training import assets as training_assets

    # ... so read the source: both gated steps call require_smoke_gate before any work
    assert "require_smoke_gate(context" in inspect.getsource(synth_assets.exec_graded_pairs.op.compute_fn.decorated_fn)
    assert "require_smoke_gate(context" in inspect.getsource(training_assets.build_stage_asset)
    with pytest.raises(Failure, match="never run"):
        require_smoke_gate(build_asset_context(instance=DagsterInstance.ephemeral()), "exec_graded_pairs")
