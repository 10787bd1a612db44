"""Typed models of assets/training.yaml (what is trained) and a profile's `phases.training` (where)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from ..catalog.loader import CatalogError, load_yaml_model, read_yaml_mapping, validate_phase
from ..catalog.models import Profile, Strict
from ..paths import ASSETS_DIR
from ..runtime.k8s import PipesPodSpec

ExecutorKind = Literal["local", "subprocess", "k8s"]
_SHA = re.compile(r"^[0-9a-f]{40}$")


class TinyModelSpec(Strict):
    """The local profile's stand-in base model (see training/tiny_base.py)."""

    vocab_size: StrictInt = Field(2048, ge=300)
    hidden_size: StrictInt = 64
    intermediate_size: StrictInt = 128
    num_hidden_layers: StrictInt = 2
    num_attention_heads: StrictInt = 4
    num_key_value_heads: StrictInt = 2
    tie_word_embeddings: bool = False
    seed: StrictInt = 0
    tokenizer_mixtures: list[str] = Field(description="mixture assets whose text trains the tokenizer")
    tokenizer_max_rows: StrictInt = Field(20000, gt=0)


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


# Counts the pipeline itself reads or sets in a stage file or an executor override (render.py:
# save_steps falls back to checkpoint_every_steps, max_steps bounds a run); axolotl's own schema
# checks the rest in the trainer environment. key -> smallest allowed value.
STEP_KEYS = {"max_steps": 1, "save_steps": 1, "logging_steps": 1, "warmup_steps": 0,
             "micro_batch_size": 1, "gradient_accumulation_steps": 1}


def step_key_problems(cfg: dict[str, Any], prefix: str = "") -> list[str]:
    """``<key>: <reason>`` for each STEP_KEYS value of ``cfg`` that is not an int (a bool or a
    string is refused, not coerced) at or above its minimum; ``null`` (unset) passes."""
    out = []
    for key, low in STEP_KEYS.items():
        value = cfg.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            out.append(f"{prefix}{key}: must be an integer >= {low} (got {value!r})")
    return out


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
        """The stage file as a mapping; a repeated key, a syntax error or a bad step count is a
        CatalogError naming the file (and line, or key)."""
        path = self.config_path()
        data = read_yaml_mapping(path)  # libyaml: called for every stage at load
        problems = step_key_problems(data)
        if problems:
            raise CatalogError("\n".join(f"{path}: {p}" for p in problems))
        return data


class TrainingCatalog(Strict):
    base_model: BaseModelSpec
    checkpoint_every_steps: StrictInt = Field(gt=0, description="save_steps on GPU executors")
    keep_checkpoints: StrictInt = Field(2, ge=1)
    executor_overrides: dict[ExecutorKind, dict[str, Any]]
    stages: list[StageSpec]

    @field_validator("executor_overrides")
    @classmethod
    def _override_steps(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        problems = [p for kind, o in v.items() for p in step_key_problems(o, f"{kind}.")]
        if problems:
            raise ValueError("; ".join(problems))
        return v

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
    gpu_count: StrictInt = Field(0, ge=0)
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
    return validate_phase(profile, "training", TrainingProfile)
