"""The cluster profile routes every step that serves a checkpoint to the GPU image (dagster-k8s's
per-step config of the code location's k8s_job_executor), leaves the trainer's steps to their Pipes
pod, and the manifests dagster-k8s builds from it (step Jobs, the Pipes pod) validate against the
Kubernetes schema (kubernetes-validate); every other profile keeps Dagster's default executor."""

from __future__ import annotations

import inspect
import re

import kubernetes
import kubernetes_validate
import pytest
import yaml
from dagster import AssetsDefinition, Definitions, validate_run_config
from dagster_k8s import k8s_job_executor
from dagster_k8s.models import k8s_model_from_dict

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime.k8s import (executor_config, gpu_step_ops, k8s_executor, k8s_settings, main,
                                           step_job_manifest, training_pod_spec)

K8S_VERSION = "1.32"  # a supported Kubernetes minor; the schema of Job / Pod has not changed for these fields
SERVES = re.compile(r"\.client\(ref|server_for\(")  # the steps that start `vllm serve` for a checkpoint


@pytest.fixture(scope="module")
def defs():
    from surrogate_dagster.definitions import defs as d

    return d


def _source(ad: AssetsDefinition) -> str:
    return inspect.getsource(ad.op.compute_fn.decorated_fn)


def _validate(manifest: dict) -> None:
    kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


def test_every_step_that_serves_a_checkpoint_runs_in_the_gpu_image(defs):
    cluster = load_profile("cluster")
    s = k8s_settings(cluster)
    ops = set(gpu_step_ops(defs.assets, s.gpu_step.assets))
    executable = [a for a in defs.assets if isinstance(a, AssetsDefinition) and a.is_executable]
    serving = {a.op.name for a in executable if SERVES.search(_source(a))}
    assert serving and ops == serving, (sorted(ops - serving), sorted(serving - ops))
    assert {"exec_graded_pairs", "tier2_eval_report", "stage1_6_eval_report", "base_model_eval_report"} <= ops
    training = {a.op.name for a in executable if "trainer" in a.required_resource_keys}
    assert training and not training & ops  # their GPU work is the Pipes pod
    cfg = executor_config(s, sorted(ops))
    for op in ops:
        step = cfg["per_step_k8s_config"][op]
        assert step["container_config"]["image"] == s.gpu_image != s.image
        assert step["container_config"]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_the_executor_config_is_valid_and_other_profiles_keep_the_default(defs):
    ex = k8s_executor(load_profile("cluster"), defs.assets)
    assert ex is not None and ex.name == "k8s_gpu_routed"
    job = Definitions(assets=defs.assets, executor=ex, resources=defs.resources).resolve_implicit_global_asset_job_def()
    assert job.executor_def.name == "k8s_gpu_routed"
    validate_run_config(job, {})  # the configured executor config against dagster-k8s's schema
    bad = k8s_job_executor.configured({**executor_config(k8s_settings(load_profile("cluster")), []),
                                       "per_step_k8s_config": {"x": {"container_config": 3}}}, name="bad")
    bad_job = Definitions(assets=defs.assets, executor=bad, resources=defs.resources).resolve_implicit_global_asset_job_def()
    with pytest.raises(Exception, match="container_config"):
        validate_run_config(bad_job, {})
    for name in ("local", "production", "rehearsal"):
        assert k8s_executor(load_profile(name), defs.assets) is None


def test_step_jobs_and_the_pipes_pod_are_valid_kubernetes_manifests(defs, capsys):
    cluster = load_profile("cluster")
    s = k8s_settings(cluster)
    ops = gpu_step_ops(defs.assets, s.gpu_step.assets)
    gpu_job = step_job_manifest(s, "stage1_eval_report", ops)
    _validate(gpu_job)
    pod = gpu_job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == s.gpu_image and c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H200"}
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/mnt/work", "/dev/shm"}
    assert c["envFrom"] == [{"secretRef": {"name": "surrogate-secrets"}}]
    # a step outside the GPU set: the code-location image, no GPU
    cpu_job = step_job_manifest(s, "curated_rows", ops)
    _validate(cpu_job)
    cc = cpu_job["spec"]["template"]["spec"]["containers"][0]
    assert cc["image"] == s.image and "nvidia.com/gpu" not in (cc.get("resources") or {}).get("limits", {})
    # the trainer's Pipes pod: the same kind of check on a Pod around its spec
    raw = training_pod_spec(cluster)
    spec = k8s_model_from_dict(kubernetes.client.V1PodSpec, raw)
    spec.containers[0].image = cluster.phases["training"]["k8s"]["image"]
    body = kubernetes.client.ApiClient().sanitize_for_serialization(spec)
    _validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer"}, "spec": body})
    # the renderings the docs name
    assert main(["gpu-step"]) == 0 and "nvidia.com/gpu" in capsys.readouterr().out
    assert main(["step-job", "--op", "tier2_eval_report"]) == 0
    job = yaml.safe_load(capsys.readouterr().out)
    _validate(job)
    assert main(["values"]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    assert values["dagster-user-deployments"]["deployments"][0]["env"] == [{"name": "SURROGATE_PROFILE",
                                                                           "value": "cluster"}]
    assert main(["gpu-step", "--profile", "production"]) == 2  # one host: no k8s section


def test_a_broken_manifest_is_refused():
    s = k8s_settings(load_profile("cluster"))
    job = step_job_manifest(s, "stage1_eval_report", ["stage1_eval_report"])
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = {"many": True}
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(job)
