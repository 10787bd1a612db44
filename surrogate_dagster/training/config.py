"""Typed models of assets/training.yaml (what is trained) and a profile's `phases.training` (where)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..catalog.loader import CatalogError, load_yaml_model, parse_yaml
from ..catalog.models import Profile, Strict
from ..paths import ASSETS_DIR
from ..runtime.k8s import PipesPodSpec

ExecutorKind = Literal["local", "subprocess", "k8s"]
_SHA = re.compile(r"^[0-9a-f]{40}$")


class TinyModelSpec(Strict):
    """The local profile's stand-in base model (see training/tiny_base.py)."""

    vocab_size: int = Field(2048, ge=300)
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    tie_word_embeddings: bool = False
    seed: int = 0
    tokenizer_mixtures: list[str] = Field(description="mixture assets whose text trains the tokenizer")
    tokenizer_max_rows: int = Field(20000, gt=0)


class BaseModelSpec(Strict):
    hf_id: str
    revision: str = Field(description="40-hex commit of the model repo: the pin")
    tiny: TinyModelSpec

    @field_validator("revision")
    @classmethod
    def _pinned(cls, v: str) -> str:
        if not _SHA.match(v):
            raise ValueError("the base model must be pinned to a 40-hex commit sha")
        return v


class StageSpec(Strict):
    name: str = Field(description="stage id, e.g. stage1_5")
    asset: str = Field(description="the checkpoint asset's name")
    title: str
    config: str = Field(description="axolotl stage file, relative to assets/")
    hub_repo: str = Field(description="model repo name under the profile's hub org (runbook names)")
    merge: bool = Field(False, description="merge the adapter after training (next stage's base/reference)")

    def config_path(self) -> Path:
        return ASSETS_DIR / self.config

    def load_config(self) -> dict[str, Any]:
        path = self.config_path()
        data = parse_yaml(path.read_text(encoding="utf-8"))  # libyaml: called for every stage at load
        if not isinstance(data, dict):
            raise CatalogError(f"{path}: expected a mapping")
        return data


class TrainingCatalog(Strict):
    base_model: BaseModelSpec
    checkpoint_every_steps: int = Field(gt=0, description="save_steps on GPU executors")
    keep_checkpoints: int = Field(2, ge=1)
    executor_overrides: dict[ExecutorKind, dict[str, Any]]
    stages: list[StageSpec]

    @model_validator(mode="after")
    def _consistent(self) -> "TrainingCatalog":
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names) or len({s.asset for s in self.stages}) != len(names):
            raise ValueError("stage names and assets must be unique")
        for s in self.stages:
            if not s.config_path().is_file():
                raise ValueError(f"stage {s.name}: {s.config_path()} does not exist")
        return self

    def stage(self, name: str) -> StageSpec:
        for s in self.stages:
            if s.name == name or s.asset == name:
                return s
        raise KeyError(f"no training stage {name!r}")


K8sSpec = PipesPodSpec  # phases.training.k8s: the pod the trainer runs in


class TrainingProfile(Strict):
    """`phases.training` of a profile: which executor, and what it needs to run there."""

    executor: ExecutorKind
    base_model: Literal["tiny", "hub"] = Field("hub", description="tiny: build a local stand-in; hub: the pin")
    python: str = Field(".venv-trainer/bin/python", description="trainer env interpreter (local/subprocess)")
    work_dir: str = "var/training"
    gpu_type: str = "cpu"
    gpu_count: int = Field(0, ge=0)
    env: dict[str, str] = Field(default_factory=dict)
    push_to_hub: bool = True
    reuse_finished_runs: bool = Field(True, description="a run whose result.json exists is not retrained")
    k8s: K8sSpec | None = None

    @model_validator(mode="after")
    def _k8s_needs_spec(self) -> "TrainingProfile":
        if self.executor == "k8s" and self.k8s is None:
            raise ValueError("executor k8s needs a k8s: section (image, node_selector, volumes...)")
        if self.executor != "local" and self.gpu_count < 1:
            raise ValueError(f"executor {self.executor} trains on GPUs: set gpu_count >= 1")
        return self


def load_training_catalog(path: str | Path | None = None) -> TrainingCatalog:
    return load_yaml_model(path or ASSETS_DIR / "training.yaml", TrainingCatalog)


def training_profile(profile: Profile) -> TrainingProfile:
    section = profile.phases.get("training")
    if section is None:
        raise CatalogError(f"profile {profile.name!r} has no phases.training section")
    try:
        return TrainingProfile.model_validate(section)
    except ValueError as e:
        raise CatalogError(f"profile {profile.name!r} phases.training: {e}") from e
