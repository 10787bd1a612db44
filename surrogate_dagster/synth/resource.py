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
from typing import TYPE_CHECKING, Any, Iterator, Optional

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from ..catalog.models import Profile
from ..inference.resource import ServedResource, serving_json
from ..paths import resolve_repo_path
if TYPE_CHECKING:  # the anthropic SDK takes seconds to import: only when a client is built
    from ..llm.client import LLMClient

from .config import LOCAL_BASE_URL, SynthProfile, resolve_llm, resolve_synth, synth_catalog


class LLMResource(ConfigurableResource):
    """Models, output caps, prices and budget of a deployment, and where its Messages API is."""

    models: dict[str, str]
    max_tokens: dict[str, int]
    prices_per_mtok: dict[str, dict[str, float]]
    budget_usd: float = 200.0
    base_url: Optional[str] = None  # None: Anthropic; "local": the stand-in; else that URL
    api_key_env: str = "ANTHROPIC_API_KEY"
    temperature: Optional[float] = None
    timeout_s: float = 600.0
    max_attempts: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_cap_s: float = 120.0
    breaker_threshold: int = 5
    breaker_reset_s: float = 60.0
    prompt_caching: bool = True
    message_batches: bool = True
    batch_poll_s: float = 1.0
    batch_poll_max_s: float = 300.0
    batch_max_resubmits: int = 1

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

    def make_client(self, *, cache_store: Any, spent_before_usd: float = 0.0) -> "LLMClient":
        """A client for one batch: cache in ``cache_store`` (the object store), budget guard counting
        ``spent_before_usd`` (what earlier batches recorded, see ``llm.ledger.spent_in_store``)."""
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
            breaker_reset_s=self.breaker_reset_s,
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


class SynthSettings(ServedResource):
    """The profile's ``phases.synth`` section (fields documented on config.SynthProfile), and
    ``phases.serving`` (the managed server exec_graded_pairs samples from)."""

    target_count: int = 500
    sample_rows: int = 20
    sample_traces: int = 3
    pair_sources: list[str] = ["opencodeinstruct", "opc_sft_stage2"]
    max_prompts_per_source: Optional[int] = None
    devsecops: bool = True
    max_devsecops_prompts: Optional[int] = None
    max_prompt_chars: int = 6000
    samples_per_prompt: int = 4
    temperature: float = 1.0
    max_new_tokens: int = 1024
    seed: int = 0
    max_prompts: Optional[int] = None
    min_margin: Optional[float] = None
    max_pairs_per_prompt: Optional[int] = None
    inject_pool: bool = False
    grader_workers: int = 2
    backend: str = "transformers"
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 8
    base_url: Optional[str] = None
    api_key_env: Optional[str] = None
    served_name: Optional[str] = None
    concurrency: int = 16
    model_dir: Optional[str] = None
    base_model_dir: Optional[str] = None
    work_dir: str = "var/work/synth"

    def profile(self) -> SynthProfile:
        """The settings as the validated, Dagster-free model."""
        return SynthProfile.model_validate({f: getattr(self, f) for f in SynthProfile.model_fields})

    def work_path(self, *parts: str) -> Path:
        p = resolve_repo_path(self.work_dir).joinpath(*parts)
        p.mkdir(parents=True, exist_ok=True)
        return p


def synth_resources(profile: Profile) -> dict[str, Any]:
    """``{"llm": LLMResource, "synth": SynthSettings}`` from a profile's ``phases.llm`` / ``phases.synth``
    (each validated and merged over assets/synth.yaml; a bad section fails definitions loading)."""
    catalog = synth_catalog()
    llm = resolve_llm(profile.phases.get("llm"), catalog)
    synth = resolve_synth(profile.phases.get("synth"), catalog)
    return {"llm": LLMResource(**llm.model_dump()),
            "synth": SynthSettings(**synth.model_dump(), serving_json=serving_json(profile))}
