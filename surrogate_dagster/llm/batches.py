"""The Message Batches API for calls that need no immediate answer (judges, the scenario writer).

A batch is billed at half the list price (``ledger.BATCH_DISCOUNT``). :class:`MessageBatchRunner`
sends a list of requests built by :meth:`LLMClient.build_request` as one batch and returns one
:class:`~.client.LLMResponse` per request:

- each request's ``custom_id`` is its request hash (the response-cache key, 64 hex characters), so
  results map back to requests whatever their order, and replies already in the response cache
  are never sent again;
- each request reserves its worst case (batch price) with the budget guard, and in the client's
  spend journal, before anything is sent; requests that do not fit are left out and listed in
  ``budget_stopped``; the batch record lists the reservation records, so a restarted step that
  resumes the batch settles those (it does not book the batch a second time);
- ``POST /v1/messages/batches`` creates the batch, and its id is written to the object store
  (``llm-batches/<job>.json``) BEFORE polling starts: a step that crashes while the batch runs
  finds the record when it is restarted and polls the same batch instead of paying twice (a crash
  between the API's reply to the create call and that write cannot be told apart from no submission:
  the restarted step submits again);
- ``GET /v1/messages/batches/{id}`` is polled with exponential backoff until ``processing_status``
  is ``ended``; the JSONL at ``results_url`` gives a result per request: ``succeeded`` (settled at
  the batch price, cached with its cost), ``errored`` (an ``invalid_request_error`` is final; others
  are retried), ``canceled`` or ``expired`` (not billed; retried);
- a results line that is not JSON is fetched again (``results_fetches`` times); a request whose
  line stays unreadable may have been billed, so it is booked at its batch-price worst case and
  reported as an error, never bought again without that booking (a request the results never
  mention, with every line readable, is treated as expired);
- retried requests go into a new batch up to ``max_resubmits`` times, then fall back to direct
  calls (:meth:`LLMClient.send`), so an expired request still gets its answer.

Dagster-free; the store is any ``BytesStore`` (the project's ObjectStore or a directory).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from .cache import BytesStore, as_store, canonical_json, request_key
from .client import LLMClient, LLMError, LLMResponse, MalformedReply, normalize_reply
from .ledger import BudgetExceeded

log = logging.getLogger(__name__)

BATCHES_PREFIX = "llm-batches"
FINAL_ERROR_TYPES = {"invalid_request_error", "authentication_error", "permission_error", "not_found_error"}
_JOB = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


@dataclass
class BatchOutcome:
    """What a run returned: responses and final errors by request key, and counts."""

    responses: dict[str, LLMResponse] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    budget_stopped: list[str] = field(default_factory=list)
    stop_message: str = ""
    batch_ids: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # batch ids picked up from the store, not submitted
    counts: Counter = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        """JSON-ready counts (results by type, resubmissions, direct fallbacks, batch ids)."""
        return {"batch_ids": list(self.batch_ids), "resumed": list(self.resumed),
                "budget_stopped": len(self.budget_stopped), "errors": len(self.errors),
                "counts": dict(sorted(self.counts.items()))}


RESULTS_FETCHES = 3  # reads of a results file that has unreadable lines


class MessageBatchRunner:
    """Runs lists of requests through the Message Batches API (see the module docstring).

    ``poll_s`` is the first wait between status polls; each next wait is ``poll_backoff`` times
    longer, up to ``poll_max_s``. ``max_wait_s`` bounds one batch (the API ends every batch within
    24 hours, expiring what it did not process).
    """

    def __init__(self, client: LLMClient, store: BytesStore | str, *, poll_s: float = 30.0,
                 poll_max_s: float = 300.0, poll_backoff: float = 1.5, max_wait_s: float = 25 * 3600.0,
                 max_resubmits: int = 1, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if poll_s <= 0 or poll_max_s < poll_s or poll_backoff < 1:
            raise ValueError("need 0 < poll_s <= poll_max_s and poll_backoff >= 1")
        self.client, self.store = client, as_store(store)
        self.poll_s, self.poll_max_s, self.poll_backoff = poll_s, poll_max_s, poll_backoff
        self.max_wait_s, self.max_resubmits = max_wait_s, max_resubmits
        self._sleep, self._clock = sleep, clock

    # ------------------------------------------------------------------------------ public
    def run(self, items: list[tuple[str, dict]], job: str, progress: dict | None = None) -> BatchOutcome:
        """Answer ``(role, request)`` items; ``job`` names this step's batch in the store (stable
        across re-runs of the step, e.g. ``batch-003/judges/round-1``)."""
        if not _JOB.match(job) or any(part.strip(".") == "" for part in job.split("/")):
            raise ValueError(f"bad batch job name {job!r}")
        out = BatchOutcome()
        todo: dict[str, tuple[str, dict]] = {}
        for role, request in items:
            key = request_key(request)
            if key in out.responses or key in todo:
                continue
            hit = self.client.cached_response(role, request, key)
            if hit is not None:
                out.responses[key] = hit
                out.counts["cache_hits"] += 1
            else:
                todo[key] = (role, request)
        for attempt in range(self.max_resubmits + 1):
            if not todo:
                break
            name = job if attempt == 0 else f"{job}/resubmit-{attempt}"
            todo = self._one_batch(name, todo, out, progress)
        for key, (role, request) in todo.items():  # still unanswered after every resubmission
            out.counts["direct_fallback"] += 1
            try:
                out.responses[key] = self.client.send(role, request, progress)
            except BudgetExceeded as exc:
                out.budget_stopped.append(key)
                out.stop_message = out.stop_message or str(exc)
            except LLMError as exc:
                out.errors[key] = str(exc)[:300]
        return out

    # ----------------------------------------------------------------------------- one batch
    def _record_key(self, job: str) -> str:
        return f"{BATCHES_PREFIX}/{job}.json"

    def _one_batch(self, job: str, todo: dict[str, tuple[str, dict]], out: BatchOutcome,
                   progress: dict | None) -> dict[str, tuple[str, dict]]:
        """Submit (or resume) one batch for ``todo``; returns the requests to try again."""
        rkey = self._record_key(job)
        record = json.loads(self.store.get_bytes(rkey)) if self.store.exists(rkey) else None
        resume = record is not None and record.get("status") == "submitted" and set(todo) <= set(record["keys"])
        earlier = (record or {}).get("reservations") or {} if resume else {}
        reserved: dict[str, float] = {}
        refs: dict[str, str | None] = {}
        for key, (_role, request) in todo.items():
            try:
                if key in earlier:  # the resumed batch's request: its record was written by that attempt
                    reserved[key] = self.client.ledger.reserve(
                        request["model"], self.client.estimate_input_tokens(request), request["max_tokens"],
                        progress, cached_prefix=self.client.has_cached_prefix(request), batch=True)
                    refs[key] = earlier[key]
                else:
                    reserved[key], refs[key] = self.client.reserve_durably(key, request, progress, batch=True)
            except BudgetExceeded as exc:
                out.stop_message = out.stop_message or str(exc)
                break
            except BaseException:
                # A record could not be written (a full disk): nothing is submitted, so the
                # reservations made so far are given back (their records released where possible).
                for k, amount in reserved.items():
                    try:
                        self.client.release_durably(amount, None if k in earlier else refs.get(k), "not submitted")
                    except OSError as exc:  # that record stays at its worst case: booked over, never under
                        log.warning("message batch %s: reservation %s not released: %s", job, refs.get(k), exc)
                raise
        stopped = [k for k in todo if k not in reserved]
        out.budget_stopped.extend(stopped)
        if not reserved:
            return {}
        if resume:
            batch_id = record["batch_id"]
            out.resumed.append(batch_id)
            log.info("message batch %s: resuming %s from the store", job, batch_id)
        else:
            batch_id = self._submit({k: todo[k][1] for k in reserved})
            # Persisted before polling: a crash from here on resumes this batch instead of re-buying it.
            self.store.put_bytes(rkey, canonical_json({"job": job, "batch_id": batch_id, "status": "submitted",
                                                       "keys": sorted(reserved), "submitted_at": time.time(),
                                                       "reservations": {k: r for k, r in refs.items() if r}}
                                                      ).encode())
            out.counts["submitted_requests"] += len(reserved)
        out.batch_ids.append(batch_id)
        results, unreadable = self._wait_and_fetch(batch_id)
        again: dict[str, tuple[str, dict]] = {}
        for key in reserved:
            role, request = todo[key]
            ref, adopted = refs.get(key), key in earlier
            if key not in results and unreadable:
                # Its line may be one of the unreadable ones, and a succeeded line was billed.
                out.counts["unreadable_result"] += 1
                self.client.uncertain_durably(reserved[key], ref, request["model"], "unreadable_batch_result")
                out.errors[key] = (f"message batch {batch_id}: its results line is unreadable ({unreadable} such "
                                   "lines); booked at the batch-price worst case, not bought again")
                continue
            result = results.get(key, {"type": "expired"})  # a request the batch never reported on
            kind = result.get("type")
            out.counts[kind if kind in ("succeeded", "errored", "canceled", "expired") else "unknown_result"] += 1
            if kind == "succeeded":
                try:
                    body = normalize_reply(result.get("message"), request["max_tokens"],
                                           self.client.input_token_bound(request))
                except MalformedReply as exc:
                    # Possibly billed, unusable: worst case booked, like a malformed direct reply.
                    self.client.uncertain_durably(reserved[key], ref, request["model"], "malformed")
                    self.client.ledger.count("malformed")
                    out.errors[key] = self.client.scrub_text(str(exc))[:300]
                    continue
                out.responses[key] = self.client.book_response(role, request, key, body, reserved[key], batch=True,
                                                               reservation=ref, adopted=adopted)
                continue
            # errored, canceled and expired requests are not billed
            self.client.release_durably(reserved[key], ref, f"batch result {kind}")
            err = ((result.get("error") or {}).get("error") or {}) if kind == "errored" else {}
            if err.get("type") in FINAL_ERROR_TYPES:
                out.errors[key] = self.client.scrub_text(f"{err.get('type')}: {err.get('message', '')}")[:300]
            else:
                again[key] = (role, request)
        out.counts["resubmitted_or_direct"] += len(again)
        self.store.put_bytes(rkey, canonical_json({**(record if resume else {}), "job": job, "batch_id": batch_id,
                                                   "status": "collected", "keys": sorted(reserved),
                                                   "collected_at": time.time()}).encode())
        return again

    def _api(self, what: str, fn: Callable[[], Any]) -> Any:
        """One batches-endpoint call with the client's retry policy on 408/409/429/5xx and connection errors."""
        import anthropic

        last = ""
        for attempt in range(self.client.max_attempts):
            try:
                return fn()
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                last = f"HTTP {status}"
                if status not in (408, 409, 429) and status < 500:
                    raise LLMError(f"message batches {what}: HTTP {status} (not retryable)") from None
            except anthropic.APIConnectionError as exc:
                last = type(exc).__name__
            self.client.ledger.count(f"batch_api_retries_{what}")
            if attempt + 1 < self.client.max_attempts:
                self._sleep(self.client.backoff_delay(attempt))
        raise LLMError(f"message batches {what}: {self.client.max_attempts} attempts failed, last: {last}")

    def _submit(self, requests: dict[str, dict]) -> str:
        sdk = self.client.sdk
        payload = [{"custom_id": key, "params": self.client.api_params(req)} for key, req in requests.items()]
        raw = self._api("create", lambda: sdk.messages.batches.with_raw_response.create(requests=payload))
        body = json.loads(raw.http_response.text)
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            raise LLMError(f"message batches create: reply has no batch id: {self.client.scrub_text(str(body))[:200]}")
        return body["id"]

    def _wait_and_fetch(self, batch_id: str) -> tuple[dict[str, dict], int]:
        """Poll until the batch has ended, then read its results: (custom_id -> result, lines still
        unreadable after ``RESULTS_FETCHES`` reads; the results of every read are kept)."""
        sdk = self.client.sdk
        t0, delay = self._clock(), self.poll_s
        while True:
            raw = self._api("retrieve", lambda: sdk.messages.batches.with_raw_response.retrieve(batch_id))
            batch = json.loads(raw.http_response.text)
            if batch.get("processing_status") == "ended":
                break
            if self._clock() - t0 > self.max_wait_s:
                raise LLMError(f"message batch {batch_id} still {batch.get('processing_status')!r} after "
                               f"{self.max_wait_s:.0f}s; re-run the step to resume it")
            self._sleep(delay)
            delay = min(self.poll_max_s, delay * self.poll_backoff)
        url = batch.get("results_url")
        if not isinstance(url, str) or not url:
            raise LLMError(f"message batch {batch_id} ended without a results_url")
        results: dict[str, dict] = {}
        unreadable = 0
        for _ in range(RESULTS_FETCHES):
            text = self._api("results", lambda: sdk.get(url, cast_to=str,
                                                         options={"headers": {"Accept": "application/binary"}}))
            unreadable = 0
            for n, line in enumerate(str(text).splitlines()):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError:
                    unreadable += 1
                    log.warning("message batch %s: results line %d is not JSON", batch_id, n)
                    continue
                if isinstance(item, dict) and isinstance(item.get("custom_id"), str) \
                        and isinstance(item.get("result"), dict):
                    results.setdefault(item["custom_id"], item["result"])
                else:
                    unreadable += 1
            if not unreadable:
                break
        return results, unreadable
