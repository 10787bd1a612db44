"""The cluster profile on Kubernetes: the K8sRunLauncher instance config, GPU steps and Pipes pods.

The profile's `phases.k8s` section (resources/cluster.yaml) holds everything deployment-
specific; this module renders it (`--profile`, default cluster):

    python -m surrogate_dagster.runtime.k8s instance > dagster.yaml   # run launcher, monitoring, retries
    python -m surrogate_dagster.runtime.k8s values   > values.yaml    # the dagster Helm chart's values

and builds the one GPU pod spec Pipes steps launch (`pipes_pod_spec`, from the profile's
`phases.training.k8s`; `python -m surrogate_dagster.runtime.k8s gpu-pod` prints it).

Steps that serve a checkpoint themselves (`vllm serve` inside the step: the eval reports, the
exec-graded sampling) need the GPU image on a GPU node, while the rest of a run stays in the
code-location image. `k8s_executor` is the code location's executor on such a profile: dagster-k8s's
`k8s_job_executor` (one pod per step) with a `per_step_k8s_config` entry for every GPU step
(`gpu_step_ops`: the assets in the `gpu` pool, except the trainer's, whose GPU work is its Pipes
pod, plus `phases.k8s.gpu_step.assets`), each entry the GPU image, the GPU limit, node placement
and volumes of `phases.k8s.gpu_step` (`gpu_step_k8s_config`; `gpu-step` prints it, `step-job --op NAME`
the whole Job dagster-k8s creates for such a step).
Secrets are Kubernetes Secret names only; their values never enter a file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

import yaml
from pydantic import Field

from ..catalog.loader import validate_phase
from ..catalog.models import Strict




class SecretRef(Strict):
    name: str = Field(description="Kubernetes Secret name")
    key: str


class PipesPodSpec(Strict):
    """The pod a Pipes step launches on the GPU node pool (the profile's `phases.training.k8s`)."""

    image: str = Field(description="trainer image: axolotl's CUDA image + this repo's trainer/")
    namespace: str | None = None
    service_account: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = Field(default_factory=list)
    secret_env: dict[str, SecretRef] = Field(default_factory=dict, description="env var -> Secret key")
    resources: dict[str, Any] = Field(default_factory=dict)
    work_dir: str = "/workspace/training"
    kubeconfig_file: str | None = None
    load_incluster_config: bool | None = None
    pod_wait_timeout_s: float = 72 * 3600


def pipes_pod_spec(spec: PipesPodSpec, gpu_count: int, container: str = "trainer") -> dict[str, Any]:
    """The base pod spec PipesK8sClient gets: GPU limits, node placement, volumes, secrets as env."""
    limits = {"nvidia.com/gpu": str(gpu_count), **spec.resources.get("limits", {})}
    body: dict[str, Any] = {
        "name": container,
        "volume_mounts": spec.volume_mounts,
        "resources": {**spec.resources, "limits": limits},
        "env": [{"name": var, "value_from": {"secret_key_ref": {"name": ref.name, "key": ref.key}}}
                for var, ref in sorted(spec.secret_env.items())],
    }
    out: dict[str, Any] = {
        "containers": [body],
        "node_selector": spec.node_selector,
        "tolerations": spec.tolerations,
        "volumes": spec.volumes,
        "restart_policy": "Never",  # a failed pod is a failed run; the asset's retry resumes it
    }
    if spec.service_account:
        out["service_account_name"] = spec.service_account
    return out


class GpuStepSpec(Strict):
    """The pod of a step that serves a checkpoint itself (`phases.k8s.gpu_step`): the GPU image
    (`phases.k8s.gpu_image`) on a GPU node, with the step's work and shared-memory volumes."""

    gpu_count: int = Field(1, ge=1, description="GPUs of the step's pod (vLLM's tensor-parallel size is 1)")
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    resources: dict[str, Any] = Field(default_factory=dict)
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = Field(default_factory=list)
    assets: list[str] = Field(default_factory=list, description="assets outside the gpu pool that serve a "
                                                                "checkpoint (exec_graded_pairs)")


class K8sSettings(Strict):
    namespace: str
    image: str = Field(description="the code-location image (this package + its pinned deps)")
    gpu_image: str = Field(description="the trainer/inference image Pipes launches for GPU work")
    image_pull_policy: str = "IfNotPresent"
    service_account: str = "dagster"
    env_secrets: list[str] = Field(default_factory=list, description="Secret names exposed as env")
    instance_config_map: str = "dagster-instance"
    postgres_password_secret: str = "dagster-postgresql-secret"
    max_retries: int = Field(2, ge=0, description="run retries after a run worker dies")
    gpu_pool_limit: int = Field(1, ge=1)
    gpu_step: GpuStepSpec | None = Field(None, description="how steps that serve a checkpoint run (k8s_executor)")


def k8s_settings(profile) -> K8sSettings | None:
    """The profile's k8s section, validated (None when the profile has none, e.g. local)."""
    section = profile.phases.get("k8s")
    return validate_phase(profile, "k8s", K8sSettings, section) if section else None


def run_launcher_config(s: K8sSettings) -> dict[str, Any]:
    """K8sRunLauncher config: one Kubernetes Job per run, in the code location's image."""
    return {"instance_config_map": s.instance_config_map, "postgres_password_secret": s.postgres_password_secret,
            "dagster_home": "/opt/dagster/dagster_home", "job_namespace": s.namespace,
            "load_incluster_config": True, "service_account_name": s.service_account,
            "image_pull_policy": s.image_pull_policy, "env_secrets": list(s.env_secrets)}


def instance_yaml(s: K8sSettings) -> str:
    """dagster.yaml for the cluster: K8s run launcher, run monitoring + retries, one GPU at a time."""
    doc = {
        "run_launcher": {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": run_launcher_config(s)},
        # A run worker that dies (OOM, node loss, kill) is detected and the run marked failed, and
        # the pool slots an ended run still holds are freed: Dagster does not free them when a
        # worker dies, and with a pool limit of 1 one leaked slot blocks that pool for good ...
        "run_monitoring": {"enabled": True, "start_timeout_seconds": 600, "max_resume_run_attempts": 0,
                           "poll_interval_seconds": 60, "free_slots_after_run_end_seconds": 300},
        # ... then re-executed from the failed step: finished partitions are not redone. A step
        # that raised is not retried here: the steps that can fail transiently carry their own
        # RetryPolicy (surrogate_dagster/retries.py), and retrying the run as well would repeat
        # such a step up to (max_retries + 1) x its policy's attempts.
        "run_retries": {"enabled": True, "max_retries": s.max_retries, "retry_on_asset_or_op_failure": False},
        "concurrency": {"pools": {"default_limit": s.gpu_pool_limit}},
        "telemetry": {"enabled": False},
    }
    return yaml.safe_dump(doc, sort_keys=False)


TRAINER_KIND = "axolotl"  # the trainer's assets: their GPU work is the Pipes pod, not the step
GPU_POOL = "gpu"


def gpu_step_ops(assets: Iterable[Any], extra: Iterable[str] = ()) -> list[str]:
    """Op names of the steps that need the GPU image: executable assets in the `gpu` pool not of
    kind axolotl, and the assets named in `extra` (unknown names are an error)."""
    from dagster import AssetsDefinition

    extra = set(extra)
    ops, seen = set(), set()
    for ad in assets:
        if not isinstance(ad, AssetsDefinition) or not ad.is_executable:
            continue  # source assets, observable ones included: nothing of theirs is materialized
        op = ad.op
        names = {k.to_user_string() for k in ad.keys}
        seen |= names
        kinds = {kind for spec in ad.specs for kind in spec.kinds}
        if (op.pool == GPU_POOL and TRAINER_KIND not in kinds) or names & extra:
            ops.add(op.name)
    if extra - seen:
        raise ValueError(f"phases.k8s.gpu_step.assets: no such asset(s) {sorted(extra - seen)}")
    return sorted(ops)


def gpu_step_k8s_config(s: K8sSettings) -> dict[str, Any]:
    """The `dagster-k8s/config` of a GPU step: the GPU image, the GPU limit, node placement, volumes."""
    g = s.gpu_step or GpuStepSpec()
    limits = {"nvidia.com/gpu": str(g.gpu_count), **g.resources.get("limits", {})}
    return {"container_config": {"image": s.gpu_image, "resources": {**g.resources, "limits": limits},
                                 "volume_mounts": g.volume_mounts},
            "pod_spec_config": {"node_selector": g.node_selector, "tolerations": g.tolerations, "volumes": g.volumes}}


def executor_config(s: K8sSettings, gpu_ops: Iterable[str]) -> dict[str, Any]:
    """`k8s_job_executor` config: steps in the run's (code-location) image, GPU steps routed."""
    step = gpu_step_k8s_config(s)
    return {"job_namespace": s.namespace, "service_account_name": s.service_account,
            "image_pull_policy": s.image_pull_policy, "env_secrets": list(s.env_secrets),
            "per_step_k8s_config": {op: step for op in gpu_ops}}


def k8s_executor(profile, assets: Iterable[Any]):
    """The code location's executor on a profile with `phases.k8s.gpu_step` (the cluster profile):
    `k8s_job_executor` configured by :func:`executor_config`; None elsewhere (Dagster's default)."""
    s = k8s_settings(profile)
    if s is None or s.gpu_step is None:
        return None
    from dagster_k8s import k8s_job_executor

    ops = gpu_step_ops(assets, s.gpu_step.assets)
    return k8s_job_executor.configured(executor_config(s, ops), name="k8s_gpu_routed")


def step_job_manifest(s: K8sSettings, op_name: str, gpu_ops: Iterable[str], image: str | None = None) -> dict:
    """The Kubernetes Job dagster-k8s builds for one step of a run (its own `construct_dagster_k8s_job`
    with the executor's per-step config), as a manifest dict: what a reviewer or a validator reads."""
    import kubernetes
    from dagster_k8s.job import DagsterK8sJobConfig, UserDefinedDagsterK8sConfig, construct_dagster_k8s_job

    cfg = executor_config(s, gpu_ops)
    job_config = DagsterK8sJobConfig(job_image=image or s.image, image_pull_policy=s.image_pull_policy,
                                     service_account_name=s.service_account, env_secrets=list(s.env_secrets))
    user = UserDefinedDagsterK8sConfig.from_dict(cfg["per_step_k8s_config"].get(op_name, {}))
    job = construct_dagster_k8s_job(job_config, ["dagster", "api", "execute_step"], f"dagster-step-{op_name}"[:63]
                                    .replace("_", "-"), user_defined_k8s_config=user, component="step_worker")
    return kubernetes.client.ApiClient().sanitize_for_serialization(job)


def helm_values(s: K8sSettings, profile_name: str = "cluster") -> str:
    """Values for the `dagster/dagster` Helm chart: this code location (on `profile_name`), the K8s run launcher."""
    doc = {
        "dagster-user-deployments": {"enabled": True, "deployments": [{
            "name": "surrogate-dagster",
            "image": {"repository": s.image.rsplit(":", 1)[0],
                      "tag": s.image.rsplit(":", 1)[1] if ":" in s.image.split("/")[-1] else "latest",
                      "pullPolicy": s.image_pull_policy},
            "dagsterApiGrpcArgs": ["--module-name", "surrogate_dagster.definitions"],
            "port": 3030,
            "envSecrets": [{"name": n} for n in s.env_secrets],
            "env": [{"name": "SURROGATE_PROFILE", "value": profile_name}],
        }]},
        "runLauncher": {"type": "K8sRunLauncher", "config": {"k8sRunLauncher": {
            "jobNamespace": s.namespace, "envSecrets": [{"name": n} for n in s.env_secrets],
            "imagePullPolicy": s.image_pull_policy}}},
        "dagsterDaemon": {"runMonitoring": {"enabled": True, "startTimeoutSeconds": 600, "pollIntervalSeconds": 60,
                                            "freeSlotsAfterRunEndSeconds": 300},
                          "runRetries": {"enabled": True, "maxRetries": s.max_retries}},
        "serviceAccount": {"create": True, "name": s.service_account},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def training_pod_spec(profile) -> dict[str, Any] | None:
    """The pod spec the trainer's Pipes step launches on a profile (None without `phases.training.k8s`)."""
    section = (profile.phases.get("training") or {})
    if not section.get("k8s"):
        return None
    return pipes_pod_spec(PipesPodSpec.model_validate(section["k8s"]), int(section.get("gpu_count", 1)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m surrogate_dagster.runtime.k8s")
    ap.add_argument("what", choices=["instance", "values", "gpu-pod", "gpu-step", "step-job"])
    ap.add_argument("--op", help="step-job: the GPU step whose Job to render (default stage1_eval_report)")
    ap.add_argument("--profile", default="cluster", help="profile name or YAML path (default cluster: the Kubernetes shape)")
    args = ap.parse_args(argv)
    from ..catalog import load_profile

    profile = load_profile(args.profile)
    s = k8s_settings(profile)
    if s is None:
        print(f"profile {args.profile!r} has no phases.k8s section", file=sys.stderr)
        return 2
    if args.what in ("gpu-step", "step-job"):
        if s.gpu_step is None:
            print(f"profile {args.profile!r} has no phases.k8s.gpu_step section", file=sys.stderr)
            return 2
        if args.what == "gpu-step":
            sys.stdout.write(yaml.safe_dump(gpu_step_k8s_config(s), sort_keys=False))
            return 0
        op = args.op or "stage1_eval_report"
        sys.stdout.write(yaml.safe_dump(step_job_manifest(s, op, [op]), sort_keys=False))
        return 0
    out = {"instance": instance_yaml, "values": lambda x: helm_values(x, profile.name),
           "gpu-pod": lambda _: yaml.safe_dump(training_pod_spec(profile), sort_keys=False)}[args.what](s)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
