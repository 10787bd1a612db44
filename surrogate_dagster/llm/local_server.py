"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages API (``POST /v1/messages``).

Two users, one implementation:

- tests drive the real ``anthropic`` SDK against it, with fault injection: 429 with
  ``retry-after``, 529 overloaded, 500, a malformed (truncated JSON) 200 reply, a dropped connection;
- the local profile uses it as "the local model behind the same interface": the answers come from
  :class:`~surrogate_dagster.llm.standin.StandInModel`, a deterministic template-driven responder
  (NOT Claude, and it says so in the ``model`` field of every reply).

Supported: non-streaming requests with ``system``, ``messages`` (text, tool_use and tool_result
blocks), ``tools``, ``tool_choice``, ``max_tokens`` (text is cut and ``stop_reason`` becomes
``max_tokens``) and ``usage`` in the reply (tokens estimated as characters / 4, plus the API's
tool-use system prompt when tools are sent). Streaming is not
implemented: a ``"stream": true`` request gets a 400 that says so.

Prompt caching is accounted like the API: a ``cache_control`` breakpoint on a system block makes
the prefix tools -> system (up to that block) cacheable when it has at least ``min_cache_tokens``
tokens; the first request writes it (``usage.cache_creation_input_tokens``), later ones within
``cache_ttl_s`` read it (``usage.cache_read_input_tokens``, TTL refreshed), and ``input_tokens``
counts only the tokens after the cached prefix.

The Message Batches API: ``POST /v1/messages/batches`` (``{"requests": [{"custom_id", "params"}]}``),
``GET /v1/messages/batches/{id}`` (``processing_status`` ``in_progress`` until ``polls_to_end``
retrievals have happened, then ``ended`` with ``request_counts`` and a ``results_url``) and
``GET /v1/messages/batches/{id}/results`` (JSONL, one ``{"custom_id", "result"}`` per request, result
type ``succeeded`` with the message, ``errored``, ``canceled`` or ``expired``). ``batch_outcome``
(custom_id, params -> result type) lets tests make some requests fail or expire.

Token counting: ``POST /v1/messages/count_tokens`` answers ``{"input_tokens"}`` for a request
(``max_tokens`` not needed), counted as a reply's usage counts its input: characters / 4 of the
system, messages and tools, plus the tool-use system prompt.

The Models API: ``GET /v1/models`` and ``GET /v1/models/{id}`` (200 with a model object for a
model the server serves, 404 ``not_found_error`` otherwise). ``models`` names the served model ids;
None serves every id (the stand-in answers any model name).

Billing: the server keeps what it billed, one entry per reply it produced (``model``, ``usage``,
``batch``: True for a Message Batch item), whether or not the client could use the reply (a
``malformed`` fault is billed; a ``drop`` fault is not, the request is never processed); tests
read it as :attr:`MessagesServer.billed` or ``GET /v1/_local/billing`` (the server in another
process). A ``usage`` fault answers with the usage it names instead of the billed one (a corrupt
reply); ``garble_results`` (custom_id -> bool) makes those batch results lines unreadable.

Keys: every request needs an ``x-api-key`` (or ``Authorization``) header; with ``api_key`` set,
a request whose key differs gets 401 ``authentication_error``.

Run it by hand: ``python -m surrogate_dagster.llm.local_server --port 8765``.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable
from urllib.parse import unquote

from .cache import canonical_json

STANDIN_MODEL_ID = "surrogate-local-standin"
Responder = Callable[[dict], tuple[list[dict], str, str]]  # request -> (content, stop_reason, label)


@dataclass
class Fault:
    """One injected failure, consumed by the first request it matches.

    kind: "status" (reply ``status`` with an Anthropic error body, optional ``retry_after``),
    "malformed" (200 with truncated JSON, billed), "drop" (close the socket without replying),
    "usage" (the reply, billed as usual, claiming ``usage`` instead).
    ``match`` (request dict -> bool) limits the fault to some requests; None matches any.
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    match: Callable[[dict], bool] | None = None
    usage: dict | None = None


@dataclass
class RequestRecord:
    """What the server saw: when a request started and ended, for which model and role."""

    t_start: float
    t_end: float = 0.0
    model: str = ""
    label: str = ""
    status: int = 0
    fault: str = ""
    method: str = "POST"
    path: str = "/v1/messages"


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def estimate_tokens(text: str) -> int:
    """Stand-in token count: ~4 characters per token (documented approximation, not a tokenizer)."""
    return max(1, math.ceil(len(text) / 4))


@dataclass
class _State:
    responder: Responder
    latency: Callable[[dict, str], float] | None
    faults: list[Fault] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    min_cache_tokens: int = 1024
    cache_ttl_s: float = 300.0
    prompt_cache: dict[str, float] = field(default_factory=dict)  # prefix hash -> expiry (monotonic)
    batches: dict[str, dict] = field(default_factory=dict)
    polls_to_end: int = 0
    batch_outcome: Callable[[str, dict], str] | None = None
    batch_items: list[RequestRecord] = field(default_factory=list)  # requests processed inside batches
    base_url: str = ""
    api_key: str | None = None
    models: frozenset[str] | None = None
    billed: list[dict] = field(default_factory=list)
    garble_results: Callable[[str], bool] | None = None


_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCH_RESULT_TYPES = ("succeeded", "errored", "canceled", "expired")


# The API bills a tool-use system prompt on every request with tools, ahead of the user's system
# prompt, and it is part of the cached prefix (Anthropic tool-use pricing, Claude 4 models: 346
# tokens with tool_choice auto/none, 313 with any/tool).
TOOL_USE_SYSTEM_TOKENS = {"auto": 346, "none": 346, "any": 313, "tool": 313}


def _tool_overhead(req: dict) -> int:
    if not req.get("tools"):
        return 0
    return TOOL_USE_SYSTEM_TOKENS.get((req.get("tool_choice") or {}).get("type", "auto"), 346)


def _cache_prefix(req: dict) -> Any:
    """The cacheable prefix (tools, system blocks up to the last ``cache_control``), or None."""
    system = req.get("system")
    if not isinstance(system, list):
        return None
    marks = [i for i, b in enumerate(system) if isinstance(b, dict) and b.get("cache_control")]
    if not marks:
        return None
    return [req.get("tools"), system[: marks[-1] + 1]]


def _usage(state: _State, req: dict, content: list[dict]) -> dict:
    """The reply's usage, with prompt-cache writes and reads accounted (see the module docstring)."""
    overhead = _tool_overhead(req)
    total = estimate_tokens(canonical_json([req.get("system"), req["messages"], req.get("tools")])) + overhead
    # _cap_output keeps the content within max_tokens; the JSON framing around a cut block must
    # not push the count past it (the API never reports more output tokens than max_tokens).
    output = min(estimate_tokens(canonical_json(content)), int(req["max_tokens"]))
    usage = {"input_tokens": total, "output_tokens": output,
             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    prefix = _cache_prefix(req)
    if prefix is None:
        return usage
    n_prefix = estimate_tokens(canonical_json(prefix)) + overhead
    if n_prefix < state.min_cache_tokens:
        return usage  # like the API: a prefix under the minimum is silently not cached
    key = req["model"] + ":" + hashlib.sha256(canonical_json(prefix).encode()).hexdigest()
    now = time.monotonic()
    with state.lock:
        hit = state.prompt_cache.get(key, 0.0) > now
        state.prompt_cache[key] = now + state.cache_ttl_s
    usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = n_prefix
    usage["input_tokens"] = max(0, total - n_prefix)
    return usage


def _message(state: _State, req: dict, batch: bool = False) -> tuple[dict, str]:
    """Answer one validated request with the responder: (message body, role label); billed."""
    content, stop_reason, label = state.responder(req)
    if state.latency is not None:
        time.sleep(state.latency(req, label))
    content, stop_reason = _cap_output(content, stop_reason, int(req["max_tokens"]))
    body = {
        "id": "msg_local_" + hashlib.sha256(canonical_json(req).encode()).hexdigest()[:24],
        "type": "message", "role": "assistant", "model": STANDIN_MODEL_ID,
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": _usage(state, req, content),
    }
    with state.lock:
        state.billed.append({"model": req["model"], "usage": dict(body["usage"]), "batch": batch})
    return body, label


def _iso(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class _Handler(BaseHTTPRequestHandler):
    server_version = "surrogate-local-messages/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # keep test output clean; the request log is in MessagesServer.records

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined]

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
        self._send(status, json.dumps(body).encode(), headers)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("POST")

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch("GET")

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?")[0]
        rec = RequestRecord(t_start=time.monotonic(), method=method, path=path)
        with self.state.lock:
            self.state.records.append(rec)
        try:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
                self._error(401, "missing x-api-key header")
                rec.status = 401
            elif self.state.api_key is not None and not self._key_matches(self.state.api_key):
                self._error(401, "invalid x-api-key")
                rec.status = 401
            elif method == "GET" and path == "/v1/_local/billing":
                with self.state.lock:
                    billed = list(self.state.billed)
                self._send(200, json.dumps({"billed": billed}).encode())
                rec.status = 200
            elif method == "GET" and path == "/v1/models":
                rec.status = self._list_models()
            elif method == "GET" and re.fullmatch(r"/v1/models/[^/]+", path):
                rec.status = self._retrieve_model(path.rsplit("/", 1)[1])
            elif method == "POST" and path == "/v1/messages":
                rec.status = self._handle(rec, raw)
            elif method == "POST" and path == "/v1/messages/count_tokens":
                rec.status = self._count_tokens(raw)
            elif method == "POST" and path == "/v1/messages/batches":
                rec.status = self._create_batch(raw)
            elif method == "GET" and re.fullmatch(r"/v1/messages/batches/[\w-]+", path):
                rec.status = self._retrieve_batch(path.rsplit("/", 1)[1])
            elif method == "GET" and re.fullmatch(r"/v1/messages/batches/[\w-]+/results", path):
                rec.status = self._batch_results(path.split("/")[-2])
            else:
                self._error(404, f"unknown path {method} {self.path}")
                rec.status = 404
        finally:
            rec.t_end = time.monotonic()

    def _key_matches(self, key: str) -> bool:
        given = self.headers.get("x-api-key")
        if given is None:
            scheme, _, given = (self.headers.get("authorization") or "").partition(" ")
            if scheme.lower() != "bearer":
                return False
        return hmac.compare_digest(given.encode(), key.encode())

    # ----------------------------------------------------------------------------- models
    @staticmethod
    def _model_object(model_id: str) -> dict:
        return {"type": "model", "id": model_id, "display_name": f"{model_id} (local stand-in, not Claude)",
                "created_at": "2025-01-01T00:00:00Z", "lifecycle": "active"}

    def _list_models(self) -> int:
        ids = sorted(self.state.models) if self.state.models is not None else [STANDIN_MODEL_ID]
        data = [self._model_object(m) for m in ids]
        self._send(200, json.dumps({"data": data, "has_more": False, "first_id": ids[0] if ids else None,
                                    "last_id": ids[-1] if ids else None}).encode())
        return 200

    def _retrieve_model(self, model_id: str) -> int:
        model_id = unquote(model_id)
        if self.state.models is not None and model_id not in self.state.models:
            self._error(404, f"model: {model_id}")
            return 404
        self._send(200, json.dumps(self._model_object(model_id)).encode())
        return 200

    # ----------------------------------------------------------------------- message batches
    def _create_batch(self, raw: bytes) -> int:
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._error(400, f"body is not JSON: {exc}")
            return 400
        reqs = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(reqs, list) or not reqs:
            self._error(400, "requests: must be a non-empty list")
            return 400
        seen: set[str] = set()
        for i, r in enumerate(reqs):
            cid = r.get("custom_id") if isinstance(r, dict) else None
            if not isinstance(cid, str) or not _CUSTOM_ID.match(cid):
                self._error(400, f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$")
                return 400
            if cid in seen:
                self._error(400, f"requests.{i}.custom_id: duplicate {cid!r}")
                return 400
            seen.add(cid)
            problem = validate_request(r.get("params"))
            if problem:
                self._error(400, f"requests.{i}.params.{problem}")
                return 400
        now = time.time()
        bid = "msgbatch_local_" + hashlib.sha256(f"{now}|{canonical_json(sorted(seen))}".encode()).hexdigest()[:20]
        batch = {"id": bid, "requests": reqs, "created_at": now, "polls": 0, "ended_at": None, "results": None}
        with self.state.lock:
            self.state.batches[bid] = batch
        self._send(200, json.dumps(self._batch_object(batch)).encode())
        return 200

    def _batch_object(self, batch: dict) -> dict:
        n = len(batch["requests"])
        counts = {"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch["results"] is not None:
            counts["processing"] = 0
            for line in batch["results"]:
                counts[line["result"]["type"]] += 1
        ended = batch["ended_at"] is not None
        return {"id": batch["id"], "type": "message_batch",
                "processing_status": "ended" if ended else "in_progress", "request_counts": counts,
                "created_at": _iso(batch["created_at"]), "expires_at": _iso(batch["created_at"] + 86400),
                "ended_at": _iso(batch["ended_at"]), "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"{self.state.base_url}/v1/messages/batches/{batch['id']}/results" if ended else None}

    def _retrieve_batch(self, bid: str) -> int:
        with self.state.lock:
            batch = self.state.batches.get(bid)
        if batch is None:
            self._error(404, f"no message batch {bid!r}")
            return 404
        batch["polls"] += 1
        if batch["ended_at"] is None and batch["polls"] > self.state.polls_to_end:
            batch["results"] = [self._process(r) for r in batch["requests"]]
            batch["ended_at"] = time.time()
        self._send(200, json.dumps(self._batch_object(batch)).encode())
        return 200

    def _process(self, item: dict) -> dict:
        cid, params = item["custom_id"], item["params"]
        outcome = self.state.batch_outcome(cid, params) if self.state.batch_outcome else "succeeded"
        if outcome not in BATCH_RESULT_TYPES:
            raise ValueError(f"batch_outcome returned {outcome!r}; expected one of {BATCH_RESULT_TYPES}")
        rec = RequestRecord(t_start=time.monotonic(), model=str(params["model"]), method="BATCH",
                            path=cid, fault="" if outcome == "succeeded" else outcome)
        with self.state.lock:
            self.state.batch_items.append(rec)
        if outcome == "succeeded":
            body, rec.label = _message(self.state, params, batch=True)
            result: dict = {"type": "succeeded", "message": body}
            rec.status = 200
        elif outcome == "errored":
            result = {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": "injected batch item error"}}}
            rec.status = 500
        else:
            result = {"type": outcome}
        rec.t_end = time.monotonic()
        return {"custom_id": cid, "result": result}

    def _batch_results(self, bid: str) -> int:
        with self.state.lock:
            batch = self.state.batches.get(bid)
        if batch is None or batch["results"] is None:
            self._error(404 if batch is None else 400, f"message batch {bid!r} has no results yet")
            return 404 if batch is None else 400
        garble = self.state.garble_results
        body = "".join((json.dumps(line, ensure_ascii=False)[:40] if garble and garble(line["custom_id"])
                        else json.dumps(line, ensure_ascii=False)) + "\n" for line in batch["results"]).encode()
        self.send_response(200)
        self.send_header("content-type", "application/binary")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return 200

    # --------------------------------------------------------------------------- messages
    def _handle(self, rec: RequestRecord, raw: bytes) -> int:
        try:
            req = json.loads(raw)
            problem = validate_request(req)
        except ValueError as exc:
            problem = f"body is not JSON: {exc}"
            req = {}
        if problem:
            self._error(400, problem)
            return 400
        rec.model = str(req["model"])
        fault = self._take_fault(req)
        if fault is not None and fault.kind in ("malformed", "usage"):
            body, rec.label = _message(self.state, req)  # processed and billed, then garbled
            rec.fault = fault.kind
            if fault.kind == "usage":
                self._send(200, json.dumps({**body, "usage": dict(fault.usage or {})}).encode())
                return 200
            return self._apply_fault(fault)
        if fault is not None:
            rec.fault = fault.kind if fault.kind != "status" else str(fault.status)
            return self._apply_fault(fault)
        body, rec.label = _message(self.state, req)
        self._send(200, json.dumps(body, ensure_ascii=False).encode())
        return 200

    def _count_tokens(self, raw: bytes) -> int:
        try:
            req = json.loads(raw)
            problem = validate_request({"max_tokens": 1, **req}) if isinstance(req, dict) else "body must be a JSON object"
        except ValueError as exc:
            problem = f"body is not JSON: {exc}"
        if problem:
            self._error(400, problem)
            return 400
        n = estimate_tokens(canonical_json([req.get("system"), req["messages"], req.get("tools")])) + _tool_overhead(req)
        self._send(200, json.dumps({"input_tokens": n}).encode())
        return 200

    def _take_fault(self, req: dict) -> Fault | None:
        with self.state.lock:
            for i, f in enumerate(self.state.faults):
                if f.match is None or f.match(req):
                    return self.state.faults.pop(i)
        return None

    def _apply_fault(self, fault: Fault) -> int:
        if fault.kind == "status":
            headers = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
            self._error(fault.status, f"injected {fault.status}", headers)
            return fault.status
        if fault.kind == "malformed":
            self._send(200, b'{"id": "msg_broken", "type": "message", "content": [{"type": "te')
            return 200
        if fault.kind == "drop":
            self.close_connection = True
            self.connection.close()
            return 0
        raise ValueError(f"unknown fault kind {fault.kind!r}")


def validate_request(req: Any) -> str:
    """The first problem with a Messages API request body, or "" when it is acceptable."""
    if not isinstance(req, dict):
        return "body must be a JSON object"
    if req.get("stream"):
        return "streaming is not supported by the local Messages server; send stream=false"
    if not isinstance(req.get("model"), str) or not req["model"]:
        return "model: field required"
    if not isinstance(req.get("max_tokens"), int) or req["max_tokens"] < 1:
        return "max_tokens: must be a positive integer"
    msgs = req.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages: must be a non-empty list"
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: must be 'user' or 'assistant'"
        if not isinstance(m.get("content"), (str, list)):
            return f"messages.{i}.content: must be a string or a list of blocks"
    if msgs[0]["role"] != "user":
        return "messages: the first message must use the 'user' role"
    return ""


def _cap_output(content: list[dict], stop_reason: str, max_tokens: int) -> tuple[list[dict], str]:
    """Enforce max_tokens like the API: cut text, drop later blocks, report ``max_tokens``."""
    budget = max_tokens * 4
    out: list[dict] = []
    for block in content:
        size = len(canonical_json(block))
        if size <= budget:
            out.append(block)
            budget -= size
            continue
        if block.get("type") == "text" and budget > 0:
            out.append({"type": "text", "text": block["text"][:budget]})
        return out or [{"type": "text", "text": ""}], "max_tokens"
    return out, stop_reason


class MessagesServer:
    """The local Messages API server; use as a context manager or call start()/stop()."""

    def __init__(self, responder: Responder | None = None, host: str = "127.0.0.1", port: int = 0,
                 latency: Callable[[dict, str], float] | None = None, *, min_cache_tokens: int = 1024,
                 cache_ttl_s: float = 300.0, polls_to_end: int = 0,
                 batch_outcome: Callable[[str, dict], str] | None = None, api_key: str | None = None,
                 models: Iterable[str] | None = None, garble_results: Callable[[str], bool] | None = None) -> None:
        if responder is None:
            from .standin import StandInModel
            responder = StandInModel().respond
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.state = _State(responder=responder, latency=latency,  # type: ignore[attr-defined]
                                   min_cache_tokens=min_cache_tokens, cache_ttl_s=cache_ttl_s,
                                   polls_to_end=polls_to_end, batch_outcome=batch_outcome,
                                   api_key=api_key, models=None if models is None else frozenset(models),
                                   garble_results=garble_results)
        self.state.base_url = self.url
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> _State:
        return self._httpd.state  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """Base URL to pass as ``base_url`` (the SDK appends ``/v1/messages``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each is consumed by the first request it matches."""
        with self.state.lock:
            self.state.faults.extend(faults)

    @property
    def records(self) -> list[RequestRecord]:
        """A copy of the request log."""
        with self.state.lock:
            return list(self.state.records)

    @property
    def billed(self) -> list[dict]:
        """A copy of what the server billed: ``{"model", "usage", "batch"}`` per reply produced."""
        with self.state.lock:
            return [dict(b) for b in self.state.billed]

    @property
    def batch_items(self) -> list[RequestRecord]:
        """A copy of the log of requests processed inside message batches (``path`` = custom_id)."""
        with self.state.lock:
            return list(self.state.batch_items)

    def requests_to(self, method: str, path: str) -> int:
        """How many HTTP requests hit ``method path`` (e.g. ``POST /v1/messages/batches``)."""
        with self.state.lock:
            return sum(r.method == method and r.path == path for r in self.state.records)

    @property
    def n_requests(self) -> int:
        """How many HTTP requests reached the server (faulted ones included)."""
        with self.state.lock:
            return len(self.state.records)

    def start(self) -> "MessagesServer":
        """Serve in a daemon thread; returns self."""
        # A short poll interval keeps stop() fast (serve_forever checks for shutdown between polls).
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="local-messages", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "MessagesServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    """Serve the stand-in model until interrupted (the local profile's "local model")."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    server = MessagesServer(host=args.host, port=args.port)
    print(f"stand-in Messages API (not Claude) on {server.url}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
