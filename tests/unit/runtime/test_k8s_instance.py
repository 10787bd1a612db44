"""The k8s instance YAML is a valid Dagster instance configuration (the definitions validated on the cluster profile:
tests/integration/test_ops_k8s.py)."""


from dagster._config import process_config
from dagster._core.instance.config import dagster_instance_config
from dagster_k8s import K8sRunLauncher

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime.k8s import instance_yaml, k8s_settings, training_pod_spec


def test_instance_yaml_is_a_valid_dagster_instance(tmp_path):
    s = k8s_settings(load_profile("cluster"))
    (tmp_path / "dagster.yaml").write_text(instance_yaml(s))
    cfg, _ = dagster_instance_config(str(tmp_path))
    assert cfg["run_launcher"]["class"] == "K8sRunLauncher" and cfg["run_retries"]["max_retries"] == 2
    res = process_config(K8sRunLauncher.config_type(), cfg["run_launcher"]["config"])
    assert res.success, res.errors
    assert k8s_settings(load_profile("local")) is None and training_pod_spec(load_profile("local")) is None
