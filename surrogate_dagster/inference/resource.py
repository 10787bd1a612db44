"""The Dagster face of serving: a resource that runs the profile's inference server for a step.

``InferenceServerResource.ensure(ref)`` starts (or reuses) the managed server for a checkpoint and
returns it; the server is stopped when the step's resources are torn down, which Dagster does once
the step ends, whether it succeeded, failed or was interrupted. Code outside Dagster uses
:class:`~.server.ManagedServer` as a context manager instead.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from .client import ModelRef
from .config import ServingSection, serving_section
from .server import ManagedServer, ServerSlot


class InferenceServerResource(ConfigurableResource):
    """The profile's ``phases.serving`` (JSON, validated by config.ServingSection)."""

    section_json: str = "{}"
    _slot: ServerSlot = PrivateAttr(default_factory=ServerSlot)
    _log: Callable[[str], None] = PrivateAttr(default=print)

    def section(self) -> ServingSection:
        return ServingSection.model_validate_json(self.section_json)

    @property
    def managed(self) -> bool:
        return self.section().managed

    def with_rank(self, ref: ModelRef) -> ModelRef:
        """``ref`` with the profile's ``max_lora_rank`` unless it carries its own."""
        from dataclasses import replace

        return ref if ref.max_lora_rank else replace(ref, max_lora_rank=self.section().vllm.max_lora_rank)

    def ensure(self, ref: ModelRef, log: Callable[[str], None] | None = None) -> ManagedServer:
        """The running server for ``ref`` (started and waited for when needed)."""
        sec = self.section()
        if not sec.managed:
            raise ValueError("phases.serving.backend is 'transformers': no inference server to start")
        return self._slot.ensure(sec.vllm.spec(), self.with_rank(ref), log=log or self._log)

    def stop(self) -> None:
        self._slot.stop()

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.log is not None:  # the server's output goes to the step's Dagster log
            self._log = context.log.info

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self.stop()


def inference_resources(profile: Any) -> dict[str, Any]:
    """``{"inference_server": InferenceServerResource}`` for a profile (its phases.serving validated
    here: a bad section fails definitions loading)."""
    sec = serving_section(profile.phases, profile.name)
    return {"inference_server": InferenceServerResource(section_json=json.dumps(sec.model_dump(mode="json")))}
