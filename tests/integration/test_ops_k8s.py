"""Production on Kubernetes: rendered instance config and GPU pod spec validate against dagster-k8s,
and the code location (with the ops pieces) passes `dagster definitions validate` on the production and cluster profiles."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import kubernetes
import pytest
import yaml
from dagster_k8s import K8sRunLauncher
from dagster_k8s.models import k8s_model_from_dict

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime.k8s import helm_values, k8s_settings, main, training_pod_spec

REPO = Path(__file__).resolve().parents[2]


def test_the_one_gpu_pod_spec_is_a_kubernetes_pod_spec_and_the_trainers():
    from surrogate_dagster.training.executor import TrainerExecutorResource
    from surrogate_dagster.training.config import training_profile

    prod = load_profile("cluster")
    s = k8s_settings(prod)
    raw = training_pod_spec(prod)
    spec = k8s_model_from_dict(kubernetes.client.V1PodSpec, raw)
    c = spec.containers[0]
    assert c.resources.limits["nvidia.com/gpu"] == "1" and c.env[0].value_from.secret_key_ref.name
    assert spec.tolerations[0].key == "nvidia.com/gpu" and any(v.empty_dir and v.empty_dir.medium == "Memory"
                                                              for v in spec.volumes)
    # the trainer's Pipes step launches exactly this spec
    assert TrainerExecutorResource.from_profile(training_profile(prod)).pod_spec() == raw
    values = yaml.safe_load(helm_values(s))
    dep = values["dagster-user-deployments"]["deployments"][0]
    assert dep["image"] == {"repository": "ghcr.io/axentx/surrogate-dagster", "tag": "0.1.0", "pullPolicy": "IfNotPresent"}
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert main(["gpu-pod"]) == 0 and main(["values", "--profile", "local"]) == 2


@pytest.mark.parametrize("profile", ["production", "cluster"])
def test_definitions_validate_on_production_profile(tmp_path, profile):
    loc = tmp_path / "ops_location.py"
    # The real code location (ops pieces included) on the production profile.
    loc.write_text(textwrap.dedent("""
        from surrogate_dagster.definitions import defs  # noqa: F401
    """))
    env = {**os.environ, "SURROGATE_PROFILE": profile, "DAGSTER_HOME": str(tmp_path)}
    out = subprocess.run([str(Path(sys.executable).with_name("dagster")), "definitions", "validate", "-f", str(loc)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "All code locations passed validation" in out.stdout + out.stderr
