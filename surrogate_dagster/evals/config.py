"""Typed models of assets/evals.yaml (what is evaluated, the targets) and of a profile's
``phases.evals`` section (where and how: online or offline data, inference backend, local sizes).
Unknown keys are errors; a broken file fails definitions loading with the file, key and expectation.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..catalog.loader import load_yaml_model
from ..catalog.models import Profile
from ..paths import ASSETS_DIR, resolve_repo_path

TIER1 = ("humaneval_plus", "mbpp_plus", "livecodebench", "bfcl", "ruler_32k", "ruler_128k")
TIER2 = ("swebench_lite", "devsecops", "gaia_level1", "noleak")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bench(_Strict):
    threshold: float | None = Field(default=None, description="the gate: score >= threshold (percent)")
    max_new_tokens: int = Field(default=512, gt=0)


class MbppBench(Bench):
    offline_file: str


class LcbBench(Bench):
    release: str
    files: list[str]
    revision: str = "main"
    cutoff: date
    standin_file: str
    timeout_s: float = 6.0


class BfclBench(Bench):
    categories: list[str]


class RulerBench(Bench):
    length: int = Field(gt=0)
    samples_per_family: int = Field(default=25, gt=0)


class DevsecopsBench(Bench):
    seed: str
    target_total: int = Field(default=280, gt=0)


class NoleakBench(Bench):
    prompts: int = Field(default=100, gt=0)
    canaries_per_kind: int = Field(default=4, gt=0)
    canary_rate: float = Field(default=0.01, gt=0, le=1)
    seed: int = 0


class Tier1(_Strict):
    humaneval_plus: Bench
    mbpp_plus: MbppBench
    livecodebench: LcbBench
    bfcl: BfclBench
    ruler_32k: RulerBench
    ruler_128k: RulerBench


class Tier2(_Strict):
    swebench_lite: Bench
    devsecops: DevsecopsBench
    gaia_level1: Bench
    noleak: NoleakBench


class Release(_Strict):
    checkpoint: str
    hub_repo: str


class Regression(_Strict):
    tolerance: float = Field(gt=0, lt=1)
    mode: Literal["relative", "points"] = "relative"


class EvalCatalog(_Strict):
    checkpoints: list[str]
    release: Release
    regression: Regression
    tier1: Tier1
    tier2: Tier2

    @model_validator(mode="after")
    def _release_is_a_checkpoint(self) -> "EvalCatalog":
        if self.release.checkpoint not in self.checkpoints:
            raise ValueError(f"release.checkpoint {self.release.checkpoint!r} is not in checkpoints")
        if len(set(self.checkpoints)) != len(self.checkpoints):
            raise ValueError("checkpoints must be unique")
        return self

    def bench(self, name: str) -> Bench:
        if name in TIER1:
            return getattr(self.tier1, name)
        if name in TIER2:
            return getattr(self.tier2, name)
        raise KeyError(f"unknown benchmark {name!r}")


# ---------------------------------------------------------------- the profile's phases.evals

class InferenceSection(_Strict):
    backend: Literal["transformers", "vllm_server", "vllm_offline"] = "transformers"
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = Field(default=16, gt=0)
    max_context: int | None = None
    threads: int | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 32

    @model_validator(mode="after")
    def _server_needs_url(self) -> "InferenceSection":
        if self.backend == "vllm_server" and not self.base_url:
            raise ValueError("backend vllm_server needs base_url")
        return self


class BenchOverride(_Strict):
    """Smaller runs for a small machine; each one is named in the report's notes."""

    max_items: int | None = Field(default=None, gt=0)
    max_new_tokens: int | None = Field(default=None, gt=0)
    length: int | None = Field(default=None, gt=0)
    length_label: str | None = None
    samples_per_family: int | None = Field(default=None, gt=0)
    max_per_category: int | None = Field(default=None, gt=0)
    cutoff: date | None = None
    target_total: int | None = Field(default=None, gt=0)


class EvalsProfile(_Strict):
    """``phases.evals`` of a deployment profile."""

    offline: bool = Field(description="offline variants: shared benchmark copies, LCB stand-in, no GAIA/SWE-bench")
    benchmarks_dir: str = "{shared}/data/benchmarks"
    work_dir: str = "var/work/evals"
    inference: InferenceSection = InferenceSection()
    overrides: dict[str, BenchOverride] = Field(default_factory=dict)
    thresholds: dict[str, float | None] = Field(default_factory=dict)
    thresholds_label: str | None = Field(default=None, description="required with thresholds: why they differ")
    sandbox_workers: int = Field(default=2, gt=0)
    swebench_python: str | None = None
    hf_token_env: str = "HF_TOKEN"

    @model_validator(mode="after")
    def _known(self) -> "EvalsProfile":
        for key in [*self.overrides, *self.thresholds]:
            if key not in TIER1 + TIER2:
                raise ValueError(f"unknown benchmark {key!r}; known: {list(TIER1 + TIER2)}")
        if self.thresholds and not self.thresholds_label:
            raise ValueError("thresholds override the runbook's targets: say why in thresholds_label")
        return self

    def benchmarks_path(self) -> Path:
        return resolve_repo_path(self.benchmarks_dir)

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p


def load_eval_catalog(path: str | Path | None = None) -> EvalCatalog:
    return load_yaml_model(path or ASSETS_DIR / "evals.yaml", EvalCatalog)


def evals_profile(profile: Profile) -> EvalsProfile:
    """The profile's ``phases.evals`` (validated); absent -> offline defaults."""
    raw: dict[str, Any] = profile.phases.get("evals") or {"offline": True}
    try:
        return EvalsProfile.model_validate(raw)
    except ValueError as e:
        raise ValueError(f"profile {profile.name}: phases.evals: {e}") from e


def threshold(catalog: EvalCatalog, prof: EvalsProfile, bench: str) -> tuple[float | None, str]:
    """(threshold, where it comes from): the profile's override if any, else the runbook's."""
    if bench in prof.thresholds:
        return prof.thresholds[bench], f"profile ({prof.thresholds_label})"
    return catalog.bench(bench).threshold, "runbook (assets/evals.yaml)"
