"""The Dagster face of serving: resources whose steps generate from a checkpoint run the profile's
inference server for the step.

:class:`ServedResource` carries the profile's ``phases.serving`` (``serving_json``);
``server_for(ref)`` starts (or reuses) the managed server for a checkpoint and returns it, and the
server is stopped when the step's resources are torn down, which Dagster does once the step ends,
whether it succeeded, failed or was interrupted. The evals' and synth's settings resources derive
from it; :class:`InferenceServerResource` is the same thing on its own. Code outside Dagster uses
:class:`~.server.ManagedServer` as a context manager instead.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable

from dagster import InitResourceContext
from pydantic import PrivateAttr

from ..catalog.loader import profile_source
from ..settings import ProfileResource
from .client import ModelRef
from .config import ServingSection, serving_section
from .server import ManagedServer, ServerSlot


class ServedResource(ProfileResource):
    """``phases.serving`` (JSON, validated by config.ServingSection) and the one server a step runs."""

    serving_json: str = "{}"
    _slot: ServerSlot = PrivateAttr(default_factory=ServerSlot)
    _log: Callable[[str], None] = PrivateAttr(default=print)

    def serving(self) -> ServingSection:
        return ServingSection.model_validate_json(self.serving_json)

    @property
    def managed(self) -> bool:
        return self.serving().managed

    def with_rank(self, ref: ModelRef) -> ModelRef:
        """``ref`` with the profile's ``max_lora_rank`` unless it carries its own."""
        return ref if ref.max_lora_rank else replace(ref, max_lora_rank=self.serving().vllm.max_lora_rank)

    def server_for(self, ref: ModelRef, log: Callable[[str], None] | None = None) -> ManagedServer:
        """The running server for ``ref`` (started and waited for when needed; one at a time)."""
        sec = self.serving()
        if not sec.managed:
            raise ValueError("phases.serving.backend is 'transformers': no inference server to start")
        return self._slot.ensure(sec.vllm.spec(), self.with_rank(ref), log=log or self._log)

    @property
    def running_server(self) -> ManagedServer | None:
        return self._slot.server

    def stop_server(self) -> None:
        self._slot.stop()

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if context.log is not None:  # the server's output goes to the step's Dagster log
            self._log = context.log.info

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self.stop_server()


class InferenceServerResource(ServedResource):
    """A step's inference server on its own (for steps without a settings resource of their own)."""


def serving_json(profile: Any) -> str:
    """A profile's ``phases.serving``, validated (a bad section fails definitions loading), as JSON."""
    return json.dumps(serving_section(profile.phases, profile.name, profile_source(profile)).model_dump(mode="json"))


def inference_resources(profile: Any) -> dict[str, Any]:
    """``{"inference_server": InferenceServerResource}`` for a profile."""
    return {"inference_server": InferenceServerResource(serving_json=serving_json(profile))}
