"""Local S3 stand-ins for tests: a moto server on 127.0.0.1 and a Wasabi-like checksum-rejecting proxy.

Use as context managers (``moto_s3_server()``, ``checksum_rejecting_proxy(url)``) or as pytest
fixtures: import ``moto_s3``, ``s3_bucket`` and ``wasabi_proxy`` into a test module.

Nothing here contacts the internet; credentials are dummy values placed in the environment
variables the store config names (TEST_ACCESS_KEY_ENV / TEST_SECRET_KEY_ENV).
"""

from __future__ import annotations

import http.client
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config

TEST_ACCESS_KEY_ENV = "SURROGATE_TEST_S3_ACCESS_KEY"
TEST_SECRET_KEY_ENV = "SURROGATE_TEST_S3_SECRET_KEY"
REGION = "us-east-1"
_DUMMY = {TEST_ACCESS_KEY_ENV: "testing-access-key", TEST_SECRET_KEY_ENV: "testing-secret-key"}


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    """Set env vars for the block and restore the previous values afterwards."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _no_proxy_env() -> dict[str, str]:
    # An HTTP(S)_PROXY in the environment would route 127.0.0.1 traffic away from the stand-in.
    cur = os.environ.get("NO_PROXY", os.environ.get("no_proxy", ""))
    val = ",".join(x for x in [cur, "127.0.0.1", "localhost"] if x)
    return {"NO_PROXY": val, "no_proxy": val}


@dataclass
class MotoS3:
    """A running moto S3 server and helpers to talk to it directly (bypassing the ObjectStore)."""

    endpoint_url: str
    access_key_env: str = TEST_ACCESS_KEY_ENV
    secret_key_env: str = TEST_SECRET_KEY_ENV
    _default_client: Any = field(default=None, repr=False)

    def raw_client(self, endpoint_url: str | None = None, **config_kwargs: Any) -> Any:
        """A boto3 S3 client on the server (or on ``endpoint_url``, e.g. a proxy).

        Defaults to the Wasabi-safe checksum settings; pass request_checksum_calculation=... to
        override (e.g. "when_supported", boto3's own default) for control experiments.
        """
        if endpoint_url is None and not config_kwargs and self._default_client is not None:
            return self._default_client  # building a client costs ~0.5 s; reuse the plain one
        cfg = {
            "request_checksum_calculation": "when_required",
            "response_checksum_validation": "when_required",
            "retries": {"mode": "standard", "max_attempts": 1},
            "s3": {"addressing_style": "path"},
        }
        cfg.update(config_kwargs)
        client = boto3.session.Session(
            aws_access_key_id=_DUMMY[TEST_ACCESS_KEY_ENV],
            aws_secret_access_key=_DUMMY[TEST_SECRET_KEY_ENV],
            region_name=REGION,
        ).client("s3", endpoint_url=endpoint_url or self.endpoint_url, config=Config(**cfg))
        if endpoint_url is None and not config_kwargs:
            self._default_client = client
        return client

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"test-{uuid.uuid4().hex[:16]}"
        self.raw_client().create_bucket(Bucket=name)
        return name

    def store_config(
        self, bucket: str, prefix: str = "", endpoint_url: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """A make_object_store() config for this server (or a proxy in front of it)."""
        return {
            "kind": "s3",
            "bucket": bucket,
            "prefix": prefix,
            "endpoint_url": endpoint_url or self.endpoint_url,
            "region": REGION,
            "access_key_env": self.access_key_env,
            "secret_key_env": self.secret_key_env,
            "addressing_style": "path",
            "max_attempts": 2,
            **extra,
        }


@contextmanager
def moto_s3_server() -> Iterator[MotoS3]:
    """Start moto's S3 on 127.0.0.1 (free port), with dummy credentials in the test env vars."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        with _env({**_DUMMY, **_no_proxy_env()}):
            yield MotoS3(endpoint_url=f"http://{host}:{port}")
    finally:
        server.stop()


# ---- Wasabi-like proxy -------------------------------------------------------------------------
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "expect", "content-length",
}


def is_checksum_header(name: str, value: str) -> bool:
    """Headers Wasabi refuses: flexible-checksum headers, the algorithm hint and checksum trailers."""
    n = name.lower()
    return (
        n.startswith("x-amz-checksum-")
        or n == "x-amz-sdk-checksum-algorithm"
        or (n == "x-amz-trailer" and "checksum" in value.lower())
    )


@dataclass
class ChecksumRejectingProxy:
    """Records what it rejected/forwarded so tests can assert on the traffic."""

    endpoint_url: str = ""
    rejected: list[tuple[str, str, list[str]]] = field(default_factory=list)
    forwarded: int = 0


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # needed for keep-alive and 'Expect: 100-continue'

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr noise
        pass

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # discard trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        state: ChecksumRejectingProxy = self.server.state  # type: ignore[attr-defined]
        body = self._read_body()
        bad = sorted(k.lower() for k, v in self.headers.items() if is_checksum_header(k, v))
        if bad:
            state.rejected.append((self.command, self.path, bad))
            msg = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidArgument</Code>'
                f"<Message>Unsupported header(s): {', '.join(bad)}</Message></Error>"
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        up = urlsplit(self.server.upstream)  # type: ignore[attr-defined]
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        try:
            # The Host header is forwarded unchanged: it is part of the SigV4 signature.
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            state.forwarded += 1
            self.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in _HOP_BY_HOP:
                    self.send_header(k, v)
            # HEAD keeps the upstream length (object size) and sends no body.
            length = resp.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


@contextmanager
def checksum_rejecting_proxy(upstream_url: str) -> Iterator[ChecksumRejectingProxy]:
    """HTTP proxy on 127.0.0.1 that answers 400 to any request carrying checksum headers
    (as Wasabi does) and forwards everything else to ``upstream_url``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
    server.daemon_threads = True
    state = ChecksumRejectingProxy(endpoint_url=f"http://127.0.0.1:{server.server_address[1]}")
    server.state = state  # type: ignore[attr-defined]
    server.upstream = upstream_url  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# ---- pytest fixtures (import them into a test module to use) ---------------------------------
@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    with moto_s3_server() as s3:
        yield s3


@pytest.fixture
def s3_bucket(moto_s3: MotoS3, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty bucket; credentials env vars are (re)set for the test's duration."""
    for k, v in _DUMMY.items():
        monkeypatch.setenv(k, v)
    return moto_s3.create_bucket()


@pytest.fixture(scope="session")
def wasabi_proxy(moto_s3: MotoS3) -> Iterator[ChecksumRejectingProxy]:
    with checksum_rejecting_proxy(moto_s3.endpoint_url) as proxy:
        yield proxy
