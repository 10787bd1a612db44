"""A real HTTP server on 127.0.0.1 that speaks the part of the HF Hub API ``huggingface_hub`` uses
to check tokens, pins and gated terms; it serves the offline mirror (``fixtures/hub``).

Endpoints (the Hub's paths, headers and error codes, as ``huggingface_hub.utils.hf_raise_for_status``
maps them to ``RepositoryNotFoundError``, ``RevisionNotFoundError``, ``GatedRepoError``,
``RemoteEntryNotFoundError``):

- ``GET /api/whoami-v2``: the user of the ``Authorization: Bearer`` token (``name``, ``isPro``,
  ``orgs: [{name, roleInOrg, plan}]``, ``auth.accessToken.role``); 401 without a known token;
- ``GET /api/datasets/{repo}`` and ``/api/datasets/{repo}/revision/{rev}``: ``id``, ``sha``,
  ``gated``, ``private``, ``siblings``; 404 ``RepoNotFound`` / ``RevisionNotFound``;
- ``GET /api/datasets/{repo}/refs``: the ``main`` branch and its commit;
- ``HEAD`` / ``GET /datasets/{repo}/resolve/{rev}/{path}``: the file with ``ETag``,
  ``X-Repo-Commit`` and ``Content-Length``; a gated repo answers 401 ``GatedRepo`` to an anonymous
  request and 403 ``GatedRepo`` to a user who has not accepted its terms.

Any request with a Bearer token the server does not know gets 401 "Invalid credentials in
Authorization header", as the Hub answers.

Each mirrored repo (``<mirror>/datasets/<org>/<name>/``) has one commit, ``main``: a sha1 of its
files' relative paths and SHA-256 digests (``revision.txt`` and ``@<sha>/`` folders left out), so
the sha changes exactly when the fixture's content does. Its files are the mirror's plus a
``.gitattributes`` (every Hub repo has one).

Run it by hand: ``python -m surrogate_dagster.hub.local_server --port 8766`` (then
``HF_ENDPOINT=http://127.0.0.1:8766``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..paths import resolve_repo_path

GITATTRIBUTES = b"*.jsonl filter=lfs diff=lfs merge=lfs -text\n*.parquet filter=lfs diff=lfs merge=lfs -text\n"
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"
_EPOCH = "2025-01-01T00:00:00.000Z"


@dataclass
class HubUser:
    """A Hub account behind one access token.

    ``orgs`` maps an organization to the user's role there (``admin``, ``write``, ``contributor``,
    ``read``); ``token_role`` is the token's own role (``write``, ``read``); ``accepted`` holds the
    gated repo ids whose terms this user accepted.
    """

    name: str
    token: str
    is_pro: bool = False
    orgs: dict[str, str] = field(default_factory=dict)
    token_role: str = "write"
    accepted: set[str] = field(default_factory=set)


@dataclass
class _Repo:
    repo_id: str
    root: Path
    sha: str
    files: dict[str, Path | bytes]  # relative path -> file on disk or bytes


def _repo_files(root: Path) -> dict[str, Path | bytes]:
    files: dict[str, Path | bytes] = {".gitattributes": GITATTRIBUTES}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != "revision.txt" and not rel.startswith("@"):
            files[rel] = p
    return files


def _content_sha(files: dict[str, Path | bytes]) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    for rel in sorted(files):
        data = files[rel]
        blob = data if isinstance(data, bytes) else data.read_bytes()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(blob).digest())
    return digest.hexdigest()


def load_mirror(mirror_dir: str | Path) -> dict[str, _Repo]:
    """repo id -> repo, for every dataset under ``<mirror_dir>/datasets/<org>/<name>/``."""
    base = resolve_repo_path(mirror_dir) / "datasets"
    repos: dict[str, _Repo] = {}
    for org in sorted(p for p in base.iterdir() if p.is_dir()):
        for root in sorted(p for p in org.iterdir() if p.is_dir()):
            files = _repo_files(root)
            repo_id = f"{org.name}/{root.name}"
            repos[repo_id] = _Repo(repo_id, root, _content_sha(files), files)
    return repos


@dataclass
class _State:
    repos: dict[str, _Repo]
    users: dict[str, HubUser]  # token -> user
    gated: dict[str, str]  # repo id -> "auto" | "manual"
    org_plans: dict[str, str]
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server_version = "surrogate-local-hub/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined]

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
              content_type: str = "application/json", head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)
        with self.state.lock:
            self.state.requests.append((self.command, self.path, status))

    def _json(self, status: int, data: Any, head: bool = False) -> None:
        self._send(status, json.dumps(data).encode(), head=head)

    def _error(self, status: int, message: str, code: str | None = None, head: bool = False) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, json.dumps({"error": message}).encode(), headers, head=head)

    def _user(self) -> tuple[bool, HubUser | None]:
        """(credentials acceptable, user): a missing token is anonymous, an unknown one is refused."""
        auth = self.headers.get("Authorization") or ""
        if not auth:
            return True, None
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or token not in self.state.users:
            return False, None
        return True, self.state.users[token]

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch(head=False)

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch(head=True)

    def _dispatch(self, head: bool) -> None:
        ok, user = self._user()
        if not ok:
            self._error(401, INVALID_CREDENTIALS, head=head)
            return
        parts = [unquote(p) for p in urlsplit(self.path).path.split("/")[1:]]
        if parts == ["api", "whoami-v2"]:
            self._whoami(user, head)
        elif len(parts) >= 4 and parts[:2] == ["api", "datasets"]:
            self._api_dataset(parts[2:], head)
        elif len(parts) >= 6 and parts[0] == "datasets" and parts[3] == "resolve":
            self._resolve(f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:]), user, head)
        else:
            self._error(404, f"no route for {self.command} {self.path}", head=head)

    def _whoami(self, user: HubUser | None, head: bool) -> None:
        if user is None:
            self._error(401, INVALID_CREDENTIALS, head=head)
            return
        orgs = [{"type": "org", "name": org, "fullname": org, "roleInOrg": role,
                 **({"plan": self.state.org_plans[org]} if org in self.state.org_plans else {})}
                for org, role in sorted(user.orgs.items())]
        self._json(200, {"type": "user", "id": hashlib.sha1(user.name.encode(), usedforsecurity=False).hexdigest()[:24],
                         "name": user.name, "fullname": user.name, "isPro": user.is_pro, "orgs": orgs,
                         "auth": {"type": "access_token",
                                  "accessToken": {"displayName": "local", "role": user.token_role}}}, head)

    def _repo_or_404(self, repo_id: str, head: bool) -> _Repo | None:
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self._error(404, "Repository not found", "RepoNotFound", head)
        return repo

    def _revision_ok(self, repo: _Repo, rev: str, head: bool) -> bool:
        if rev in ("main", "refs/heads/main", repo.sha):
            return True
        self._error(404, f"Invalid rev id: {rev}", "RevisionNotFound", head)
        return False

    def _api_dataset(self, rest: list[str], head: bool) -> None:
        repo = self._repo_or_404(f"{rest[0]}/{rest[1]}", head)
        if repo is None:
            return
        tail = rest[2:]
        if tail == ["refs"]:
            self._json(200, {"branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.sha}],
                             "converts": [], "tags": []}, head)
            return
        if tail and not (len(tail) >= 2 and tail[0] == "revision"):
            self._error(404, f"no route for {self.command} {self.path}", head=head)
            return
        if tail and not self._revision_ok(repo, "/".join(tail[1:]), head):
            return
        org = repo.repo_id.split("/")[0]
        self._json(200, {"_id": repo.sha[:24], "id": repo.repo_id, "author": org, "sha": repo.sha,
                         "lastModified": _EPOCH, "createdAt": _EPOCH, "private": False,
                         "gated": self.state.gated.get(repo.repo_id, False), "disabled": False,
                         "downloads": 0, "likes": 0, "tags": [],
                         "siblings": [{"rfilename": rel} for rel in sorted(repo.files)]}, head)

    def _resolve(self, repo_id: str, rev: str, path: str, user: HubUser | None, head: bool) -> None:
        repo = self._repo_or_404(repo_id, head)
        if repo is None:
            return
        if repo_id in self.state.gated and (user is None or repo_id not in user.accepted):
            if user is None:
                msg = f"Access to dataset {repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in."
                self._error(401, msg, "GatedRepo", head)
            else:
                msg = (f"Access to dataset {repo_id} is restricted and you are not in the authorized list. "
                       f"Visit https://huggingface.co/datasets/{repo_id} to ask for access.")
                self._error(403, msg, "GatedRepo", head)
            return
        if not self._revision_ok(repo, unquote(rev), head):
            return
        data = repo.files.get(path)
        if data is None:
            self._error(404, "Entry not found", "EntryNotFound", head)
            return
        blob = data if isinstance(data, bytes) else data.read_bytes()
        etag = hashlib.sha1(b"blob %d\0" % len(blob) + blob, usedforsecurity=False).hexdigest()
        self._send(200, blob, {"ETag": f'"{etag}"', "X-Repo-Commit": repo.sha},
                   content_type="application/octet-stream", head=head)


class HubServer:
    """The local Hub server; use as a context manager or call start()/stop().

    ``users``: the accounts (one token each); ``gated``: repo id -> gating mode ("auto" or "manual")
    for the repos whose files need accepted terms; ``org_plans``: organization -> plan name shown in
    whoami's ``orgs`` entries.
    """

    def __init__(self, mirror_dir: str | Path = "fixtures/hub", users: list[HubUser] | None = None,
                 gated: dict[str, str] | None = None, org_plans: dict[str, str] | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.state = _State(repos=load_mirror(mirror_dir),  # type: ignore[attr-defined]
                                   users={u.token: u for u in users or []}, gated=dict(gated or {}),
                                   org_plans=dict(org_plans or {}))
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> _State:
        return self._httpd.state  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """The endpoint to give ``HfApi(endpoint=...)`` or ``HF_ENDPOINT``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def sha(self, repo_id: str) -> str:
        """The commit ``main`` of ``repo_id`` points at."""
        return self.state.repos[repo_id].sha

    @property
    def repo_ids(self) -> list[str]:
        return sorted(self.state.repos)

    @property
    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every answered request."""
        with self.state.lock:
            return list(self.state.requests)

    def start(self) -> "HubServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="local-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    """Serve the mirror until interrupted, with one user (``--user``, token ``--token``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8766)
    ap.add_argument("--mirror", default="fixtures/hub")
    ap.add_argument("--user", default="local-user")
    ap.add_argument("--token", default="hf_local_token")
    ap.add_argument("--org", default="axentx")
    args = ap.parse_args()
    server = HubServer(args.mirror, [HubUser(args.user, args.token, is_pro=True, orgs={args.org: "admin"})],
                       host=args.host, port=args.port)
    print(f"local Hub on {server.url} ({len(server.repo_ids)} datasets)", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
