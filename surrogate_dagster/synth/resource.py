"""Dagster resources of the synth group: the LLM (Anthropic or the local stand-in) and the synth
settings of a profile. Thin: the logic is in llm/ and synth/*.py.

``LLMResource`` builds one :class:`~surrogate_dagster.llm.client.LLMClient` per batch (its ledger
is that batch's ledger) with the response cache in the object store. With ``base_url: local`` it
runs the stand-in Messages server on 127.0.0.1 for the duration of the step (started in
``setup_for_execution``, stopped in ``teardown_after_execution``); the stand-in is NOT Claude and
names itself in every reply. The API key is never configured here: only the NAME of the
environment variable that holds it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from dagster import InitResourceContext
from pydantic import PrivateAttr

from ..catalog.loader import profile_source
from ..catalog.models import Profile
from ..inference.resource import ServedResource, serving_json
from ..paths import resolve_repo_path
from ..settings import profile_resource
if TYPE_CHECKING:  # the anthropic SDK takes seconds to import: only when a client is built
    from ..llm.client import LLMClient

from .config import LOCAL_BASE_URL, ResolvedLLM, SynthProfile, resolve_llm, resolve_synth, synth_catalog


class LLMResource(profile_resource(ResolvedLLM)):
    """Models, output caps, prices and budget of a deployment, and where its Messages API is: the
    profile's ``phases.llm`` merged over assets/synth.yaml (config.ResolvedLLM)."""

    _server: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if self.base_url == LOCAL_BASE_URL:
            self._start_local()
            if context.log is not None:
                context.log.info(f"LLM: local stand-in model (not Claude) serving on {self._server.url}")

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self._stop_local()

    def _start_local(self) -> None:
        from ..llm.local_server import MessagesServer

        if self._server is None:
            self._server = MessagesServer().start()  # port 0: a free port, 127.0.0.1 only

    def _stop_local(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    @contextlib.contextmanager
    def serving(self) -> Iterator["LLMResource"]:
        """Outside Dagster (a notebook, a script): run the stand-in while the block runs."""
        started = self.base_url == LOCAL_BASE_URL and self._server is None
        if started:
            self._start_local()
        try:
            yield self
        finally:
            if started:
                self._stop_local()

    @property
    def is_local_standin(self) -> bool:
        return self.base_url == LOCAL_BASE_URL

    @property
    def endpoint(self) -> str | None:
        """The base URL the SDK talks to (None: api.anthropic.com)."""
        if self.base_url == LOCAL_BASE_URL:
            if self._server is None:
                raise RuntimeError("the local stand-in LLM is not running: use the resource in a Dagster step "
                                   "or inside `with llm.serving():`")
            return self._server.url
        return self.base_url

    def make_client(self, *, cache_store: Any, spent_before_usd: float = 0.0, spend_batch: str | None = None,
                    spend_attempt: str | None = None) -> "LLMClient":
        """A client for one batch: cache in ``cache_store`` (the object store), budget guard counting
        ``spent_before_usd`` (what earlier batches recorded, see ``llm.ledger.spent_in_store``); with
        ``spend_batch`` and ``spend_attempt`` each request's spend is recorded in the store before
        it is sent (``llm.ledger.SpendJournal``)."""
        from ..llm.client import LLMClient

        return LLMClient(
            models=dict(self.models), prices={m: dict(p) for m, p in self.prices_per_mtok.items()},
            max_tokens=dict(self.max_tokens), budget_usd=self.budget_usd, spent_before_usd=spent_before_usd,
            base_url=self.endpoint, cache_store=cache_store,
            # The stand-in needs no secret: never send a real key that happens to be set to it.
            api_key_env=None if self.is_local_standin else self.api_key_env,
            temperature=self.temperature, timeout_s=self.timeout_s, max_attempts=self.max_attempts,
            backoff_base_s=self.backoff_base_s, backoff_max_s=self.backoff_max_s,
            retry_after_cap_s=self.retry_after_cap_s, breaker_threshold=self.breaker_threshold,
            breaker_reset_s=self.breaker_reset_s, spend_batch=spend_batch, spend_attempt=spend_attempt,
            **({} if self.prompt_caching else {"cache_roles": ()}))

    def make_batch_runner(self, client: "LLMClient", store: Any) -> Any:
        """A Message Batches runner for ``client`` with its records in ``store``, or None when the
        profile turns message batches off (the judges and the scenario writer then call directly)."""
        if not self.message_batches:
            return None
        from ..llm.batches import MessageBatchRunner

        return MessageBatchRunner(client, store, poll_s=self.batch_poll_s,
                                  poll_max_s=max(self.batch_poll_s, self.batch_poll_max_s),
                                  max_resubmits=self.batch_max_resubmits)


class SynthSettings(profile_resource(SynthProfile, base=ServedResource)):
    """The profile's ``phases.synth`` section (config.SynthProfile, resolved over the catalog by
    `resolve_synth`), and ``phases.serving`` (the managed server exec_graded_pairs samples from)."""

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p


def synth_resources(profile: Profile) -> dict[str, Any]:
    """``{"llm": LLMResource, "synth": SynthSettings}`` from a profile's ``phases.llm`` / ``phases.synth``
    (each validated and merged over assets/synth.yaml; a bad section fails definitions loading)."""
    catalog = synth_catalog()
    source = profile_source(profile)  # each problem of a section names the profile's file
    llm = resolve_llm(profile.phases.get("llm"), catalog, source)
    synth = resolve_synth(profile.phases.get("synth"), catalog, source)
    return {"llm": LLMResource(**llm.model_dump()),
            "synth": SynthSettings(**synth.model_dump(), serving_json=serving_json(profile))}
