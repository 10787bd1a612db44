"""An instance holding a Day-14 verdict, for tests that materialize a smoke-gated step on its own
(stage2_checkpoint, exec_graded_pairs re-read the verdict before they start)."""

from __future__ import annotations

from dagster import AssetMaterialization, DagsterInstance

from surrogate_dagster.catalog.keys import SMOKE_GATE


def record_verdict(instance: DagsterInstance, passed: bool = True, overridden: bool = False) -> DagsterInstance:
    """Record a smoke-gate materialization with the gate asset's verdict metadata."""
    instance.report_runless_asset_event(AssetMaterialization(
        SMOKE_GATE, metadata={"smoke_tests_passed": passed, "overridden_by_profile": overridden and not passed,
                              "override_reason": "test" if overridden else "", "failed_gates": 0 if passed else 1}))
    return instance


def gated_instance(passed: bool = True) -> DagsterInstance:
    """An ephemeral instance whose latest smoke-gate verdict is `passed`."""
    return record_verdict(DagsterInstance.ephemeral(), passed)
