"""The evals' Dagster resource: the profile's ``phases.evals`` section, and the checkpoint ->
inference client factory. Thin: the logic lives in config/checkpoints/inference/runner."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dagster import ConfigurableResource

from ..catalog.models import Profile
from .config import EvalsProfile, evals_profile
from ..inference import InferenceClient, InferenceSettings, ModelRef, make_inference


def dir_revision(path: str | Path) -> str:
    """A content hash of a model directory (for models given by path, not by checkpoint asset)."""
    h = hashlib.sha256()
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(path)).encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


class EvalSettings(ConfigurableResource):
    """``phases.evals`` (JSON, validated by config.EvalsProfile), where bases come from, and
    optional local model dirs per checkpoint (they replace the object-store lookup)."""

    section_json: str = '{"offline": true}'
    base_source: str = "tiny"
    model_dirs: dict[str, str] = {}

    def profile(self) -> EvalsProfile:
        return EvalsProfile.model_validate_json(self.section_json)

    def model_ref(self, store: Any, checkpoint: str) -> ModelRef:
        """The checkpoint's policy as a local dir (or a Hub id for a pinned base + adapter)."""
        if checkpoint in self.model_dirs:
            d = self.model_dirs[checkpoint]
            return ModelRef(name=checkpoint, model_dir=d, revision=dir_revision(d))
        from .checkpoints import resolve_checkpoint

        return resolve_checkpoint(store, checkpoint, self.profile().work_path("checkpoints"), self.base_source)

    def client(self, ref: ModelRef) -> InferenceClient:
        inf = self.profile().inference
        return make_inference(ref, InferenceSettings(**inf.model_dump()))


def eval_resources(profile: Profile) -> dict[str, Any]:
    """``{"evals": EvalSettings}`` for a profile (its phases.evals validated here: a bad section
    fails definitions loading)."""
    prof = evals_profile(profile)
    base_source = ((profile.phases.get("training") or {}).get("base_model")) or "tiny"
    return {"evals": EvalSettings(section_json=json.dumps(prof.model_dump(mode="json")), base_source=base_source)}
