"""The LLM resource's Dagster-free core: the real ``anthropic`` SDK plus what it lacks for batch
synthesis (PITFALLS: 2 retries by default, ``retry-after`` honoured only up to 60 s, no
idempotency key, so a retried POST can be billed twice).

- The SDK runs with ``max_retries=0``: this client owns retries, so each attempt passes the cache,
  the breaker and the budget guard.
- Cache by request hash (:mod:`.cache`): a re-run never pays twice; cache hits cost $0.
- Retries with exponential backoff and jitter on 408/409/429/5xx (529 included) and connection
  errors, honouring ``retry-after`` up to ``retry_after_cap_s``.
- A circuit breaker (:mod:`.breaker`) fails fast after N consecutive failed attempts.
- A cost ledger and budget guard (:mod:`.ledger`) stop before the budget could be exceeded.
- Prompt caching: the system prompt of the roles in ``cache_roles`` is sent as one text block with
  ``cache_control: {"type": "ephemeral"}``, so the tools and system prefix repeated on every call
  is billed as a cache read (0.1x input) after its first write (1.25x); the ledger prices both.
- Malformed replies (not JSON, unknown block types, no usage, or usage no reply to the request
  could have: more output tokens than ``max_tokens``, more input tokens than the request has
  bytes) raise :class:`MalformedReply`; they are counted, never cached, and booked at their
  worst-case cost (the reservation), never at the usage they claim.
- Durable spend: with a spend key (``spend_batch``, ``spend_attempt``) each request's worst case
  is written to the store before it is sent and its cost goes into the same store write as the
  cached reply (:class:`~.ledger.SpendJournal`), so a killed process or a full disk never leaves
  a billed reply unbooked; a reply later served from the cache costs $0 (it was booked once).
- The worst case covers the tool-use system prompt the API adds to every request with tools
  (:func:`tool_use_system_tokens`).

The same code talks to the local stand-in server (``base_url=http://127.0.0.1:PORT``) in the
local profile. The API key is read from the environment variable NAMED by ``api_key_env``; it is
never logged. Text from the server (error bodies, unusable replies, connection errors) passes
:func:`scrub` before it reaches an exception, a log line or the breaker: a gateway that echoes the
request headers must not put the key into Dagster's event log. Errors are raised outside the
``except`` that caught the SDK's exception, so no exception chain carries the raw body either.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


from ..scrub import scrub_text
from .breaker import CircuitBreaker, CircuitOpenError
from .cache import BytesStore, ResponseCache, canonical_json, request_key
from .ledger import BudgetExceeded, CostLedger, SpendJournal

log = logging.getLogger(__name__)

__all__ = ["LLMClient", "LLMResponse", "LLMError", "MalformedReply", "RetriesExhausted",
           "CircuitOpenError", "BudgetExceeded"]

RETRYABLE_STATUS = {408, 409, 429}  # plus every status >= 500 (529 "overloaded" included)
LOCAL_KEY = "local-stand-in-no-key"  # sent to a local server only; the stand-in needs no secret

# The tool-use system prompt the API adds to a request with tools, billed as input tokens
# (Anthropic, "Tool use pricing"): (model id prefix, tokens with tool_choice auto/none, with
# any/tool). A model not listed gets the largest documented figure, so its reservation still
# covers the prompt.
TOOL_USE_SYSTEM_TOKENS = (
    ("claude-opus-4", 346, 313), ("claude-sonnet-4", 346, 313), ("claude-haiku-4", 346, 313),
    ("claude-3-7-sonnet", 346, 313), ("claude-3-5-sonnet", 346, 313), ("claude-3-5-haiku", 264, 340),
    ("claude-3-opus", 530, 281), ("claude-3-sonnet", 159, 235), ("claude-3-haiku", 264, 340),
)
UNLISTED_TOOL_USE_TOKENS = (max(r[1] for r in TOOL_USE_SYSTEM_TOKENS), max(r[2] for r in TOOL_USE_SYSTEM_TOKENS))
# Framing tokens the API adds around the request's own text (roles, turn markers): a slack on top
# of one token per byte, so an honest reply never fails the input-usage bound.
INPUT_FRAMING_TOKENS = 1024
FRAMING_TOKENS_PER_MESSAGE = 16


def tool_use_system_tokens(model: str, tool_choice: dict | None) -> int:
    """Tokens of the tool-use system prompt for ``model`` with ``tool_choice`` (see above)."""
    forced = (tool_choice or {}).get("type") in ("any", "tool")
    for prefix, auto, forced_n in TOOL_USE_SYSTEM_TOKENS:
        if model.startswith(prefix):
            return forced_n if forced else auto
    return UNLISTED_TOOL_USE_TOKENS[1] if forced else UNLISTED_TOOL_USE_TOKENS[0]


# A credential after an auth scheme or in an auth header, as text, JSON or a Python repr:
# ``Bearer X``, ``x-api-key: X``, ``"authorization": "Basic X"``, ``'api_key': 'X'``.
_HEADER_SECRET = re.compile(
    r"(?i)(\b(?:bearer|basic)\s+"
    r"|\b(?:x-api-key|api[-_]?key|(?:proxy-)?authorization|cookie|set-cookie)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic)\s+)?)"
    r"([^\s\"'<>,;}\]]+)")
KEY_WINDOW = 16  # a run of this many characters of the key anywhere in the text is redacted
_secret_sanitizer = None


def _sanitizer():
    # The curation sanitizer's secret rules (cloud, VCS, SaaS keys, private keys, JWTs, passwords);
    # no NER. Built on first use: most runs never see an error body.
    global _secret_sanitizer
    if _secret_sanitizer is None:
        from ..sanitize import SECRET_CATEGORIES, Sanitizer, SanitizerConfig

        _secret_sanitizer = Sanitizer(SanitizerConfig(categories=SECRET_CATEGORIES, ner_model=None))
    return _secret_sanitizer


def _redact_key(text: str, key: str) -> str:
    """Every run of ``KEY_WINDOW``+ characters of ``key`` in ``text`` (the whole key, or a cut or
    truncated piece of it) becomes ``<REDACTED_API_KEY>``."""
    width = min(KEY_WINDOW, len(key))
    if not width:
        return text
    hit = bytearray(len(text))
    for i in range(len(key) - width + 1):
        window, at = key[i:i + width], text.find(key[i:i + width])
        while at != -1:
            hit[at:at + width] = b"\x01" * width
            at = text.find(window, at + 1)
    if not any(hit):
        return text
    out, i = [], 0
    while i < len(text):
        if hit[i]:
            while i < len(text) and hit[i]:
                i += 1
            out.append("<REDACTED_API_KEY>")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the given secret values (any 16-character piece of them), credentials after
    ``Bearer``/``Basic`` and in auth headers, and whatever the sanitizer's secret rules find
    replaced by placeholders. Used on all server-provided text before it is kept anywhere. The
    project's scrubber goes first: every registered secret, and these, in plain, base64, hex and
    URL-encoded forms (:mod:`..scrub`)."""
    text = scrub_text(text, extra=secrets)
    for secret in secrets:
        if secret:
            text = _redact_key(text, secret)
    # A bare scheme word is what is left when the credential after it is already a placeholder.
    text = _HEADER_SECRET.sub(lambda m: m.group(0) if m.group(2).lower() in ("bearer", "basic")
                              else m.group(1) + "<REDACTED>", text)
    return _sanitizer().sanitize(text).text


def _status_error_text(exc: Any) -> str:
    """The raw error body of an SDK status error (its ``message`` repeats it as a parsed dict)."""
    try:
        return exc.response.text
    except Exception:
        return str(getattr(exc, "message", "") or "")


class LLMError(RuntimeError):
    """A request that failed for good (non-retryable status, or after all retries)."""


class MalformedReply(LLMError):
    """The server answered 200 with something that is not a usable Messages API reply."""


class RetriesExhausted(LLMError):
    """Every attempt failed with a retryable error."""


@dataclass(frozen=True)
class LLMResponse:
    """A normalized reply: content blocks as plain dicts (``text`` / ``tool_use``) and its cost."""

    role: str
    model: str
    served_by: str  # the ``model`` field of the reply (the stand-in names itself there)
    content: list[dict]
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cached: bool
    request_key: str
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    batched: bool = False

    @property
    def text(self) -> str:
        """All text blocks joined by blank lines."""
        return "\n\n".join(b["text"] for b in self.content if b["type"] == "text" and b["text"].strip())

    @property
    def tool_uses(self) -> list[dict]:
        """The ``tool_use`` blocks, in order."""
        return [b for b in self.content if b["type"] == "tool_use"]


def normalize_reply(body: Any, max_tokens: int | None = None, max_input_tokens: int | None = None) -> dict:
    """Validate a Messages API reply body and keep only what we use; MalformedReply otherwise.

    With ``max_tokens`` (the request's) and ``max_input_tokens`` (:meth:`LLMClient.input_token_bound`)
    usage that no reply to the request could have is corrupt: it is refused, never priced."""
    if not isinstance(body, dict) or body.get("type") != "message":
        raise MalformedReply(f"reply is not a message object: {str(body)[:120]!r}")
    content = body.get("content")
    if not isinstance(content, list):
        raise MalformedReply("reply.content is not a list")
    blocks: list[dict] = []
    for i, b in enumerate(content):
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text" and isinstance(b.get("text"), str):
            blocks.append({"type": "text", "text": b["text"]})
        elif kind == "tool_use" and isinstance(b.get("id"), str) and isinstance(b.get("name"), str) \
                and isinstance(b.get("input"), dict):
            blocks.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]})
        else:
            raise MalformedReply(f"reply.content[{i}] is not a valid text/tool_use block: {str(b)[:120]!r}")
    usage = body.get("usage") or {}
    if not all(isinstance(usage.get(k), int) and usage[k] >= 0 for k in ("input_tokens", "output_tokens")):
        raise MalformedReply(f"reply.usage lacks token counts: {usage!r}")
    extra = {}
    for k in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        v = usage.get(k)
        if v is None:  # absent or null: no caching happened on this call
            continue
        if not isinstance(v, int) or v < 0:
            raise MalformedReply(f"reply.usage.{k} is not a token count: {v!r}")
        if v:
            extra[k] = v
    if max_tokens is not None and usage["output_tokens"] > max_tokens:
        raise MalformedReply(f"reply.usage is corrupt: {usage['output_tokens']} output tokens for max_tokens "
                             f"{max_tokens}")
    n_input = usage["input_tokens"] + sum(extra.values())
    if max_input_tokens is not None and n_input > max_input_tokens:
        raise MalformedReply(f"reply.usage is corrupt: {n_input} input tokens for a request of at most "
                             f"{max_input_tokens}")
    return {"id": body.get("id"), "model": body.get("model"), "content": blocks,
            "stop_reason": body.get("stop_reason"),
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"], **extra}}


def usage_cost_args(usage: dict) -> tuple[int, int, int, int]:
    """(input, output, cache write, cache read) tokens of a normalized reply's usage."""
    return (usage["input_tokens"], usage["output_tokens"], usage.get("cache_creation_input_tokens", 0),
            usage.get("cache_read_input_tokens", 0))


class LLMClient:
    """Anthropic Messages client with cache, retries, breaker, ledger and budget guard.

    ``models`` maps roles (``planner``, ``subagent``, ``judge``...) to model ids; ``max_tokens`` is
    one int or a role -> int map; ``prices`` maps model ids to ``{"input": $/MTok, "output": $/MTok}``.
    One client per batch: its ledger is that batch's ledger.
    """

    def __init__(self, *, models: dict[str, str], prices: dict[str, Any], max_tokens: int | dict[str, int] = 4096,
                 budget_usd: float = 200.0, spent_before_usd: float = 0.0, base_url: str | None = None,
                 api_key_env: str | None = "ANTHROPIC_API_KEY", cache_store: BytesStore | str | None = None,
                 temperature: float | None = None, timeout_s: float = 600.0, max_attempts: int = 6,
                 backoff_base_s: float = 1.0, backoff_max_s: float = 60.0, retry_after_cap_s: float = 120.0,
                 breaker_threshold: int = 5, breaker_reset_s: float = 60.0, chars_per_token: float = 3.0,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 http_client: Any = None,
                 cache_roles: tuple[str, ...] = ("planner", "simulator", "judge", "judge_2", "scenario_writer"),
                 spend_batch: str | None = None, spend_attempt: str | None = None,
                 ) -> None:
        if not models:
            raise ValueError("models must map at least one role to a model id")
        self.models = dict(models)
        self.max_tokens = max_tokens
        self.ledger = CostLedger(prices, budget_usd=budget_usd, spent_before_usd=spent_before_usd)
        for role, model in self.models.items():
            self.ledger.price(model)  # fail at construction, not mid-batch, on a missing price
            self._max_tokens_for(role)
        self.temperature = temperature
        # Roles whose system prompt repeats across calls; the subagent's names its role, so a cache
        # write there would rarely be read back and would cost 1.25x for nothing.
        self.cache_roles = frozenset(cache_roles)
        self.cache = ResponseCache(cache_store) if cache_store is not None else None
        if (spend_batch is None) != (spend_attempt is None):
            raise ValueError("spend_batch and spend_attempt go together")
        if spend_batch is not None:
            if self.cache is None:
                raise ValueError("durable spend records need a store: pass cache_store")
            self.ledger.journal = SpendJournal(self.cache.store, spend_batch, spend_attempt)
        self.breaker = CircuitBreaker(breaker_threshold, breaker_reset_s)
        self.max_attempts = max_attempts
        self.backoff_base_s, self.backoff_max_s = backoff_base_s, backoff_max_s
        self.retry_after_cap_s = retry_after_cap_s
        self.chars_per_token = chars_per_token
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._by_role: dict[str, dict[str, int]] = {}  # billed calls and tokens per role (call kind)
        self._key_locks: dict[str, threading.Lock] = {}
        self._key_locks_guard = threading.Lock()
        self.base_url = base_url
        api_key = self._resolve_key(api_key_env, base_url)
        # Redacted from every server-provided text this client keeps (see :func:`scrub`).
        self._secrets = (api_key,) if api_key != LOCAL_KEY else ()
        # max_retries=0: the SDK must not retry behind our back (no idempotency key, no ledger).
        import anthropic  # imported here: the SDK costs seconds at definitions load time

        self._sdk = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                        **({"http_client": http_client} if http_client is not None else {}))

    @staticmethod
    def _resolve_key(api_key_env: str | None, base_url: str | None) -> str:
        if api_key_env:
            value = os.environ.get(api_key_env)
            if value:
                return value
        if base_url and base_url.startswith(("http://127.0.0.1", "http://localhost")):
            return LOCAL_KEY
        raise LLMError(f"no API key: set the environment variable {api_key_env or '(api_key_env unset)'} "
                       f"(the production profile reads the key from it), or point base_url at a local server")

    @property
    def backend(self) -> str:
        """"anthropic" or the local base URL, for trace metadata."""
        return self.base_url or "anthropic"

    def _max_tokens_for(self, role: str) -> int:
        if isinstance(self.max_tokens, int):
            return self.max_tokens
        try:
            return int(self.max_tokens[role])
        except KeyError:
            raise KeyError(f"no max_tokens configured for role {role!r}") from None

    def model_for(self, role: str) -> str:
        """The model id configured for ``role``."""
        try:
            return self.models[role]
        except KeyError:
            raise KeyError(f"no model configured for role {role!r}; roles: {sorted(self.models)}") from None

    def _key_lock(self, key: str) -> threading.Lock:
        # Two threads asking the same thing at once must not both pay: the second waits, then hits.
        with self._key_locks_guard:
            return self._key_locks.setdefault(key, threading.Lock())

    def complete(self, role: str, *, system: str, messages: list[dict], tools: list[dict] | None = None,
                 tool_choice: dict | None = None, temperature: float | None = None,
                 max_tokens: int | None = None, progress: dict | None = None) -> LLMResponse:
        """One Messages API call for ``role``, through cache, budget guard, breaker and retries.

        ``progress`` (e.g. ``{"scenarios_done": 3}``) is attached to BudgetExceeded so the caller
        can say how far it got. Raises BudgetExceeded, CircuitOpenError, MalformedReply,
        RetriesExhausted or LLMError; never returns a partial reply.
        """
        request = self.build_request(role, system=system, messages=messages, tools=tools,
                                     tool_choice=tool_choice, temperature=temperature, max_tokens=max_tokens)
        return self.send(role, request, progress)

    def send(self, role: str, request: dict, progress: dict | None = None) -> LLMResponse:
        """One direct call of a request built by :meth:`build_request` (cache, guard, retries)."""
        model = request["model"]
        key = request_key(request)
        with self._key_lock(key):
            hit = self.cached_response(role, request, key)
            if hit is not None:
                return hit
            body = self._call_with_retries(request, progress, key)
            cost, ref = body.pop("_cost"), body.pop("_reservation")
            self._count_role(role, body["usage"], batched=False)
            self._store_reply(key, body, model, cost, ref, batch=False)
            return self._response(role, model, body, cost, False, key)

    def _store_reply(self, key: str, body: dict, model: str, cost: float, ref: str | None, batch: bool) -> None:
        """Cache a billed reply with its cost (one write); without a cache, settle the record."""
        if self.cache is not None:
            self.cache.put(key, body, model, spend={"usd": cost, "batch": batch, "reservation": ref})
        elif ref is not None and self.ledger.journal is not None:
            self.ledger.journal.settle(ref, cost)

    def build_request(self, role: str, *, system: str, messages: list[dict], tools: list[dict] | None = None,
                      tool_choice: dict | None = None, temperature: float | None = None,
                      max_tokens: int | None = None) -> dict[str, Any]:
        """The Messages API request for ``role`` (its hash is the cache key and the batch custom_id)."""
        model = self.model_for(role)
        sys_field: Any = system
        if system and role in self.cache_roles:
            # Anthropic caches the prefix tools -> system up to the block marked here.
            sys_field = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        # anthropic 2.14's messages.create() has no ``temperature`` kwarg: by default none is sent
        # (the API's default sampling); a configured one travels in ``extra_body``.
        return {
            "model": model, "system": sys_field, "messages": messages, "tools": tools or None,
            "tool_choice": tool_choice, "max_tokens": max_tokens or self._max_tokens_for(role),
            "temperature": self.temperature if temperature is None else temperature,
        }

    def cached_response(self, role: str, request: dict, key: str) -> LLMResponse | None:
        """The response-cache hit for ``request`` (counted in the ledger at $0), or None."""
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        u = hit["usage"]
        self.ledger.cache_hit(request["model"], u["input_tokens"], u["output_tokens"])
        return self._response(role, request["model"], hit, 0.0, True, key)

    def _response(self, role: str, model: str, body: dict, cost: float, cached: bool, key: str,
                  batched: bool = False) -> LLMResponse:
        u = body["usage"]
        return LLMResponse(role=role, model=model, served_by=str(body.get("model")), content=body["content"],
                           stop_reason=body.get("stop_reason"), input_tokens=u["input_tokens"],
                           output_tokens=u["output_tokens"], cost_usd=cost, cached=cached, request_key=key,
                           cache_creation_input_tokens=u.get("cache_creation_input_tokens", 0),
                           cache_read_input_tokens=u.get("cache_read_input_tokens", 0), batched=batched)

    def _count_role(self, role: str, usage: dict, batched: bool) -> None:
        with self._key_locks_guard:
            c = self._by_role.setdefault(role, {"calls": 0, "batched_calls": 0, "input_tokens": 0, "output_tokens": 0,
                                                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
            c["calls"] += 1
            c["batched_calls"] += int(batched)
            for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
                c[k] += int(usage.get(k, 0))

    def usage_by_role(self) -> dict[str, dict[str, int]]:
        """Billed calls and tokens per role (call kind) so far; response-cache hits are not counted."""
        with self._key_locks_guard:
            return {r: dict(c) for r, c in sorted(self._by_role.items())}

    @property
    def sdk(self) -> Any:
        """The ``anthropic.Anthropic`` client (``max_retries=0``) for endpoints this class does not wrap."""
        return self._sdk

    @staticmethod
    def api_params(request: dict) -> dict:
        """A request as the API's JSON body (fields left unset are not sent)."""
        return {k: v for k, v in request.items() if v is not None}

    def book_response(self, role: str, request: dict, key: str, body: dict, reserved: float,
                      batch: bool, reservation: str | None = None, adopted: bool = False) -> LLMResponse:
        """Settle a reservation with a reply obtained outside :meth:`send` (a batch result) and
        cache it with its cost; ``reservation`` is its durable record, ``adopted`` when an earlier
        attempt wrote that record (see :meth:`CostLedger.settle`)."""
        cost = self.ledger.settle(reserved, request["model"], *usage_cost_args(body["usage"]), batch=batch,
                                  adopted=adopted)
        self._count_role(role, body["usage"], batched=batch)
        self._store_reply(key, body, request["model"], cost, reservation, batch=batch)
        return self._response(role, request["model"], body, cost, False, key, batched=batch)

    def reserve_durably(self, key: str, request: dict, progress: dict | None = None, *,
                        batch: bool = False) -> tuple[float, str | None]:
        """Reserve ``request``'s worst case with the guard, then in the journal (when kept):
        (amount, record key). A failed journal write gives the reservation back and raises, so
        nothing unbooked is sent."""
        model = request["model"]
        reserved = self.ledger.reserve(model, self.estimate_input_tokens(request), request["max_tokens"], progress,
                                       cached_prefix=self.has_cached_prefix(request), batch=batch)
        journal = self.ledger.journal
        if journal is None:
            return reserved, None
        try:
            return reserved, journal.reserve(key, model, reserved, batch)
        except BaseException:
            self.ledger.release(reserved)
            raise

    def release_durably(self, reserved: float, ref: str | None, reason: str) -> None:
        """An unbilled outcome (error status, expired batch item): reservation and record dropped."""
        self.ledger.release(reserved)
        if ref is not None and self.ledger.journal is not None:
            self.ledger.journal.release(ref, reason)

    def uncertain_durably(self, reserved: float, ref: str | None, model: str, reason: str) -> None:
        """Possibly billed, no usable usage: the worst case is kept as spend, in memory and on record."""
        self.ledger.book_uncertain(reserved, model, reason)
        if ref is not None and self.ledger.journal is not None:
            self.ledger.journal.mark_uncertain(ref, reason)

    def scrub_text(self, text: str) -> str:
        """``text`` with this client's key and any credential redacted (see :func:`scrub`)."""
        return self._scrub(text)

    @staticmethod
    def has_cached_prefix(request: dict) -> bool:
        """True when the request marks a prompt-cache breakpoint (its worst case is a cache write)."""
        return isinstance(request.get("system"), list) and any(
            isinstance(b, dict) and b.get("cache_control") for b in request["system"])

    def estimate_input_tokens(self, request: dict) -> int:
        """Conservative input-token estimate for the guard: characters / ``chars_per_token``, plus
        the tool-use system prompt when the request has tools."""
        text = canonical_json([request.get("system"), request["messages"], request.get("tools")])
        tools = tool_use_system_tokens(request["model"], request.get("tool_choice")) if request.get("tools") else 0
        return math.ceil(len(text) / self.chars_per_token) + tools

    @staticmethod
    def input_token_bound(request: dict) -> int:
        """The most input tokens a reply to ``request`` can report: one per byte of its text (a
        token is at least a byte), the tool-use system prompt and framing slack."""
        text = canonical_json([request.get("system"), request["messages"], request.get("tools")])
        tools = UNLISTED_TOOL_USE_TOKENS[0] + UNLISTED_TOOL_USE_TOKENS[1] if request.get("tools") else 0
        return (len(text.encode()) + tools + INPUT_FRAMING_TOKENS
                + FRAMING_TOKENS_PER_MESSAGE * len(request.get("messages") or []))

    def backoff_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry ``attempt`` + 1 (``retry-after`` capped, else jittered backoff)."""
        return self._backoff(attempt, retry_after)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap_s)
        # Exponential backoff with "equal jitter": at least half the step, so retries still spread.
        step = min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt))
        return step / 2 + self._rng.uniform(0, step / 2)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _call_with_retries(self, request: dict, progress: dict | None, key: str) -> dict:
        import anthropic

        model = request["model"]
        api_kwargs = {k: v for k, v in request.items() if v is not None and k != "temperature"}
        if request.get("temperature") is not None:
            api_kwargs["extra_body"] = {"temperature": request["temperature"]}
        bound = self.input_token_bound(request)
        last = ""
        for attempt in range(self.max_attempts):
            self.breaker.before_call()  # raises CircuitOpenError: nothing is sent while open
            reserved, ref = self.reserve_durably(key, request, progress)
            retry_after: float | None = None
            fatal = malformed = None  # scrubbed messages, raised after the except blocks
            body = None
            outcome: tuple[str, str] | None = None  # the journal record's rewrite, done after the except blocks
            try:
                raw = self._sdk.messages.with_raw_response.create(**api_kwargs)
                try:
                    data = json.loads(raw.http_response.text)
                except ValueError as exc:
                    malformed = f"{model}: reply is not JSON: {exc}"
                else:
                    try:
                        body = normalize_reply(data, request["max_tokens"], bound)
                    except MalformedReply as exc:
                        malformed = str(exc)
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                self.ledger.release(reserved)  # an error status is not billed
                outcome = ("released", f"HTTP {status}")
                detail = self._scrub(_status_error_text(exc))
                if status not in RETRYABLE_STATUS and status < 500:
                    fatal = f"{model}: HTTP {status} (not retryable): {detail[:200]}"
                else:
                    last = f"HTTP {status}: {detail[:120]}"
                    retry_after = _retry_after_seconds(exc.response.headers)
            except anthropic.APIConnectionError as exc:
                # A timeout or dropped connection may have been processed and billed (no idempotency key).
                self.ledger.book_uncertain(reserved, model, "connection")
                outcome = ("uncertain", "connection")
                last = self._scrub(f"{type(exc).__name__}: {exc}")[:200]
                status = "connection"
            if outcome is not None and ref is not None:
                (self.ledger.journal.release if outcome[0] == "released" else self.ledger.journal.mark_uncertain)(
                    ref, outcome[1])
            if fatal is not None:
                raise LLMError(fatal)
            if malformed is not None:
                # Possibly billed, unusable: book the worst case, count it, never cache it.
                malformed = self._scrub(malformed)
                self.uncertain_durably(reserved, ref, model, "malformed")
                self.ledger.count("malformed")
                self.breaker.record_failure(f"malformed reply: {malformed}")
                raise MalformedReply(malformed)
            if body is not None:
                cost = self.ledger.settle(reserved, model, *usage_cost_args(body["usage"]))
                self.breaker.record_success()
                body["_cost"], body["_reservation"] = cost, ref
                return body
            self.ledger.count(f"retries_{status}")
            if self.breaker.record_failure(last):
                raise CircuitOpenError(f"circuit opened after {self.breaker.failure_threshold} consecutive "
                                       f"failed LLM attempts (last: {last}); failing fast")
            if attempt + 1 < self.max_attempts:
                delay = self._backoff(attempt, retry_after)
                log.warning("LLM %s attempt %d failed (%s); retrying in %.2fs", model, attempt + 1, last, delay)
                self._sleep(delay)
        raise RetriesExhausted(f"{model}: {self.max_attempts} attempts failed, last: {last}")


def _retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds) from a reply, None when absent or unparsable."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue  # an HTTP-date retry-after: fall back to our own backoff
    return None
