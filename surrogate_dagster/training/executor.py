"""Where a stage trains: the trainer environment on this machine, on a GPU host, or in a k8s pod.

All three run the same entrypoint (``python -m surrogate_trainer.run``) with the same Pipes
extras; only the launcher and the executor's config overrides (training.yaml) differ:

- ``local``: the trainer venv on this machine (CPU, tiny model), PipesSubprocessClient;
- ``subprocess``: the same on a GPU host (the trainer venv with CUDA torch, or axolotl's image
  with trainer/ installed), when Dagster's run worker runs on that host;
- ``k8s``: dagster-k8s PipesK8sClient: one pod per run from the profile's image, GPU node
  selector, tolerations, volumes, secrets as env vars (names from the profile, values from
  Kubernetes Secrets).
"""

from __future__ import annotations

from typing import Any

from dagster import PipesClientCompletedInvocation

from ..paths import resolve_repo_path
from ..runtime.k8s import pipes_pod_spec
from ..settings import profile_resource
from .config import K8sSpec, TrainingProfile

TRAINER_MODULE = "surrogate_trainer.run"


class TrainerExecutorResource(profile_resource(TrainingProfile, as_dict=("k8s",), exclude=("base_model",))):
    """Launches one trainer run under Dagster Pipes; the fields are the profile's phases.training
    (training.config.TrainingProfile; the base model is the base_model asset's business)."""

    command: list[str] | None = None  # replaces `<python> -m surrogate_trainer.run` (tests use fakes)

    @classmethod
    def from_profile(cls, section: TrainingProfile) -> "TrainerExecutorResource":
        data = section.model_dump(exclude={"base_model"})
        data["k8s"] = section.k8s.model_dump(exclude_none=True) if section.k8s else None
        return cls(**data)

    def run_work_dir(self, stage: str, fingerprint: str) -> str:
        """The trainer's working directory for one run (on this machine, or inside the pod)."""
        if self.executor == "k8s":
            return f"{self._k8s().work_dir.rstrip('/')}/{stage}/{fingerprint}"
        return str(resolve_repo_path(self.work_dir) / stage / fingerprint)

    def trainer_command(self) -> list[str]:
        if self.command:
            return list(self.command)
        if self.executor == "k8s":
            return ["python", "-m", TRAINER_MODULE]
        return [str(resolve_repo_path(self.python)), "-m", TRAINER_MODULE]

    def _k8s(self) -> K8sSpec:
        if not self.k8s:
            raise ValueError("executor k8s needs the profile's phases.training.k8s section")
        return K8sSpec.model_validate(self.k8s)

    def pod_spec(self) -> dict[str, Any]:
        """base_pod_spec for PipesK8sClient (runtime/k8s.py): GPU node, volumes, secrets as env."""
        return pipes_pod_spec(self._k8s(), self.gpu_count)

    def launch(self, context, extras: dict[str, Any]) -> PipesClientCompletedInvocation:
        """Run the trainer to completion (raises if it exits non-zero or the pod fails)."""
        if self.executor in ("local", "subprocess"):
            from dagster import PipesSubprocessClient

            client = PipesSubprocessClient(env=dict(self.env), cwd=str(resolve_repo_path(".")))
            return client.run(context=context, command=self.trainer_command(), extras=extras)
        if self.executor == "k8s":
            from dagster_k8s import PipesK8sClient

            k = self._k8s()
            client = PipesK8sClient(load_incluster_config=k.load_incluster_config,
                                    kubeconfig_file=k.kubeconfig_file)
            return client.run(context=context, image=k.image, command=self.trainer_command(),
                              namespace=k.namespace, env=dict(self.env), extras=extras,
                              base_pod_spec=self.pod_spec(), pod_wait_timeout=k.pod_wait_timeout_s)
        raise ValueError(f"unknown executor {self.executor!r} (local, subprocess, k8s)")
