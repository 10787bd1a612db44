"""The evals' Dagster resource: the profile's ``phases.evals`` and ``phases.serving`` sections, and
the checkpoint -> inference client factory. Thin: the logic lives in config/checkpoints/runner and
the shared inference package (clients, managed server)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from ..catalog.loader import profile_source
from ..catalog.models import Profile
from ..inference import InferenceClient, InferenceSettings, ModelRef, VLLMServerInference, make_inference
from ..inference.config import serving_section
from ..inference.resource import ServedResource
from ..settings import profile_resource
from .config import EvalsProfile, evals_profile


def dir_revision(path: str | Path) -> str:
    """A content hash of a model directory (for models given by path, not by checkpoint asset)."""
    h = hashlib.sha256()
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(path)).encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


class EvalSettings(profile_resource(EvalsProfile, base=ServedResource, as_dict=("inference", "overrides"))):
    """``phases.evals`` (the fields of config.EvalsProfile), ``phases.serving`` (``serving_json``,
    see inference.resource.ServedResource), where bases come from, and optional local model dirs
    per checkpoint (they replace the object-store lookup).

    With ``inference.backend: vllm_server`` and a managed serving section, :meth:`client` starts
    the checkpoint's server (one at a time) and the step's resource teardown stops it."""

    base_source: str = "tiny"
    model_dirs: dict[str, str] = {}

    def model_ref(self, store: Any, checkpoint: str) -> ModelRef:
        """The checkpoint's policy as a local dir (or a Hub id for a pinned base + adapter), with
        the serving section's ``max_lora_rank`` (the ``--max-lora-rank`` its adapter is served with)."""
        if checkpoint in self.model_dirs:
            d = self.model_dirs[checkpoint]
            return self.with_rank(ModelRef(name=checkpoint, model_dir=d, revision=dir_revision(d)))
        from .checkpoints import resolve_checkpoint

        return self.with_rank(resolve_checkpoint(store, checkpoint, self.profile().work_path("checkpoints"),
                                                 self.base_source))

    def client(self, ref: ModelRef, log: Callable[[str], None] | None = None) -> InferenceClient:
        inf = self.profile().inference
        serving = self.serving()
        if inf.backend == "vllm_server" and serving.managed:
            srv = self.server_for(ref, log)
            return VLLMServerInference(ref, base_url=srv.base_url, served_name=srv.served_name,
                                       api_key_env=serving.vllm.api_key_env,
                                       max_context=inf.max_context or serving.vllm.max_context,
                                       concurrency=inf.concurrency)
        return make_inference(ref, InferenceSettings(**inf.model_dump()))


def eval_resources(profile: Profile) -> dict[str, Any]:
    """``{"evals": EvalSettings}`` for a profile (its phases.evals validated here: a bad section
    fails definitions loading)."""
    prof = evals_profile(profile)
    serving = serving_section(profile.phases, profile.name, profile_source(profile))
    if prof.inference.backend == "vllm_server" and not (prof.inference.base_url or serving.managed):
        raise ValueError(f"profile {profile.name}: phases.evals.inference.backend vllm_server needs base_url, "
                         "or phases.serving.backend: vllm_server to run the server")
    base_source = ((profile.phases.get("training") or {}).get("base_model")) or "tiny"
    return {"evals": EvalSettings(**prof.model_dump(mode="json"),
                                  serving_json=json.dumps(serving.model_dump(mode="json")), base_source=base_source)}
