"""The write routes of the local Hub server: repo creation, preupload, the LFS batch API with its
upload and verify URLs, the NDJSON commit, and the README metadata check ``upload_folder`` runs.

``WriteRoutes`` is a mixin of the server's request handler (``local_server._Handler``): it uses the
handler's ``store``, ``_body``/``_body_chunks``, ``_json``/``_send``, ``_repo``/``_revision`` and
``_check_write``, and writes only into the store's push root."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import yaml

from .local_api import INVALID_CREDENTIALS, URL_PREFIX, HttpError, HubUser
from .local_repos import Repo, is_lfs


class WriteRoutes:
    """The POST and PUT routes that change the push root (and the metadata check before one)."""

    def _validate_yaml(self) -> None:
        """A README's front matter must be a YAML mapping (what upload_folder checks before a push)."""
        text = str(json.loads(self._body() or b"{}").get("content", ""))
        head = text[3:].split("\n---", 1)[0] if text.startswith("---") else ""
        try:
            data = yaml.safe_load(head) if head.strip() else {}
        except yaml.YAMLError as e:
            return self._json(400, {"errors": [{"message": f"invalid YAML: {e}"}], "warnings": []})
        if not isinstance(data, dict):
            return self._json(400, {"errors": [{"message": "the metadata must be a YAML mapping"}], "warnings": []})
        self._json(200, {"errors": [], "warnings": []})

    def _create_repo(self, user: HubUser | None) -> None:
        data = json.loads(self._body() or b"{}")
        repo_type = data.get("type") or "model"
        if user is None:
            raise HttpError(401, INVALID_CREDENTIALS)
        namespace = data.get("organization") or user.name
        repo_id = f"{namespace}/{data.get('name', '')}"
        if repo_type not in URL_PREFIX or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id) or ".." in repo_id:
            raise HttpError(400, f"Invalid repo name or type: {repo_type} {repo_id}")
        self._check_write(repo_type, repo_id, user)
        if self.store.push_dir is None:
            raise HttpError(403, "This local Hub has no push root: it is read-only")
        private = bool(data.get("private")) or data.get("visibility") in ("private", "protected")
        url = f"{self._endpoint()}/{URL_PREFIX[repo_type]}{repo_id}"
        if not self.store.create(repo_type, repo_id, private):
            # The Hub names the existing repo: create_repo(exist_ok=True) returns that url.
            raise HttpError(409, "You already created this repo", url=url)
        self._json(200, {"url": url, "name": repo_id, "id": repo_id})

    def _endpoint(self) -> str:
        host, port = self.server.server_address[:2]  # type: ignore[misc]
        return f"http://{host}:{port}"

    def _writable(self, repo: Repo) -> None:
        if not repo.writable:
            raise HttpError(403, f"{repo.repo_id} is served read-only from the local mirror")

    def _preupload(self, repo: Repo, rev: str) -> None:
        self._writable(repo)
        revision = self._revision(repo, rev)
        data = json.loads(self._body() or b"{}")
        files = []
        for f in data.get("files", []):
            path, size = f["path"], int(f.get("size", 0))
            existing = revision.files.get(path)
            files.append({"path": path, "uploadMode": "lfs" if is_lfs(path, size) else "regular",
                          "shouldIgnore": False, "oid": existing.git_oid if existing else None})
        self._json(200, {"files": files, "commitOid": revision.sha})

    def _lfs_batch(self, repo_type: str, repo_id: str, user: HubUser | None) -> None:
        repo = self._repo(repo_type, repo_id, user)
        data = json.loads(self._body() or b"{}")
        if data.get("operation") != "upload":
            raise HttpError(400, "only LFS uploads are served here; download files with resolve")
        self._check_write(repo_type, repo_id, user)
        self._writable(repo)
        objects = []
        for obj in data.get("objects", []):
            oid, size = str(obj.get("oid", "")), int(obj.get("size", 0))
            if not re.fullmatch(r"[0-9a-f]{64}", oid):
                objects.append({"oid": oid, "size": size, "error": {"code": 422, "message": "invalid oid"}})
                continue
            entry: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            if not self.store.has_lfs_object(oid, size):
                base = f"{self._endpoint()}/lfs-{{}}/{repo_type}s/{repo_id}/{oid}"
                entry["actions"] = {"upload": {"href": base.format("upload")},
                                    "verify": {"href": base.format("verify")}}
            objects.append(entry)
        self._send(200, json.dumps({"transfer": "basic", "objects": objects, "hash_algo": "sha256"}).encode(),
                   content_type="application/vnd.git-lfs+json")

    def _lfs_upload(self, oid: str, verify: bool) -> None:
        # Upload URLs carry no credentials (the Hub's are pre-signed): the oid is the capability,
        # and a body whose sha256 is not the oid is refused.
        if self.store.push_dir is None or not re.fullmatch(r"[0-9a-f]{64}", oid):
            raise HttpError(404, "unknown LFS object")
        if verify:
            body = json.loads(self._body() or b"{}")
            if not self.store.has_lfs_object(oid, int(body.get("size", -1))):
                raise HttpError(404, f"LFS object {oid} was not uploaded")
            return self._json(200, {"success": True})
        if not self.store.store_lfs_object(oid, self._body_chunks()):
            raise HttpError(400, "the uploaded content does not match its sha256 oid")
        self._send(200, b"", content_type="text/plain")

    def _commit(self, repo: Repo, rev: str) -> None:
        self._writable(repo)
        if rev not in ("main", "refs/heads/main"):
            raise HttpError(400, f"commits go to main here, not {rev}", "RevisionNotFound")
        adds: dict[str, bytes | Path] = {}
        deletes: list[str] = []
        folders: list[str] = []
        summary = ""
        parent = None
        for line in self._body().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item.get("key"), item.get("value") or {}
            if key == "header":
                summary, parent = value.get("summary", ""), value.get("parentCommit")
            elif key == "file":
                content = value.get("content", "")
                adds[value["path"]] = base64.b64decode(content) if value.get("encoding") == "base64" \
                    else content.encode()
            elif key == "lfsFile":
                oid = value.get("oid", "")
                if not re.fullmatch(r"[0-9a-f]{64}", oid) or not self.store.lfs_object(oid).is_file():
                    raise HttpError(422, f"LFS file {value.get('path')} was never uploaded (oid {oid})")
                adds[value["path"]] = self.store.lfs_object(oid)
            elif key == "deletedFile":
                deletes.append(value["path"])
            elif key == "deletedFolder":
                folders.append(value["path"])
            else:
                raise HttpError(400, f"unknown commit operation {key!r}")
        for path in [*adds, *deletes, *folders]:
            if path.startswith("/") or ".." in path.split("/") or path.split("/")[0] in ("revision.txt", "private") \
                    or path.startswith("@"):
                raise HttpError(400, f"invalid path in repo: {path}")
        if parent is not None and parent != repo.main:
            raise HttpError(412, "A commit has happened since. Please refresh and try again.")
        sha = self.store.commit(repo, adds, deletes, folders, summary)
        url = f"{self._endpoint()}/{URL_PREFIX[repo.repo_type]}{repo.repo_id}"
        self._json(200, {"success": True, "commitOid": sha, "commitUrl": f"{url}/commit/{sha}",
                         "hookOutput": ""})
