"""The accounts, JSON shapes and errors of the HF Hub API the local Hub server (``local_server.py``)
answers with: who may read and write a namespace, tree and paths-info entries, dataset card
metadata, byte ranges, and the error a route raises (status, message, the ``X-Error-Code``
huggingface_hub maps to an exception)."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

import yaml

from .local_repos import Blob, Revision

INVALID_CREDENTIALS = "Invalid credentials in Authorization header"
URL_PREFIX = {"model": "", "dataset": "datasets/"}  # where a repo type's files live in the URL space
_WRITE_ROLES = {"admin", "write", "contributor"}


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

    def can_read(self, namespace: str) -> bool:
        return namespace == self.name or namespace in self.orgs

    def can_write(self, namespace: str) -> bool:
        return self.token_role == "write" and (namespace == self.name or self.orgs.get(namespace) in _WRITE_ROLES)


class HttpError(Exception):
    """An answer other than 200: ``extra`` fields join ``error`` in the JSON body."""

    def __init__(self, status: int, message: str, code: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra


def iso_time(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts))


def card_data(rev: Revision) -> dict | None:
    blob = rev.files.get("README.md")
    if blob is None:
        return None
    text = b"".join(blob.read()).decode("utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    head = text[3:].split("\n---", 1)[0]
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def file_entry(rel: str, blob: Blob) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "file", "oid": blob.oid, "size": blob.size, "path": rel}
    if blob.lfs:
        entry["lfs"] = {"oid": blob.sha256, "size": blob.size, "pointerSize": len(blob.pointer)}
    return entry


def folder_entry(rel: str, files: dict[str, Blob]) -> dict[str, Any]:
    digest = hashlib.sha1(usedforsecurity=False)
    for p in sorted(f for f in files if f.startswith(rel + "/")):
        digest.update(p.encode() + files[p].oid.encode())
    return {"type": "directory", "oid": digest.hexdigest(), "size": 0, "path": rel}


def last_commit(rev: Revision) -> dict[str, str]:
    return {"id": rev.sha, "title": "local commit", "date": iso_time(rev.date)}


def tree_entries(rev: Revision, path: str, recursive: bool) -> list[dict[str, Any]] | None:
    """The entries under ``path`` (one level, or all with ``recursive``); None if it is no folder."""
    prefix = f"{path}/" if path else ""
    folders: set[str] = set()
    out: list[dict[str, Any]] = []
    for rel in sorted(rev.files):
        if not rel.startswith(prefix):
            continue
        parts = rel[len(prefix):].split("/")
        for i in range(1, len(parts)):
            folder = prefix + "/".join(parts[:i])
            if (recursive or i == 1) and folder not in folders:
                folders.add(folder)
                out.append(folder_entry(folder, rev.files))
        if recursive or len(parts) == 1:
            out.append(file_entry(rel, rev.files[rel]))
    if path and not out:
        return None
    # The Hub lists folders before files at each level.
    return sorted(out, key=lambda e: (e["path"].count("/"), e["type"] != "directory", e["path"]))


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """[start, end) of a single ``bytes=`` range, or None when it cannot be satisfied."""
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):
        n = int(m.group(2))
        return (max(size - n, 0), size) if n else None
    start = int(m.group(1))
    end = min(int(m.group(2)) + 1, size) if m.group(2) else size
    return (start, end) if start < size and start < end else None
