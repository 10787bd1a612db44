"""A Wasabi stand-in for rehearsals and tests: moto's S3 server behind a proxy that refuses what
Wasabi refuses.

Wasabi answers 400 InvalidArgument to the flexible-checksum headers boto3 >= 1.36 sends by default
(``x-amz-checksum-*``, ``x-amz-sdk-checksum-algorithm``, checksum trailers); moto accepts them. The
proxy rejects those requests the way Wasabi does and forwards the rest unchanged (the Host header
included: it is part of the SigV4 signature), so a client configured as for Wasabi
(``storage/s3_store.py``: checksums ``when_required``) works and one that is not fails here too.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@contextmanager
def moto_server(port: int = 0) -> Iterator[str]:
    """moto's S3 on 127.0.0.1 (``port``, 0: a free one); yields its URL. Any credentials sign."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        host, bound = server.get_host_and_port()
        yield f"http://{host}:{bound}"
    finally:
        server.stop()


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
def checksum_rejecting_proxy(upstream_url: str, port: int = 0) -> Iterator[ChecksumRejectingProxy]:
    """HTTP proxy on 127.0.0.1 (``port``, 0: a free one) that answers 400 to any request carrying
    checksum headers (as Wasabi does) and forwards everything else to ``upstream_url``."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _ProxyHandler)
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
