"""Step retry policies: attached to exactly the steps that can fail transiently (read back from
the Definitions), shaped as exponential backoff with jitter (honoured by Dagster in a run:
tests/integration/test_retries_materialize.py)."""

import pytest
from dagster import AssetsDefinition, Backoff, Jitter

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime.k8s import instance_yaml, k8s_settings
from surrogate_dagster.retries import (
    DELAY_SCALE,
    HUB_PUSH_RETRY,
    LLM_RETRY,
    MIRROR_RETRY,
    RETRY_POLICIES,
    TRAINER_RETRY,
    expected_policy,
)


@pytest.fixture(scope="module")
def policies():
    from surrogate_dagster.definitions import defs

    out = {}
    for a in defs.assets:
        if isinstance(a, AssetsDefinition) and a.is_executable:
            for key in a.keys:
                out[key.to_user_string()] = a.op.retry_policy
    return out


def test_policies_are_attached_to_exactly_the_transient_steps(policies):
    with_policy = {k: p for k, p in policies.items() if p is not None}
    expected = {k: expected_policy(k) for k in policies if expected_policy(k) is not None}
    assert with_policy == expected
    # every family of the registry names at least one asset of the code location
    assert {"source_rows", "helper_rows", "synth_scenarios", "orchestrator_traces"} <= set(with_policy)
    assert any(k.endswith("_hub") for k in with_policy)
    assert any(k.endswith("_checkpoint") for k in with_policy)
    # deterministic steps get none: a retry would fail the same way
    for name in ("normalized_rows", "sanitized_rows", "curated_rows", "dedup_decisions"):
        assert policies[name] is None


@pytest.mark.parametrize("policy", [MIRROR_RETRY, HUB_PUSH_RETRY, LLM_RETRY, TRAINER_RETRY])
def test_policies_back_off_exponentially_with_jitter(policy):
    assert policy.max_retries >= 1 and policy.delay >= 30 * DELAY_SCALE
    assert policy.backoff == Backoff.EXPONENTIAL and policy.jitter == Jitter.PLUS_MINUS


def test_expected_policy_matches_families():
    assert expected_policy("stage1_checkpoint") is TRAINER_RETRY
    assert expected_policy("agent_sft_hub") is HUB_PUSH_RETRY
    assert expected_policy("agent_mixture") is None  # the mixture itself is local and deterministic
    assert set(RETRY_POLICIES.values()) == {MIRROR_RETRY, HUB_PUSH_RETRY, LLM_RETRY, TRAINER_RETRY}


def test_run_retries_leave_step_failures_to_the_step_policies():
    import yaml

    doc = yaml.safe_load(instance_yaml(k8s_settings(load_profile("cluster"))))
    assert doc["run_retries"]["enabled"] is True
    assert doc["run_retries"]["retry_on_asset_or_op_failure"] is False
