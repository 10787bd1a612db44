"""A real HTTP server on 127.0.0.1 that speaks the HF Hub API ``huggingface_hub``, ``datasets`` and
``transformers`` use, so a rehearsal points ``HF_ENDPOINT`` at it and changes nothing else.

It serves the repos of ``local_repos.RepoStore``: the dataset mirror (``fixtures/hub``), a folder of
models, and a push root written through the API. This module routes requests and answers the reads;
``local_writes.py`` holds the write routes, ``local_api.py`` the accounts and the JSON shapes.
Routes, with the Hub's headers and error codes (as
``huggingface_hub.utils.hf_raise_for_status`` maps them to ``RepositoryNotFoundError``,
``RevisionNotFoundError``, ``GatedRepoError``, ``RemoteEntryNotFoundError``):

- ``GET /api/whoami-v2``: the user of the ``Authorization: Bearer`` token (``name``, ``isPro``,
  ``orgs: [{name, roleInOrg, plan}]``, ``auth.accessToken.role``); 401 without a known token;
- ``GET /api/{models,datasets}/{id}[/revision/{rev}]``: ``id``, ``sha``, ``gated``, ``private``,
  ``siblings`` (``blobs=true``: with sizes and LFS digests), ``cardData``; ``expand=`` keeps the
  named fields only;
- ``GET /api/{type}s/{id}/refs``: the ``main`` branch and its commit;
- ``GET /api/{type}s/{id}/tree/{rev}[/{path}]`` (``recursive``, ``expand``) and
  ``POST .../paths-info/{rev}``: files and folders with ``oid``, ``size`` and ``lfs``;
- ``HEAD`` / ``GET /{id}/resolve/{rev}/{path}`` and ``/datasets/{id}/resolve/...``: the file with
  ``ETag``, ``X-Repo-Commit``, ``Content-Length``, ``X-Linked-Etag`` / ``X-Linked-Size`` for an LFS
  file, ``Accept-Ranges`` and 206 answers to ``Range``; a gated repo answers 401 ``GatedRepo`` to an
  anonymous request and 403 ``GatedRepo`` to a user who has not accepted its terms;
- ``POST /api/repos/create`` (``private``/``visibility``; 409 when it exists),
  ``POST /api/{type}s/{id}/preupload/{rev}`` (``regular`` or ``lfs`` per file),
  ``POST /{prefix}{id}.git/info/lfs/objects/batch`` (``basic`` transfer: an upload and a verify
  action on this server, none for an object it already has), ``PUT`` of the object, the verify
  ``POST``, and ``POST /api/{type}s/{id}/commit/{rev}`` (the NDJSON commit: ``header``, ``file``
  base64, ``lfsFile``, ``deletedFile``, ``deletedFolder``).

The Xet storage protocol is not spoken: ``huggingface_hub`` uploads through Xet whenever ``hf_xet``
is installed, so a client pushing here sets ``HF_HUB_DISABLE_XET=1`` (downloads need nothing: no
``X-Xet-*`` header is ever sent, so the client reads files over plain HTTP).

A request with a Bearer token the server does not know gets 401 "Invalid credentials in
Authorization header", as the Hub answers. A private repo is visible to its namespace's members
only (404 ``RepoNotFound`` to anyone else); writes need a ``write`` token of a member with a
``write``/``admin`` role. No token ever appears in a response or in the server's log
(``logging`` name ``surrogate_dagster.hub.local_server``: method, path and status only).

Run it by hand: ``python -m surrogate_dagster.hub.local_server --port 8766 [--models-dir DIR]
[--push-dir DIR]`` (then ``HF_ENDPOINT=http://127.0.0.1:8766``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..paths import resolve_repo_path
from .local_api import (INVALID_CREDENTIALS, URL_PREFIX, HttpError, HubUser, card_data, file_entry, folder_entry,
                        iso_time, last_commit, parse_range, tree_entries)
from .local_repos import Repo, RepoStore, Revision
from .local_writes import WriteRoutes

log = logging.getLogger(__name__)
_TYPES = {"models": "model", "datasets": "dataset"}


@dataclass
class _State:
    store: RepoStore
    users: dict[str, HubUser]  # token -> user
    gated: dict[str, str]  # repo id -> "auto" | "manual"
    org_plans: dict[str, str]
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(WriteRoutes, BaseHTTPRequestHandler):
    server_version = "surrogate-local-hub/2"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # _record logs each answer (method, path, status: never a header)

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined]

    @property
    def store(self) -> RepoStore:
        return self.state.store

    # -- answering -----------------------------------------------------------------------------
    def _record(self, status: int) -> None:
        with self.state.lock:
            self.state.requests.append((self.command, self.path, status))
        log.info("%s %s %d", self.command, urlsplit(self.path).path, status)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        # Recorded before the headers go out: a client that has read its answer finds it logged.
        self._record(status)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers)

    def _error(self, err: HttpError) -> None:
        headers = {"X-Error-Message": err.message}
        if err.code:
            headers["X-Error-Code"] = err.code
        self._send(err.status, json.dumps({"error": err.message, **err.extra}).encode(), headers)

    def _body(self) -> bytes:
        self.body_read = True
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _body_chunks(self):
        self.body_read = True
        left = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            yield self._body()
            return
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk

    def _user(self) -> HubUser | None:
        """The token's user; None when anonymous; a token the server does not know is refused."""
        auth = self.headers.get("Authorization") or ""
        if not auth:
            return None
        scheme, _, token = auth.partition(" ")
        user = self.state.users.get(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        return user

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch()

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch()

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch()

    def do_PUT(self) -> None:  # noqa: N802 - stdlib naming
        self._dispatch()

    def _dispatch(self) -> None:
        self.body_read = False
        try:
            user = self._user()
            url = urlsplit(self.path)
            self.query = {k: v for k, v in parse_qs(url.query).items()}
            parts = [unquote(p) for p in url.path.split("/")[1:]]
            self._route(parts, user)
        except HttpError as err:
            if self.command in ("POST", "PUT") and not self.body_read:
                self._drain()  # the unread body would be taken for the next request on this connection
            self._error(err)

    def _drain(self) -> None:
        try:
            for _ in self._body_chunks():
                pass
        except (OSError, ValueError):
            pass

    def _route(self, parts: list[str], user: HubUser | None) -> None:
        method = self.command
        if parts == ["api", "whoami-v2"]:
            return self._whoami(user)
        if parts == ["api", "repos", "create"] and method == "POST":
            return self._create_repo(user)
        if parts == ["api", "validate-yaml"] and method == "POST":
            return self._validate_yaml()
        if len(parts) == 2 and parts[0] == "api" and parts[1] in _TYPES and method == "GET":
            return self._list_repos(_TYPES[parts[1]], user)
        if len(parts) >= 4 and parts[0] == "api" and parts[1] in _TYPES:
            repo_type, repo_id, tail = _TYPES[parts[1]], f"{parts[2]}/{parts[3]}", parts[4:]
            return self._api_repo(method, repo_type, repo_id, tail, user)
        if len(parts) >= 4 and parts[0] == "lfs-upload" and parts[1] in _TYPES and method in ("PUT", "POST"):
            return self._lfs_upload(parts[4] if len(parts) > 4 else "", verify=False)
        if len(parts) >= 4 and parts[0] == "lfs-verify" and parts[1] in _TYPES and method == "POST":
            return self._lfs_upload(parts[4] if len(parts) > 4 else "", verify=True)
        repo_type, rest = ("dataset", parts[1:]) if parts[:1] == ["datasets"] else ("model", parts)
        if len(rest) >= 4 and rest[2] == "resolve" and method in ("GET", "HEAD"):
            return self._resolve(repo_type, f"{rest[0]}/{rest[1]}", rest[3], "/".join(rest[4:]), user)
        if len(rest) == 6 and rest[1].endswith(".git") and rest[2:] == ["info", "lfs", "objects", "batch"]:
            return self._lfs_batch(repo_type, f"{rest[0]}/{rest[1][:-4]}", user)
        raise HttpError(404, f"no route for {method} {urlsplit(self.path).path}")

    # -- repos and revisions -------------------------------------------------------------------
    def _repo(self, repo_type: str, repo_id: str, user: HubUser | None) -> Repo:
        repo = self.store.get(repo_type, repo_id)
        if repo is None or (repo.private and (user is None or not user.can_read(repo_id.split("/")[0]))):
            raise HttpError(404, "Repository not found", "RepoNotFound")
        return repo

    def _revision(self, repo: Repo, rev: str) -> Revision:
        found = self.store.resolve(repo, rev)
        if found is None:
            raise HttpError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return found

    def _check_gated(self, repo: Repo, user: HubUser | None) -> None:
        if repo.repo_id not in self.state.gated or (user is not None and repo.repo_id in user.accepted):
            return
        kind = "dataset" if repo.repo_type == "dataset" else "model"
        url = f"https://huggingface.co/{URL_PREFIX[repo.repo_type]}{repo.repo_id}"
        if user is None:
            raise HttpError(401, f"Access to {kind} {repo.repo_id} is restricted. You must have access to it and "
                                  "be authenticated to access it. Please log in.", "GatedRepo")
        raise HttpError(403, f"Access to {kind} {repo.repo_id} is restricted and you are not in the authorized "
                              f"list. Visit {url} to ask for access.", "GatedRepo")

    def _check_write(self, repo_type: str, repo_id: str, user: HubUser | None) -> None:
        if user is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        if not user.can_write(repo_id.split("/")[0]):
            raise HttpError(403, f"You don't have the rights to write to {repo_type} {repo_id}")

    def _api_repo(self, method: str, repo_type: str, repo_id: str, tail: list[str], user: HubUser | None) -> None:
        repo = self._repo(repo_type, repo_id, user)
        if method in ("GET", "HEAD"):
            if not tail:
                return self._info(repo, self._revision(repo, "main"), user)
            if tail[0] == "revision" and len(tail) >= 2:
                return self._info(repo, self._revision(repo, "/".join(tail[1:])), user)
            if tail == ["refs"]:
                return self._json(200, {"branches": [{"name": "main", "ref": "refs/heads/main",
                                                      "targetCommit": repo.main}],
                                        "converts": [], "tags": [],
                                        **({"pullRequests": []} if self._flag("include_prs") else {})})
            if tail[0] == "tree" and len(tail) >= 2:
                return self._list_tree(self._revision(repo, tail[1]), "/".join(tail[2:]).strip("/"))
            if tail[0] in ("xet-write-token", "xet-read-token"):
                raise HttpError(501, "this local Hub stores files over LFS, not Xet: set HF_HUB_DISABLE_XET=1")
        elif method == "POST" and len(tail) >= 2:
            if tail[0] == "paths-info":
                return self._paths_info(self._revision(repo, "/".join(tail[1:])))
            if tail[0] == "preupload":
                self._check_write(repo_type, repo_id, user)
                return self._preupload(repo, "/".join(tail[1:]))
            if tail[0] == "commit":
                self._check_write(repo_type, repo_id, user)
                return self._commit(repo, "/".join(tail[1:]))
        raise HttpError(404, f"no route for {method} {urlsplit(self.path).path}")

    def _list_repos(self, repo_type: str, user: HubUser | None) -> None:
        """``HfApi.list_models`` / ``list_datasets``: ``author`` and ``search`` filter, one page; a
        private repo is listed only to a member of its namespace."""
        author = (self.query.get("author") or [None])[-1]
        search = (self.query.get("search") or [""])[-1].lower()
        out = []
        for repo_id in sorted(self.store.list_ids(repo_type)):
            if (author and repo_id.split("/")[0] != author) or search not in repo_id.lower():
                continue
            repo = self.store.get(repo_type, repo_id)
            if repo is None or (repo.private and (user is None or not user.can_read(repo_id.split("/")[0]))):
                continue
            out.append({"_id": repo.main[:24], "id": repo_id, "author": repo_id.split("/")[0], "sha": repo.main,
                        "private": repo.private, "gated": self.state.gated.get(repo_id, False), "downloads": 0,
                        "likes": 0, "tags": [], **({"modelId": repo_id} if repo_type == "model" else {})})
        self._json(200, out)

    def _flag(self, name: str) -> bool:
        return (self.query.get(name) or ["false"])[-1].lower() in ("1", "true")

    def _info(self, repo: Repo, rev: Revision, user: HubUser | None) -> None:
        blobs = self._flag("blobs")
        siblings = []
        for rel in sorted(rev.files):
            sib: dict[str, Any] = {"rfilename": rel}
            if blobs:
                blob = rev.files[rel]
                sib.update(size=blob.size, blobId=blob.oid)
                if blob.lfs:
                    sib["lfs"] = {"sha256": blob.sha256, "size": blob.size, "pointerSize": len(blob.pointer)}
            siblings.append(sib)
        org = repo.repo_id.split("/")[0]
        info: dict[str, Any] = {
            "_id": rev.sha[:24], "id": repo.repo_id, "author": org, "sha": rev.sha,
            "lastModified": iso_time(rev.date), "createdAt": iso_time(rev.date), "private": repo.private,
            "gated": self.state.gated.get(repo.repo_id, False), "disabled": False, "downloads": 0, "likes": 0,
            "tags": [], "siblings": siblings, "cardData": card_data(rev),
        }
        if repo.repo_type == "model":
            info.update(modelId=repo.repo_id, library_name="transformers")
        expand = [e for v in self.query.get("expand", []) for e in v.split(",")]
        if expand:
            info = {k: v for k, v in info.items() if k in ("_id", "id") or k in expand}
        self._json(200, info)

    def _list_tree(self, rev: Revision, path: str) -> None:
        entries = tree_entries(rev, path, self._flag("recursive"))
        if entries is None:
            if path in rev.files:
                raise HttpError(400, f"{path} is a file, not a folder")
            raise HttpError(404, f"Entry not found: {path}", "EntryNotFound")
        if self._flag("expand"):
            for e in entries:
                e["lastCommit"] = last_commit(rev)
        self._json(200, entries)

    def _form(self) -> dict[str, list[str]]:
        body = self._body()
        if "json" in (self.headers.get("Content-Type") or ""):
            data = json.loads(body or b"{}")
            return {k: (v if isinstance(v, list) else [str(v).lower() if isinstance(v, bool) else str(v)])
                    for k, v in data.items()}
        return parse_qs(body.decode())

    def _paths_info(self, rev: Revision) -> None:
        form = self._form()
        expand = (form.get("expand") or ["false"])[-1].lower() in ("1", "true")
        out = []
        for path in form.get("paths", []):
            path = path.strip("/")
            if path in rev.files:
                entry = file_entry(path, rev.files[path])
            elif any(f.startswith(path + "/") for f in rev.files):
                entry = folder_entry(path, rev.files)
            else:
                continue
            if expand:
                entry["lastCommit"] = last_commit(rev)
            out.append(entry)
        self._json(200, out)

    def _resolve(self, repo_type: str, repo_id: str, rev: str, path: str, user: HubUser | None) -> None:
        repo = self._repo(repo_type, repo_id, user)
        self._check_gated(repo, user)
        revision = self._revision(repo, rev)
        blob = revision.files.get(path)
        if blob is None:
            raise HttpError(404, "Entry not found", "EntryNotFound")
        headers = {"ETag": f'"{blob.etag}"', "X-Repo-Commit": revision.sha, "Accept-Ranges": "bytes"}
        if blob.lfs:
            headers.update({"X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(blob.size)})
        start, end, status = 0, blob.size, 200
        if self.headers.get("Range") and self.command == "GET":
            span = parse_range(self.headers["Range"], blob.size)
            if span is None:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{blob.size}")
                self.send_header("Content-Length", "0")
                self._record(416)
                self.end_headers()
                return
            start, end, status = span[0], span[1], 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{blob.size}"
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        for k, v in headers.items():
            self.send_header(k, v)
        self._record(status)  # before the headers go out, as in _send
        self.end_headers()
        if self.command == "GET":
            try:
                for chunk in blob.read(start, end):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading (a streaming reader that had enough)

    def _whoami(self, user: HubUser | None) -> None:
        if user is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        orgs = [{"type": "org", "name": org, "fullname": org, "roleInOrg": role,
                 **({"plan": self.state.org_plans[org]} if org in self.state.org_plans else {})}
                for org, role in sorted(user.orgs.items())]
        uid = hashlib.sha1(user.name.encode(), usedforsecurity=False).hexdigest()[:24]
        self._json(200, {"type": "user", "id": uid, "name": user.name, "fullname": user.name,
                         "isPro": user.is_pro, "orgs": orgs,
                         "auth": {"type": "access_token",
                                  "accessToken": {"displayName": "local", "role": user.token_role}}})

class HubServer:
    """The local Hub server; use as a context manager or call start()/stop().

    ``mirror_dir``: the dataset mirror; ``models_dir``: read-only models (``<org>/<name>/``);
    ``push_dir``: where repos created and committed through the API are written (None: read-only
    server). ``users``: the accounts (one token each); ``gated``: repo id -> gating mode ("auto" or
    "manual") for the repos whose files need accepted terms; ``org_plans``: organization -> plan
    name shown in whoami's ``orgs`` entries.
    """

    def __init__(self, mirror_dir: str | Path | None = "fixtures/hub", users: list[HubUser] | None = None,
                 gated: dict[str, str] | None = None, org_plans: dict[str, str] | None = None,
                 host: str = "127.0.0.1", port: int = 0, *, models_dir: str | Path | None = None,
                 push_dir: str | Path | None = None, mirror_pins: bool = False) -> None:
        store = RepoStore(*(resolve_repo_path(p) if p is not None else None for p in (mirror_dir, models_dir, push_dir)),
                          mirror_pins=mirror_pins)
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.state = _State(store=store, users={u.token: u for u in users or []},  # type: ignore[attr-defined]
                                   gated=dict(gated or {}), org_plans=dict(org_plans or {}))
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> _State:
        return self._httpd.state  # type: ignore[attr-defined]

    @property
    def url(self) -> str:
        """The endpoint to give ``HfApi(endpoint=...)`` or ``HF_ENDPOINT``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def sha(self, repo_id: str, repo_type: str = "dataset") -> str:
        """The commit ``main`` of ``repo_id`` points at."""
        repo = self.state.store.get(repo_type, repo_id)
        if repo is None:
            raise KeyError(f"{repo_type} {repo_id}")
        return repo.main

    @property
    def repo_ids(self) -> list[str]:
        """The dataset repos served."""
        return self.state.store.list_ids("dataset")

    @property
    def model_ids(self) -> list[str]:
        return self.state.store.list_ids("model")

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

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the command line)."""
        try:
            self._httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._httpd.server_close()

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Serve the mirror, models and pushes until interrupted, with one user (``--user``, token
    ``--token``, admin of ``--org``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8766)
    ap.add_argument("--mirror", default="fixtures/hub", help="the dataset mirror (<mirror>/datasets/<org>/<name>/)")
    ap.add_argument("--models-dir", default=None, help="read-only models (<models-dir>/<org>/<name>/)")
    ap.add_argument("--push-dir", default=None, help="where repos created through the API are written")
    ap.add_argument("--user", default="local-user")
    ap.add_argument("--token", default="hf_local_token")
    ap.add_argument("--org", default="axentx")
    args = ap.parse_args(argv)
    server = HubServer(args.mirror, [HubUser(args.user, args.token, is_pro=True, orgs={args.org: "admin"})],
                       host=args.host, port=args.port, models_dir=args.models_dir, push_dir=args.push_dir)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    print(f"local Hub on {server.url} ({len(server.repo_ids)} datasets, {len(server.model_ids)} models)", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
