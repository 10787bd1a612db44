"""A scripted OpenAI-compatible chat server on 127.0.0.1: each ``POST /v1/chat/completions`` gets
the next answer of a fixed list (then a last answer that repeats), and every request body is kept
for the test to read. For driving an out-of-process client (the agent scaffold) with known answers."""

from __future__ import annotations

import json
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator


class ScriptedChatServer:
    def __init__(self, answers: list[str], *, after: str = "I am done.", api_key: str | None = None) -> None:
        self.answers, self.after, self.api_key = list(answers), after, api_key
        self.requests: list[dict] = []
        self.unauthorized = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    server.unauthorized += 1
                    return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with server._lock:
                    server.requests.append(body)
                    i = len(server.requests) - 1
                text = server.answers[i] if i < len(server.answers) else server.after
                self._send(200, {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                                 "created": int(time.time()), "model": body.get("model", "scripted"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@contextmanager
def scripted_chat_server(answers: list[str], **kw) -> Iterator[ScriptedChatServer]:
    srv = ScriptedChatServer(answers, **kw)
    t = threading.Thread(target=srv.httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()
