"""The curation settings of a profile as a Dagster resource (models, work dirs, workers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..catalog.loader import validate_phase
from ..catalog.models import Profile
from ..hub.model_cache import ModelSource
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
    (:func:`.executor.apply_blocks`).

    ``model_hub`` is the profile's ``hub`` section as far as model downloads need it (``mode``,
    ``endpoint``, ``token_env``): where ``hf:`` NER models and the Stack-Edu classifiers are
    fetched from (:meth:`model_source`). The default, offline, fetches nothing."""

    datatrove_executor: dict[str, Any] = {"kind": "in_process"}
    model_hub: dict[str, Any] = {"mode": "offline"}

    def model_source(self) -> ModelSource:
        """Where this deployment's models come from; the download cache is under the work dir."""
        return ModelSource.from_hub(self.model_hub, self.work_dir)

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p

    def benchmarks_path(self) -> Path:
        return resolve_repo_path(self.benchmarks_dir)


def curation_resources(profile: Profile) -> dict[str, Any]:
    """``{"curation": CurationSettings}`` from a profile's ``phases.curation`` (validated here) and
    the executor its ``phases.ops.datatrove_executor`` names, with the hub settings model
    downloads use."""
    curation = validate_phase(profile, "curation", CurationProfile)  # problems name the profile file
    model_hub = profile.hub.model_dump(include={"mode", "endpoint", "token_env"}, exclude_none=True)
    return {"curation": CurationSettings(**curation.model_dump(), datatrove_executor=executor_settings(profile),
                                         model_hub=model_hub)}
