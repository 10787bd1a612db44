"""The curation settings of a profile as a Dagster resource (models, work dirs, workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..catalog.models import Profile
from ..paths import resolve_repo_path
from ..runtime.executors import executor_settings
from ..settings import profile_resource
from .config import CurationProfile


class CurationSettings(profile_resource(CurationProfile)):
    """Which NER model and edu scorer this deployment runs, where scratch files go, how many
    worker processes a step forks. The fields (and their validation) are `CurationProfile`'s,
    so the profile YAML and the resource (and the UI's launchpad) cannot drift apart.

    ``datatrove_executor`` is the profile's ``phases.ops.datatrove_executor`` (see
    :mod:`..runtime.executors`): where the steps that apply row blocks run them
    (:func:`.executor.apply_blocks`)."""

    datatrove_executor: dict[str, Any] = {"kind": "in_process"}

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p

    def benchmarks_path(self) -> Path:
        return resolve_repo_path(self.benchmarks_dir)


def curation_resources(profile: Profile) -> dict[str, Any]:
    """``{"curation": CurationSettings}`` from a profile's ``phases.curation`` (validated here) and
    the executor its ``phases.ops.datatrove_executor`` names."""
    curation = CurationProfile(**profile.phases.get("curation", {}))
    return {"curation": CurationSettings(**curation.model_dump(), datatrove_executor=executor_settings(profile))}
