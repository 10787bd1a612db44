"""The k8s instance frees the pool slots of ended runs (run recovery with real runs in child processes:
tests/integration/test_run_recovery.py)."""

from __future__ import annotations


def test_k8s_instance_frees_slots_of_ended_runs():
    import yaml

    from surrogate_dagster.catalog import load_profile
    from surrogate_dagster.runtime.k8s import instance_yaml, k8s_settings

    settings = k8s_settings(load_profile("cluster"))
    doc = yaml.safe_load(instance_yaml(settings))
    assert doc["run_monitoring"]["enabled"] is True
    assert doc["run_monitoring"]["free_slots_after_run_end_seconds"] > 0
