"""Cost ledger and budget guard for LLM calls.

The ledger counts tokens and dollars per model for one batch (one Dagster partition); its summary
goes into the partition's metadata and, through :func:`record_batch_spend`, into the object store so
later batches know what earlier ones spent. The guard stops BEFORE a request could push the total
past the budget: each request reserves its worst case (estimated input tokens at the input price
plus ``max_tokens`` at the output price) and the reservation is settled with the real usage.

Prompt caching and the Message Batches API change the price of a call (Anthropic pricing docs):
a cache write costs ``CACHE_WRITE_MULTIPLIER`` (1.25) times the input price (5-minute cache), a cache
read ``CACHE_READ_MULTIPLIER`` (0.1) times, and every token of a batched request is billed at
``BATCH_DISCOUNT`` (50%) of the list price. :meth:`Price.cost` applies them.

Spend whose billing is unknown (a timeout or dropped connection after the request was sent, a
malformed reply) is booked at the worst case as ``uncertain_usd``: the API may have billed it, and
a budget that ignored it could be overrun.

Durable spend (:class:`SpendJournal`): before a request is sent its worst case is written to the
store as a reservation record, ``llm-spend/<batch>/<attempt>/<request key>.<nonce>.json``; the
reply's cost is written in the same store write as the cached reply (the response-cache envelope
names the reservation it settles), and an error status that is never billed rewrites the record
as released. A process killed at any point therefore leaves either a settled cost (found through
the cache entry) or a worst-case reservation, never less than what was billed. At the end of an
attempt :func:`record_batch_spend` compacts its records into one summary (``journal`` in the
attempt's summary), and readers (:func:`spent_in_store`, :func:`booked_usd`) then use the summary
instead of the records; an attempt that was killed before that is read record by record.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .cache import BytesStore, ResponseCache, canonical_json

log = logging.getLogger(__name__)

LEDGER_PREFIX = "llm-ledger"
SPEND_PREFIX = "llm-spend"
CACHE_WRITE_MULTIPLIER = 1.25  # 5-minute ephemeral cache write, times the base input price
CACHE_READ_MULTIPLIER = 0.1    # cache hit / refresh, times the base input price
BATCH_DISCOUNT = 0.5           # Message Batches API: half the list price on input and output


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input_per_mtok: float
    output_per_mtok: float
    cache_write_per_mtok: float | None = None  # None: CACHE_WRITE_MULTIPLIER x input
    cache_read_per_mtok: float | None = None   # None: CACHE_READ_MULTIPLIER x input

    def cost(self, input_tokens: int, output_tokens: int, cache_write_tokens: int = 0, cache_read_tokens: int = 0,
             batch: bool = False) -> float:
        """Dollars for the given token counts. ``input_tokens`` are the uncached input tokens (the
        API's ``usage.input_tokens``); cache writes and reads at the model's own cache prices where
        the price list gives them, else with the standard multipliers; ``batch`` applies the
        Message Batches discount to all of it."""
        write = self.cache_write_per_mtok if self.cache_write_per_mtok is not None \
            else self.input_per_mtok * CACHE_WRITE_MULTIPLIER
        read = self.cache_read_per_mtok if self.cache_read_per_mtok is not None \
            else self.input_per_mtok * CACHE_READ_MULTIPLIER
        usd = (input_tokens * self.input_per_mtok
               + cache_write_tokens * write
               + cache_read_tokens * read
               + output_tokens * self.output_per_mtok) / 1e6
        return usd * BATCH_DISCOUNT if batch else usd

    @classmethod
    def parse(cls, model: str, value: Any) -> "Price":
        """From ``{"input": 4, "output": 20}`` (per MTok; optional ``cache_write``, ``cache_read``)
        or a Price; clear error otherwise."""
        if isinstance(value, Price):
            return value
        if isinstance(value, dict) and {"input", "output"} <= set(value):
            inp, out = float(value["input"]), float(value["output"])
            cw, cr = (None if value.get(k) is None else float(value[k]) for k in ("cache_write", "cache_read"))
            if min(inp, out, *(x for x in (cw, cr) if x is not None)) < 0:
                raise ValueError(f"price for {model!r} is negative: {value}")
            return cls(inp, out, cw, cr)
        raise ValueError(f"price for {model!r} must be {{'input': $/MTok, 'output': $/MTok}}, got {value!r}")


class BudgetExceeded(RuntimeError):
    """The next request could exceed the budget; nothing was sent. Says how far the run got."""

    def __init__(self, message: str, *, spent_usd: float, budget_usd: float, next_worst_usd: float,
                 progress: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.spent_usd = spent_usd
        self.budget_usd = budget_usd
        self.next_worst_usd = next_worst_usd
        self.progress = dict(progress or {})


class CostLedger:
    """Thread-safe token and dollar counts of one batch, plus a budget guard across batches.

    ``spent_before_usd`` is what earlier batches spent (see :func:`spent_in_store`); the guard
    compares ``spent_before + billed + uncertain + in-flight reservations + next worst case``
    with ``budget_usd``.
    """

    def __init__(self, prices: dict[str, Any], budget_usd: float = 200.0, spent_before_usd: float = 0.0) -> None:
        if budget_usd <= 0:
            raise ValueError(f"budget_usd must be positive, got {budget_usd}")
        self.prices = {m: Price.parse(m, p) for m, p in prices.items()}
        self.budget_usd = float(budget_usd)
        self.spent_before_usd = float(spent_before_usd)
        self._lock = threading.Lock()
        self._by_model: dict[str, Counter] = {}
        self._billed_usd = 0.0
        self._uncertain_usd = 0.0
        self._reserved_usd = 0.0
        self._adopted_usd = 0.0
        self.counts: Counter = Counter()  # calls, cache_hits, retries_<status>, malformed, budget_stops
        self.journal: SpendJournal | None = None  # durable reservations, when the client has a spend key

    def price(self, model: str) -> Price:
        """The configured price of ``model``; a model without a price is a configuration error."""
        try:
            return self.prices[model]
        except KeyError:
            raise KeyError(f"no price configured for model {model!r}; known: {sorted(self.prices)}") from None

    @property
    def spent_usd(self) -> float:
        """Spent so far including earlier batches and uncertain spend (not reservations)."""
        with self._lock:
            return self.spent_before_usd + self._billed_usd + self._uncertain_usd

    def reserve(self, model: str, est_input_tokens: int, max_tokens: int, progress: dict | None = None, *,
                cached_prefix: bool = False, batch: bool = False) -> float:
        """Reserve the worst-case cost of the next request or raise :class:`BudgetExceeded`.

        With ``cached_prefix`` the worst case prices every input token as a cache write (1.25x);
        ``batch`` applies the batch discount. Returns the reserved amount, to pass to
        :meth:`settle` / :meth:`release`.
        """
        if cached_prefix:
            worst = self.price(model).cost(0, max_tokens, cache_write_tokens=est_input_tokens, batch=batch)
        else:
            worst = self.price(model).cost(est_input_tokens, max_tokens, batch=batch)
        with self._lock:
            committed = self.spent_before_usd + self._billed_usd + self._uncertain_usd + self._reserved_usd
            if committed + worst > self.budget_usd:
                self.counts["budget_stops"] += 1
                raise BudgetExceeded(
                    f"budget guard: ${committed:.4f} spent or in flight of ${self.budget_usd:.2f}; the next "
                    f"{model} request could cost up to ${worst:.4f}, so it was not sent",
                    spent_usd=committed, budget_usd=self.budget_usd, next_worst_usd=worst, progress=progress)
            self._reserved_usd += worst
        return worst

    def release(self, reserved: float) -> None:
        """Drop a reservation whose request was never billed (e.g. a 429 or 529 reply)."""
        with self._lock:
            self._reserved_usd = max(0.0, self._reserved_usd - reserved)

    def settle(self, reserved: float, model: str, input_tokens: int, output_tokens: int,
               cache_write_tokens: int = 0, cache_read_tokens: int = 0, batch: bool = False,
               adopted: bool = False) -> float:
        """Replace a reservation by the billed cost of a successful reply; returns that cost.

        ``adopted``: the reply settles a reservation an earlier attempt made durable (a resumed
        Message Batch); that attempt's record books the cost, so it is counted apart here
        (``adopted_usd``) and not billed a second time."""
        cost = self.price(model).cost(input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, batch)
        with self._lock:
            self._reserved_usd = max(0.0, self._reserved_usd - reserved)
            if adopted:
                self._adopted_usd += cost
                self.counts["adopted_calls"] += 1
                return cost
            self._billed_usd += cost
            c = self._by_model.setdefault(model, Counter())
            c["calls"] += 1
            c["input_tokens"] += input_tokens
            c["output_tokens"] += output_tokens
            if cache_write_tokens:
                c["cache_creation_input_tokens"] += cache_write_tokens
            if cache_read_tokens:
                c["cache_read_input_tokens"] += cache_read_tokens
            if batch:
                c["batch_calls"] += 1
            c["usd"] += cost
            self.counts["calls"] += 1
            if batch:
                self.counts["batch_calls"] += 1
        return cost

    def book_uncertain(self, reserved: float, model: str, reason: str) -> None:
        """Keep a reservation as spend: the request may have been billed but we got no usage."""
        with self._lock:
            self._reserved_usd = max(0.0, self._reserved_usd - reserved)
            self._uncertain_usd += reserved
            self._by_model.setdefault(model, Counter())["uncertain_usd"] += reserved
            self.counts[f"uncertain_{reason}"] += 1

    def cache_hit(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Count a response served from the cache: $0, tokens kept apart from billed ones."""
        with self._lock:
            c = self._by_model.setdefault(model, Counter())
            c["cache_hits"] += 1
            c["cached_output_tokens"] += output_tokens
            c["cached_input_tokens"] += input_tokens
            self.counts["cache_hits"] += 1

    def count(self, event: str, n: int = 1) -> None:
        """Count an event (retries per status, malformed replies, breaker trips...)."""
        with self._lock:
            self.counts[event] += n

    def summary(self) -> dict[str, Any]:
        """JSON-ready totals: tokens and dollars per model, cache hits, retries, budget position."""
        with self._lock:
            by_model = {m: {k: (round(v, 6) if isinstance(v, float) else v) for k, v in c.items()}
                        for m, c in sorted(self._by_model.items())}
            billed, uncertain, in_flight = self._billed_usd, self._uncertain_usd, self._reserved_usd
            counts = dict(sorted(self.counts.items()))
            adopted = self._adopted_usd
        extra: dict[str, Any] = {}
        if self.journal is not None:
            # What this attempt's own reservation records add up to; requests still in flight
            # (a Message Batch not collected yet) at their worst case.
            # Not rounded: readers add these up against what the API billed, cent fractions included.
            extra["journal"] = {"prefix": self.journal.prefix, "records": self.journal.records,
                                "usd": billed + uncertain + in_flight}
        if adopted:
            extra["adopted_usd"] = round(adopted, 6)
        if in_flight:
            extra["in_flight_usd"] = round(in_flight, 6)
        return {
            "by_model": by_model,
            "input_tokens": sum(c.get("input_tokens", 0) for c in by_model.values()),
            "output_tokens": sum(c.get("output_tokens", 0) for c in by_model.values()),
            "cache_creation_input_tokens": sum(c.get("cache_creation_input_tokens", 0) for c in by_model.values()),
            "cache_read_input_tokens": sum(c.get("cache_read_input_tokens", 0) for c in by_model.values()),
            "billed_usd": round(billed, 6),
            "uncertain_usd": round(uncertain, 6),
            "batch_usd": round(billed + uncertain, 6),
            "spent_before_usd": round(self.spent_before_usd, 6),
            "spent_total_usd": round(self.spent_before_usd + billed + uncertain, 6),
            "budget_usd": self.budget_usd,
            "counts": counts,
            **extra,
        }


def _ledger_key(batch_key: str) -> str:
    return f"{LEDGER_PREFIX}/{batch_key}.json"


def _attempt_segment(attempt_id: str) -> str:
    # A Dagster attempt id is "<run id>/<retry>": one key segment, so a record's batch and attempt
    # can be read back from its key.
    seg = attempt_id.replace("/", ".")
    if not seg or seg.strip(".") == "" or any(c in seg for c in "\\\0"):
        raise ValueError(f"bad attempt id {attempt_id!r}")
    return seg


class SpendJournal:
    """Durable reservation records of one attempt of one batch (see the module docstring).

    ``reserve`` writes the record before the request goes out (an error here means nothing is
    sent); ``release`` and ``mark_uncertain`` rewrite it; a settled cost lives in the cache
    envelope that names the record (``ResponseCache.put(spend=...)``), or, without a cache, in
    the record itself (``settle``).
    """

    def __init__(self, store: BytesStore, batch_key: str, attempt_id: str) -> None:
        if not batch_key or batch_key.startswith("/") or ".." in batch_key.split("/"):
            raise ValueError(f"bad batch key {batch_key!r}")
        self.store, self.batch_key, self.attempt_id = store, batch_key, attempt_id
        self.prefix = f"{SPEND_PREFIX}/{batch_key}/{_attempt_segment(attempt_id)}"
        self._lock = threading.Lock()
        self.records = 0

    def _write(self, ref: str, doc: dict[str, Any]) -> None:
        self.store.put_bytes(ref, canonical_json(doc).encode())

    def reserve(self, request_key: str, model: str, worst_usd: float, batch: bool) -> str:
        """Write a reservation of ``worst_usd`` for ``request_key``; returns its record key."""
        ref = f"{self.prefix}/{request_key}.{uuid.uuid4().hex[:12]}.json"
        self._write(ref, {"batch": self.batch_key, "attempt": self.attempt_id, "request_key": request_key,
                          "model": model, "batch_rate": batch, "worst_usd": worst_usd, "state": "reserved",
                          "at": time.time()})
        with self._lock:
            self.records += 1
        return ref

    def _rewrite(self, ref: str, **change: Any) -> None:
        doc = _read_record(self.store, ref) or {}
        doc.update(change, at=time.time())
        self._write(ref, doc)

    def release(self, ref: str, reason: str) -> None:
        """The request was answered with an error status: not billed."""
        self._rewrite(ref, state="released", usd=0.0, reason=reason)

    def mark_uncertain(self, ref: str, reason: str) -> None:
        """Possibly billed without usable usage: stays at its worst case, with the reason."""
        self._rewrite(ref, state="uncertain", reason=reason)

    def settle(self, ref: str, usd: float) -> None:
        """The billed cost, written into the record (used when there is no response cache)."""
        self._rewrite(ref, state="settled", usd=usd)


def _read_record(store: BytesStore, key: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(store.get_bytes(key))
    except Exception:  # noqa: BLE001 - any unreadable record (missing, corrupt, integrity) is handled by the caller
        return None
    return doc if isinstance(doc, dict) else None


def _record_usd(store: BytesStore, key: str, fallback_usd: float) -> float:
    """What one reservation record books: its settled cost (in the record or the cache entry
    that names it), 0 when released, else its worst case. An unreadable record books
    ``fallback_usd`` (the largest worst case of its attempt) and is logged."""
    doc = _read_record(store, key)
    request_key = key.rsplit("/", 1)[-1].split(".", 1)[0]
    if doc is not None and doc.get("state") == "released":
        return 0.0
    if doc is not None and doc.get("state") == "settled":
        return float(doc["usd"])
    spend = ResponseCache(store).spend_of(request_key)
    if spend is not None and spend.get("reservation") == key:
        return float(spend["usd"])
    if doc is None or not isinstance(doc.get("worst_usd"), (int, float)):
        log.warning("spend record %s is unreadable; booked at $%.6f, the largest worst case of its attempt",
                    key, fallback_usd)
        return fallback_usd
    return float(doc["worst_usd"])


def _attempt_usd(summary: dict[str, Any]) -> float:
    journal = summary.get("journal")
    return float(journal["usd"]) if isinstance(journal, dict) else float(summary["batch_usd"])


def _journal_records(store: BytesStore, batch_key: str) -> dict[str, list[str]]:
    """Record keys of ``batch_key`` by attempt segment (records of nested batch keys left out)."""
    prefix = f"{SPEND_PREFIX}/{batch_key}/"
    out: dict[str, list[str]] = {}
    lister = getattr(store, "list", None)
    if lister is None:
        return out
    for key in lister(prefix):
        rest = key[len(prefix):].split("/")
        if len(rest) == 2 and rest[1].endswith(".json"):
            out.setdefault(rest[0], []).append(key)
    return out


def _uncompacted_usd(store: BytesStore, records: list[str]) -> float:
    docs = [_read_record(store, k) for k in records]
    worst = max((float(d["worst_usd"]) for d in docs if d and isinstance(d.get("worst_usd"), (int, float))),
                default=0.0)
    return sum(_record_usd(store, k, worst) for k in records)


def record_batch_spend(store: BytesStore, batch_key: str, attempt_id: str, summary: dict[str, Any]) -> None:
    """Store one attempt's ledger summary under its batch (attempts accumulate: money spent by a
    failed attempt is still spent). One writer per batch at a time, as Dagster runs a partition.
    A summary with a ``journal`` entry stands for that attempt's reservation records."""
    key = _ledger_key(batch_key)
    doc = json.loads(store.get_bytes(key)) if store.exists(key) else {"batch": batch_key, "attempts": {}}
    doc["attempts"][attempt_id] = summary
    store.put_bytes(key, canonical_json(doc).encode())


def batch_booked_usd(store: BytesStore, batch_key: str, exclude_attempt: str | None = None) -> float:
    """Dollars booked for one batch: every attempt's summary, plus the reservation records of
    attempts that never wrote one (killed, or their summary write failed)."""
    key = _ledger_key(batch_key)
    doc = json.loads(store.get_bytes(key)) if store.exists(key) else {"attempts": {}}
    total, compacted = 0.0, set()
    for attempt, summary in (doc.get("attempts") or {}).items():
        if isinstance(summary.get("journal"), dict):
            compacted.add(_attempt_segment(attempt))
        if attempt != exclude_attempt:
            total += _attempt_usd(summary)
    skip = _attempt_segment(exclude_attempt) if exclude_attempt else None
    for segment, records in _journal_records(store, batch_key).items():
        if segment not in compacted and segment != skip:
            total += _uncompacted_usd(store, records)
    return total


def spent_in_store(store: BytesStore, batch_keys: list[str], exclude_attempt: str | None = None) -> float:
    """Dollars booked by all attempts of ``batch_keys`` (what the guard's ``spent_before_usd`` is)."""
    return sum(batch_booked_usd(store, batch, exclude_attempt) for batch in batch_keys)


def booked_batches(store: BytesStore) -> list[str]:
    """Every batch key with a ledger file or reservation records in ``store``."""
    keys = set()
    for key in store.list(f"{LEDGER_PREFIX}/"):
        if key.endswith(".json"):
            keys.add(key[len(LEDGER_PREFIX) + 1:-len(".json")])
    for key in store.list(f"{SPEND_PREFIX}/"):
        parts = key[len(SPEND_PREFIX) + 1:].split("/")
        if len(parts) >= 3:
            keys.add("/".join(parts[:-2]))
    return sorted(keys)


def booked_usd(store: BytesStore) -> float:
    """Dollars booked in ``store`` by every attempt of every batch (the cost ledger's LLM spend)."""
    return spent_in_store(store, booked_batches(store))
