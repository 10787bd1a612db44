"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages API (``POST /v1/messages``).

Two users, one implementation:

- tests drive the real ``anthropic`` SDK against it, with fault injection: 429 with
  ``retry-after``, 529 overloaded, 500, a malformed (truncated JSON) 200 reply, a dropped connection;
- the local profile uses it as "the local model behind the same interface": the answers come from
  :class:`~surrogate_dagster.llm.standin.StandInModel`, a deterministic template-driven responder
  (NOT Claude, and it says so in the ``model`` field of every reply).

Supported: non-streaming requests with ``system``, ``messages`` (text, tool_use and tool_result
blocks), ``tools``, ``tool_choice``, ``max_tokens`` (text is cut and ``stop_reason`` becomes
``max_tokens``) and ``usage`` in the reply (tokens estimated as characters / 4). Streaming is not
implemented: a ``"stream": true`` request gets a 400 that says so.

Run it by hand: ``python -m surrogate_dagster.llm.local_server --port 8765``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from .cache import canonical_json

STANDIN_MODEL_ID = "surrogate-local-standin"
Responder = Callable[[dict], tuple[list[dict], str, str]]  # request -> (content, stop_reason, label)


@dataclass
class Fault:
    """One injected failure, consumed by the first request it matches.

    kind: "status" (reply ``status`` with an Anthropic error body, optional ``retry_after``),
    "malformed" (200 with truncated JSON), "drop" (close the socket without replying).
    ``match`` (request dict -> bool) limits the fault to some requests; None matches any.
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    match: Callable[[dict], bool] | None = None


@dataclass
class RequestRecord:
    """What the server saw: when a request started and ended, for which model and role."""

    t_start: float
    t_end: float = 0.0
    model: str = ""
    label: str = ""
    status: int = 0
    fault: str = ""


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
        rec = RequestRecord(t_start=time.monotonic())
        with self.state.lock:
            self.state.records.append(rec)
        try:
            rec.status = self._handle(rec)
        finally:
            rec.t_end = time.monotonic()

    def _handle(self, rec: RequestRecord) -> int:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] != "/v1/messages":
            self._error(404, f"unknown path {self.path}")
            return 404
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            self._error(401, "missing x-api-key header")
            return 401
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
        if fault is not None:
            rec.fault = fault.kind if fault.kind != "status" else str(fault.status)
            return self._apply_fault(fault)
        content, stop_reason, label = self.state.responder(req)
        rec.label = label
        if self.state.latency is not None:
            time.sleep(self.state.latency(req, label))
        content, stop_reason = _cap_output(content, stop_reason, int(req["max_tokens"]))
        body = {
            "id": "msg_local_" + hashlib.sha256(canonical_json(req).encode()).hexdigest()[:24],
            "type": "message", "role": "assistant", "model": STANDIN_MODEL_ID,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": estimate_tokens(canonical_json(
                          [req.get("system"), req["messages"], req.get("tools")])),
                      "output_tokens": estimate_tokens(canonical_json(content))},
        }
        self._send(200, json.dumps(body, ensure_ascii=False).encode())
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
                 latency: Callable[[dict, str], float] | None = None) -> None:
        if responder is None:
            from .standin import StandInModel
            responder = StandInModel().respond
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.state = _State(responder=responder, latency=latency)  # type: ignore[attr-defined]
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
