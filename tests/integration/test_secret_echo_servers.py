"""No secret reaches a log, the Dagster instance or an exception when servers echo it back, in any form.

Local servers answer every request with an error whose body echoes the credential the request
carried (the bearer token, the x-api-key, the SigV4 access key id), plain and encoded: base64,
base64url, hex, URL-encoded. A Dagster run then talks to each through the project's client: the
`observe_hf_revisions` job against a Hub (the token in a 401 body), an object store step against
an S3 endpoint (the access key in a 403 body), and an LLM step against a Messages API (the key in
a 401 body). After the run, the captured stdout and stderr, every file of the instance (run and
event-log storage, compute logs) and the object store folder are searched for every form of
every secret, by an encoder written here (and every base64 run found is decoded and searched).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest
from dagster import Definitions, asset, instance_for_test, materialize

HF_TOKEN = "hf_" + secrets.token_hex(17)
S3_KEY_ID = "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
S3_SECRET = secrets.token_urlsafe(30)
LLM_KEY = "sk-ant-api03-" + secrets.token_urlsafe(40)


def forms(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {"plain": secret, "base64": base64.b64encode(raw).decode(),
            "base64url": base64.urlsafe_b64encode(raw).decode().rstrip("="),
            "hex": binascii.hexlify(raw).decode(), "url": quote(secret, safe="")}


def echo_body(credential: str) -> dict[str, str]:
    """What the servers send back: the credential in each form (and inside a Basic header)."""
    body = {f"echo_{k}": v for k, v in forms(credential).items()}
    body["echo_basic"] = "Basic " + base64.b64encode(f"user:{credential}".encode()).decode()
    return body


class EchoServer:
    """Answers every request with ``status`` and a body (``style``: hub or Messages-API JSON, S3 XML) echoing the
    request's credential in every form."""

    def __init__(self, status: int, style: str) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                server.requests += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                auth = self.headers.get("authorization", "")
                cred = (self.headers.get("x-api-key") or
                        (m.group(1) if (m := re.search(r"Credential=([^/]+)/", auth)) else "") or
                        auth.removeprefix("Bearer ").strip())
                echoed = echo_body(cred)
                if server.style == "s3":
                    msg = " ".join(f"{k}={v}" for k, v in echoed.items())
                    body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
                            f"<Message>denied for {msg}</Message></Error>").encode()
                    ctype = "application/xml"
                elif server.style == "hub":  # the Hub's error shape: huggingface_hub shows `error`
                    body = json.dumps({"error": "Invalid credentials in Authorization header: " +
                                       json.dumps(echoed)}).encode()
                    ctype = "application/json"
                else:
                    body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                                  "message": "invalid token " + json.dumps(echoed)},
                                       **echoed}).encode()
                    ctype = "application/json"
                self.send_response(server.status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_HEAD = _answer

            def log_message(self, *args):
                pass

        self.status, self.style, self.requests = status, style, 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "EchoServer":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{16,}={0,2}")


def hits(blob: bytes, secret: str) -> list[str]:
    """The forms of ``secret`` found in ``blob``, a decoded base64 run counted as "decoded"."""
    found = [k for k, v in forms(secret).items() if v.encode() in blob]
    for run in _B64_RUN.findall(blob):
        for cut in range(4):  # the run may start mid-quantum
            piece = run[cut:]
            piece = piece[:len(piece) - len(piece) % 4]
            try:
                decoded = base64.b64decode(piece.replace(b"-", b"+").replace(b"_", b"/"))
            except (binascii.Error, ValueError):
                continue
            if secret.encode() in decoded:
                found.append("decoded")
                break
    return found


def leaks(paths: list[Path], texts: list[str]) -> dict[str, list[str]]:
    """{where: forms found} over every file under ``paths`` and each captured text."""
    out: dict[str, list[str]] = {}
    blobs = [(f"text{i}", t.encode()) for i, t in enumerate(texts)]
    for root in paths:
        blobs += [(str(f), f.read_bytes()) for f in sorted(root.rglob("*")) if f.is_file()]
    for where, blob in blobs:
        for name, secret in [("HF_TOKEN", HF_TOKEN), ("S3_KEY_ID", S3_KEY_ID), ("LLM_KEY", LLM_KEY)]:
            if found := hits(blob, secret):
                out.setdefault(where, []).extend(f"{name}:{f}" for f in found)
    return out


def run_against_echo_servers(tmp_path: Path, monkeypatch, capfd) -> tuple[dict[str, list[str]], list[bool]]:
    """One Dagster run per client against its echo server; the leaks found afterwards and, per
    run, whether it failed after asking its server (it must: every server refuses)."""
    from surrogate_dagster.llm.client import LLMClient
    from surrogate_dagster.operations import OPS_JOBS
    from surrogate_dagster.resources import HubResource
    from surrogate_dagster.sources.revisions import hf_revisions
    from surrogate_dagster.storage.s3_store import S3ObjectStore

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # conftest sets offline
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    monkeypatch.setenv("WASABI_ACCESS_KEY", S3_KEY_ID)
    monkeypatch.setenv("WASABI_SECRET", S3_SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", LLM_KEY)
    store_dir = tmp_path / "object_store"
    store_dir.mkdir()
    (tmp_path / "dagster_home").mkdir()
    failed = []
    with EchoServer(401, "hub") as hub, EchoServer(403, "s3") as s3, EchoServer(401, "json") as llm, \
            instance_for_test(temp_dir=str(tmp_path / "dagster_home")) as instance:
        defs = Definitions(assets=[hf_revisions], jobs=OPS_JOBS[:1],
                           resources={"hub": HubResource(mode="online", org="axentx", endpoint=hub.url)})
        res = defs.resolve_job_def("observe_hf_revisions").execute_in_process(instance=instance, raise_on_error=False)
        failed.append(not res.success and hub.requests > 0)

        @asset
        def writes_to_s3():
            store = S3ObjectStore("bucket", endpoint_url=s3.url, region="us-east-1",
                                  access_key_env="WASABI_ACCESS_KEY", secret_key_env="WASABI_SECRET", max_attempts=1)
            store.put_bytes("a/b.txt", b"x")

        @asset
        def asks_the_llm():
            client = LLMClient(models={"planner": "claude-opus-4-1"},
                               prices={"claude-opus-4-1": {"input": 15.0, "output": 75.0}},
                               max_tokens=64, base_url=llm.url, api_key_env="ANTHROPIC_API_KEY", max_attempts=2,
                               backoff_base_s=0.0, sleep=lambda s: None, seed=1)
            client.complete("planner", system="s", messages=[{"role": "user", "content": "hi"}])

        for a in (writes_to_s3, asks_the_llm):
            failed.append(not materialize([a], instance=instance, raise_on_error=False).success)
        failed[1:] = [failed[1] and s3.requests > 0, failed[2] and llm.requests > 0]
    captured = capfd.readouterr()
    return leaks([tmp_path / "dagster_home", store_dir], [captured.out, captured.err]), failed


def test_no_echoed_secret_in_output_instance_or_store(tmp_path, monkeypatch, capfd):
    found, failed = run_against_echo_servers(tmp_path, monkeypatch, capfd)
    assert failed == [True, True, True]  # each server refused, and the runs said so
    assert found == {}, json.dumps(found, indent=1)[:3000]


def test_the_runs_recorded_what_went_wrong(tmp_path, monkeypatch, capfd):
    """Scrubbed, not silenced: the errors in the event log still name the status and the server's
    words, with placeholders where the secrets were."""
    run_against_echo_servers(tmp_path, monkeypatch, capfd)
    db = b"".join(f.read_bytes() for f in (tmp_path / "dagster_home").rglob("*") if f.is_file())
    assert b"401" in db and b"AccessDenied" in db and b"REDACTED" in db


@pytest.mark.parametrize("name", ["HF_TOKEN", "S3_KEY_ID", "LLM_KEY"])  # names: the values are random
def test_the_search_finds_every_form(name):
    secret = globals()[name]
    # The search must be able to fail: each echoed form, alone or inside a text, is found.
    body = json.dumps(echo_body(secret)).encode()
    assert set(hits(body, secret)) >= {"plain", "base64", "base64url", "hex", "url", "decoded"}
    for form in forms(secret).values():
        assert hits(b"... " + form.encode() + b" ...", secret)
