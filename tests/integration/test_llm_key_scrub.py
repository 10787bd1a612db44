"""The LLM client never puts its API key (or any credential a gateway echoes back) into an
exception, a log line, the breaker or Dagster's event log.

A tiny gateway answers every request with an error (or an unusable 200) whose body echoes the
request headers, as some proxies do. Every text the client keeps is checked for any 16-character
window of the key.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from surrogate_dagster.llm.breaker import CircuitOpenError
from surrogate_dagster.llm.client import LLMClient, LLMError, MalformedReply, RetriesExhausted
from tests.unit.llm.test_key_scrub_rules import GATEWAY_TOKEN, KEY, leaked

MODELS = {"planner": "claude-opus-4-1"}
PRICES = {"claude-opus-4-1": {"input": 15.0, "output": 75.0}}


class EchoGateway:
    """An HTTP server answering POST with ``status`` and a body echoing the request headers in
    ``style``: "json" (an API error object), "text" (header lines), "message200" (a 200 that is not
    a message), "text200" (a 200 that is not JSON)."""

    def __init__(self, status: int, style: str) -> None:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("content-length") or 0))
                # Credentials first: the client keeps only the first 120-200 characters.
                creds = ("authorization", "x-api-key", "proxy-authorization")
                items = sorted(self.headers.items(), key=lambda kv: kv[0].lower() not in creds)
                headers = dict(items)
                if gateway.style in ("json", "message200"):
                    body = json.dumps({"type": "error", "error": {
                        "type": "authentication_error",
                        "message": "invalid credentials " + " ".join(
                            f"{k}={self.headers.get(k, '')}" for k in creds)},
                        "request_headers": headers}).encode()
                    ctype = "application/json"
                else:
                    body = "".join(f"{k}: {v}\n" for k, v in items).encode()
                    ctype = "text/plain"
                self.send_response(gateway.status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.status, self.style = status, style
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "EchoGateway":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def make_client(url: str, monkeypatch, **kw) -> LLMClient:
    monkeypatch.setenv("SURROGATE_TEST_LLM_KEY", KEY)
    opts = dict(models=MODELS, prices=PRICES, max_tokens=64, base_url=url, api_key_env="SURROGATE_TEST_LLM_KEY",
                max_attempts=3, backoff_base_s=0.0, sleep=lambda s: None, breaker_threshold=10, seed=1)
    opts.update(kw)
    return LLMClient(**opts)


def ask(client: LLMClient):
    return client.complete("planner", system="s", messages=[{"role": "user", "content": "hi"}])


def every_text(exc: BaseException, caplog, client: LLMClient) -> str:
    """All the places the failure is kept: the exception (str, repr, with its chain), logs, breaker."""
    chain = "".join(traceback.format_exception(exc))
    return "\n".join([str(exc), repr(exc), chain, caplog.text, client.breaker.last_error])


@pytest.mark.parametrize("status,style,error", [
    (401, "json", LLMError),             # not retryable: the body goes into the message
    (400, "text", LLMError),
    (503, "json", RetriesExhausted),     # retried: the body goes into the warnings and the breaker
    (529, "text", RetriesExhausted),
    (200, "message200", MalformedReply),  # 200 but not a message: a piece of it goes into the error
])
def test_echoed_key_never_reaches_an_exception_or_a_log(status, style, error, monkeypatch, caplog):
    # The SDK sends the key as `Authorization: Bearer`; the injected HTTP client (the raw HTTP
    # layer under the SDK) adds it as x-api-key too, and a proxy credential of its own.
    import anthropic

    http = anthropic.DefaultHttpxClient(headers={"x-api-key": KEY,
                                                 "Proxy-Authorization": f"Bearer {GATEWAY_TOKEN}"})
    with EchoGateway(status, style) as gw, caplog.at_level(logging.DEBUG):
        client = make_client(gw.url, monkeypatch, http_client=http)
        with pytest.raises(error) as info:
            ask(client)
    text = every_text(info.value, caplog, client)
    assert not leaked(text), f"key pieces in: {text[:2000]}"
    assert not leaked(text, GATEWAY_TOKEN), f"gateway token pieces in: {text[:2000]}"
    if status != 200:
        assert f"HTTP {status}" in text  # still says what went wrong
    assert "<REDACT" in text  # redacted, not merely cut off


def test_circuit_open_error_carries_no_key(monkeypatch, caplog):
    with EchoGateway(503, "json") as gw, caplog.at_level(logging.DEBUG):
        client = make_client(gw.url, monkeypatch, breaker_threshold=2, max_attempts=5)
        with pytest.raises(CircuitOpenError) as info:
            ask(client)
    assert "circuit opened" in str(info.value)
    assert not leaked(every_text(info.value, caplog, client))


def test_failed_asset_event_log_holds_no_key(monkeypatch):
    from dagster import DagsterInstance, asset, materialize, serialize_value

    with EchoGateway(401, "json") as gw:
        client = make_client(gw.url, monkeypatch)

        @asset
        def uses_llm():
            ask(client)

        with DagsterInstance.ephemeral() as instance:
            result = materialize([uses_llm], instance=instance, raise_on_error=False)
            assert not result.success
            logs = "\n".join(serialize_value(e) for e in instance.all_logs(result.run_id))
    assert "HTTP 401" in logs
    assert not leaked(logs), "the key reached Dagster's event log"
