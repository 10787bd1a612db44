"""The profile's ``phases.serving`` section: how checkpoints are served for generation.

``backend: transformers`` (local): the model is loaded in the step's own process; no server.
``backend: vllm_server`` (production): each step that generates from a checkpoint runs a managed
``vllm serve`` for it (server.py), or reuses ``vllm.external_url`` when set. Unknown keys are
errors, so a typo fails definitions loading instead of silently serving with defaults.
"""

from __future__ import annotations

import shlex
from typing import Any, Literal

from pydantic import Field, StrictInt, field_validator

from ..catalog.loader import validate_mapping
from ..catalog.models import Strict

from .server import DEFAULT_MAX_LORA_RANK, ServerSpec




class VLLMSection(Strict):
    """``phases.serving.vllm``: the ``vllm serve`` command line and how long to wait for it."""

    command: list[str] = Field(default_factory=lambda: ["vllm", "serve"],
                               description="argv prefix; the model and flags are appended")
    host: str = "127.0.0.1"
    port: StrictInt = Field(default=8000, gt=0, lt=65536)
    max_context: StrictInt = Field(default=32768, gt=0, description="--max-model-len")
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_lora_rank: StrictInt = Field(default=DEFAULT_MAX_LORA_RANK, gt=0,
                               description="--max-lora-rank: at least the stages' adapter rank (lora_r)")
    dtype: str = "bfloat16"
    extra_args: list[str] = Field(default_factory=list)
    external_url: str | None = Field(default=None, description="reuse this running server; never started or stopped")
    api_key_env: str | None = Field(default=None, description="NAME of the variable with the server's API key")
    startup_timeout_s: float = Field(default=900.0, gt=0)
    stop_timeout_s: float = Field(default=30.0, gt=0)
    log_dir: str = "var/work/serving"

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v

    @field_validator("command")
    @classmethod
    def _not_empty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("command must name the server executable")
        return v

    def spec(self) -> ServerSpec:
        from ..paths import resolve_repo_path

        return ServerSpec(command=tuple(self.command), host=self.host, port=self.port, max_context=self.max_context,
                          gpu_memory_utilization=self.gpu_memory_utilization, max_lora_rank=self.max_lora_rank,
                          dtype=self.dtype, extra_args=tuple(self.extra_args), external_url=self.external_url,
                          api_key_env=self.api_key_env, startup_timeout_s=self.startup_timeout_s,
                          stop_timeout_s=self.stop_timeout_s, log_dir=str(resolve_repo_path(self.log_dir)))


class ServingSection(Strict):
    """``phases.serving``."""

    backend: Literal["transformers", "vllm_server"] = "transformers"
    vllm: VLLMSection = VLLMSection()

    @property
    def managed(self) -> bool:
        """Generation goes through a server this section describes (started here or external)."""
        return self.backend == "vllm_server"


def serving_section(phases: dict[str, Any], profile_name: str = "", source: str | None = None) -> ServingSection:
    """The validated ``phases.serving`` of a profile's phases; absent: in-process transformers."""
    # One `<source>: phases.serving.<key>: <reason>` line per problem (a CatalogError); the source
    # is the profile's file where it has one (`catalog.loader.profile_source`).
    return validate_mapping(ServingSection, phases.get("serving") or {}, source or f"profile {profile_name}",
                            "phases.serving")
