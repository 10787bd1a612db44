"""Object store abstraction with a per-object SHA-256 manifest.

Every object ``K`` has a sidecar ``K.sha256.json`` = {key, sha256, size, content_type}. The
sidecar is the commit marker (``exists``/``list`` see a key only with both present) and what
reads verify the bytes against, because S3 multipart ETags are not MD5 and the S3 client runs
with checksums off for Wasabi (see PITFALLS "Storage, APIs, sandboxes").

Overwrites never lose the old object: the new bytes are stored in full (a temp file, or an S3
upload) before anything the old version needs is touched, and while a replacement is in flight
the sidecar may list the old version under ``previous``; a read accepts the bytes when they match
either version. A writer killed at any moment therefore leaves the old or the new version, whole.
How each backend orders the steps, and why concurrent writers end with exactly one writer's
object, is in local_store.py and s3_store.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MANIFEST_SUFFIX = ".sha256.json"
# Temp files of in-flight writes are named with this prefix; keys may not use it, so list()
# can skip temp names without ambiguity.
TMP_PREFIX = ".~tmp-"
CHUNK_SIZE = 8 * 1024 * 1024
MAX_KEY_BYTES = 1024  # S3's limit; applied everywhere so local and S3 accept the same keys


@dataclass(frozen=True)
class ObjectInfo:
    """What the manifest records about one stored object."""

    key: str
    sha256: str
    size: int


class MissingObject(LookupError):
    """The key has no committed object (absent, deleted, or its write never finished)."""

    def __init__(self, key: str, detail: str = "") -> None:
        self.key = key
        super().__init__(f"no object under key {key!r}" + (f": {detail}" if detail else ""))


class IntegrityError(Exception):
    """Stored bytes do not match the SHA-256 recorded in the manifest."""

    def __init__(self, key: str, expected: str, actual: str) -> None:
        self.key, self.expected, self.actual = key, expected, actual
        super().__init__(f"integrity check failed for {key!r}: expected sha256 {expected}, got {actual}")


def validate_key(key: str) -> str:
    """Return ``key`` if it is a safe '/'-separated relative key, else raise ValueError."""
    if not isinstance(key, str):
        raise ValueError(f"object key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError("object key is empty")
    if key.startswith("/"):
        raise ValueError(f"object key {key!r} is absolute; keys are '/'-separated relative paths")
    if "\\" in key or "\x00" in key:
        raise ValueError(f"object key {key!r} contains a backslash or NUL")
    for part in key.split("/"):
        if part in ("", ".", ".."):
            raise ValueError(f"object key {key!r} has an empty, '.' or '..' segment")
        if part.startswith(TMP_PREFIX):
            raise ValueError(f"object key {key!r} uses the reserved temp prefix {TMP_PREFIX!r}")
    if key.endswith(MANIFEST_SUFFIX):
        raise ValueError(f"object key {key!r} ends with the reserved manifest suffix {MANIFEST_SUFFIX!r}")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise ValueError(f"object key is longer than {MAX_KEY_BYTES} bytes")
    return key


def validate_raw_key(key: str) -> str:
    """Like validate_key, but also admits the manifest sidecar key of a valid key."""
    validate_key(key.removesuffix(MANIFEST_SUFFIX))
    return key


def validate_prefix(prefix: str) -> str:
    """A list() prefix: '' or a string prefix of a valid key (it may end with '/')."""
    if prefix == "":
        return prefix
    validate_key(prefix.rstrip("/") or "/")  # '/' alone is rejected as absolute
    return prefix


def iter_file_chunks(path: str | os.PathLike[str], chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield a file's bytes in chunks (bounded memory for multi-GB checkpoints)."""
    with open(path, "rb") as fh:
        while chunk := fh.read(chunk_size):
            yield chunk


def sha256_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """Return (hex sha256, size) of a file, read in chunks."""
    h, size = hashlib.sha256(), 0
    for chunk in iter_file_chunks(path):
        h.update(chunk)
        size += len(chunk)
    return h.hexdigest(), size


class _HashingIter:
    """Wraps a chunk iterator, hashing and counting the bytes as they pass through."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._it = iter(chunks)
        self._h = hashlib.sha256()
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._it:
            chunk = bytes(chunk)
            self._h.update(chunk)
            self.size += len(chunk)
            yield chunk

    @property
    def hexdigest(self) -> str:
        return self._h.hexdigest()


# A read whose bytes match no listed version is retried this many times in all: a concurrent
# overwrite can swap the object between the manifest read and the object read.
READ_ATTEMPTS = 3


def manifest_bytes(info: ObjectInfo, content_type: str | None, previous: ObjectInfo | None = None) -> bytes:
    """The sidecar document of ``info``; ``previous`` names the version it may still be replacing."""
    doc: dict = {"key": info.key, "sha256": info.sha256, "size": info.size, "content_type": content_type}
    if previous is not None:
        doc["previous"] = {"sha256": previous.sha256, "size": previous.size}
    return json.dumps(doc).encode()


def manifest_versions(key: str, doc: dict) -> list[ObjectInfo]:
    """The versions a sidecar accepts: its own first, then ``previous`` when present."""
    try:
        out = [ObjectInfo(key=key, sha256=str(doc["sha256"]), size=int(doc["size"]))]
        prev = doc.get("previous")
        if prev is not None:
            out.append(ObjectInfo(key=key, sha256=str(prev["sha256"]), size=int(prev["size"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise IntegrityError(key, "a valid manifest", f"unparseable manifest ({exc})") from None
    return out


class ObjectStore(ABC):
    """Key/value blob store with SHA-256 verification on every read.

    Subclasses implement the raw primitives (``_replace``, ``_open_raw``, ...); manifest
    parsing and read verification live here so local and S3 behave identically.
    """

    # ---- raw primitives ---------------------------------------------------------------------
    @abstractmethod
    def _replace(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> ObjectInfo:
        """Store the chunks as the new version of ``key``, sidecar included.

        At every moment (the writer may be killed at any point) a reader sees the old version
        or the new one, whole; if the chunks iterator raises, the old version stays.
        """

    @abstractmethod
    def _open_raw(self, key: str) -> BinaryIO:
        """Open the raw object for reading; raise MissingObject if absent."""

    def _open_raw_claimed(self, key: str) -> tuple[BinaryIO, str | None]:
        """The raw object and the sha256 it carries itself (S3 metadata), if any."""
        return self._open_raw(key), None

    @abstractmethod
    def _exists_raw(self, key: str) -> bool: ...

    @abstractmethod
    def _list_raw(self, prefix: str) -> Iterable[str]:
        """All raw keys (objects and sidecars, no temp names) starting with ``prefix``."""

    @abstractmethod
    def _delete_raw(self, key: str) -> None:
        """Delete the raw key; absent keys are not an error."""

    @abstractmethod
    def uri(self, key: str) -> str:
        """A URI for the key: file:///... or s3://bucket/prefix/key."""

    def _download_raw(self, key: str, dest: Path) -> tuple[str | None, str | None]:
        """Copy the raw object to ``dest``; return (sha256 if computed on the way, sha256 the
        object claims itself); either may be None."""
        h = hashlib.sha256()
        stream, claimed = self._open_raw_claimed(key)
        with stream as src, open(dest, "wb") as out:
            while chunk := src.read(CHUNK_SIZE):
                h.update(chunk)
                out.write(chunk)
        return h.hexdigest(), claimed

    # ---- manifest protocol ------------------------------------------------------------------
    @staticmethod
    def manifest_key(key: str) -> str:
        return key + MANIFEST_SUFFIX

    def _manifest_doc(self, key: str) -> dict:
        """The parsed sidecar of ``key``; MissingObject when there is none."""
        try:
            with self._open_raw(self.manifest_key(key)) as fh:
                raw = fh.read()
        except MissingObject:
            detail = ""
            if self._exists_raw(key):
                detail = "object present but its manifest is missing (unfinished write?)"
            raise MissingObject(key, detail) from None
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise IntegrityError(key, "a valid manifest", f"unparseable manifest ({exc})") from None
        if not isinstance(doc, dict):
            raise IntegrityError(key, "a valid manifest", "a manifest that is not a JSON object")
        if doc.get("key") != key:
            raise IntegrityError(key, f"manifest for {key!r}", f"manifest for {doc.get('key')!r}")
        manifest_versions(key, doc)  # raises on a malformed document
        return doc

    @staticmethod
    def _match(key: str, doc: dict, actual: str, size: int, claimed: str | None) -> ObjectInfo:
        """The version the bytes (``actual``, ``size``) are, or IntegrityError.

        Bytes that carry their own sha256 (``claimed``) are checked against it alone: it was
        stored atomically with them, while the sidecar may name a concurrent writer's version.
        """
        if claimed is not None:
            if claimed == actual:
                return ObjectInfo(key, actual, size)
            raise IntegrityError(key, claimed, actual)
        for version in manifest_versions(key, doc):
            if version.sha256 == actual and version.size == size:
                return version
        raise IntegrityError(key, str(doc["sha256"]), actual)

    def info(self, key: str) -> ObjectInfo:
        """Manifest entry for ``key`` (no read of the object itself)."""
        validate_key(key)
        return manifest_versions(key, self._manifest_doc(key))[0]

    # ---- public API -------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> ObjectInfo:
        """Store ``data`` under ``key`` and record its sha256/size in the manifest sidecar."""
        validate_key(key)
        return self._replace(key, [bytes(data)], content_type)

    def put_chunks(self, key: str, chunks: Iterable[bytes], content_type: str | None = None) -> ObjectInfo:
        """Stream chunks into ``key`` (hashing on the way); if the iterator raises, nothing changes."""
        validate_key(key)
        return self._replace(key, chunks, content_type)

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None) -> ObjectInfo:
        """Store a local file under ``key`` in bounded memory."""
        return self.put_chunks(key, iter_file_chunks(path), content_type)

    def _read_verified(self, key: str, fetch) -> tuple[object, ObjectInfo]:
        """``fetch(doc)`` -> (payload, info), read again while it fails verification and the
        manifest moved on meanwhile (a concurrent overwrite), at most READ_ATTEMPTS times."""
        validate_key(key)
        doc = self._manifest_doc(key)
        for attempt in range(READ_ATTEMPTS):
            try:
                return fetch(doc)
            except (IntegrityError, MissingObject):
                if attempt == READ_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
                doc = self._manifest_doc(key)
        raise AssertionError("unreachable")

    def get_bytes(self, key: str) -> bytes:
        """Return the object's bytes after verifying them against the manifest.

        Raises MissingObject when there is no committed object, IntegrityError on mismatch.
        """

        def fetch(doc: dict) -> tuple[bytes, ObjectInfo]:
            try:
                stream, claimed = self._open_raw_claimed(key)
                with stream as fh:
                    data = fh.read()
            except MissingObject:
                raise MissingObject(key, "manifest present but the object is gone") from None
            return data, self._match(key, doc, hashlib.sha256(data).hexdigest(), len(data), claimed)

        data, _ = self._read_verified(key, fetch)
        return data  # type: ignore[return-value]

    def get_file(self, key: str, path: str | os.PathLike[str]) -> ObjectInfo:
        """Download ``key`` to ``path`` (via a temp file beside it); ``path`` only appears if verified."""
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)

        def fetch(doc: dict) -> tuple[None, ObjectInfo]:
            tmp = dest.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
            try:
                try:
                    actual, claimed = self._download_raw(key, tmp)
                except MissingObject:
                    raise MissingObject(key, "manifest present but the object is gone") from None
                size = tmp.stat().st_size
                if actual is None:
                    actual, size = sha256_file(tmp)
                info = self._match(key, doc, actual, size, claimed)
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
            return None, info

        _, info = self._read_verified(key, fetch)
        return info

    def exists(self, key: str) -> bool:
        """True when ``key`` has a committed object (object and manifest both present)."""
        validate_key(key)
        return self._exists_raw(self.manifest_key(key)) and self._exists_raw(key)

    def list(self, prefix: str = "") -> list[str]:
        """Sorted committed keys starting with ``prefix`` (string prefix, as in S3)."""
        raw = set(self._list_raw(validate_prefix(prefix)))
        return sorted(k for k in raw if not k.endswith(MANIFEST_SUFFIX) and k + MANIFEST_SUFFIX in raw)

    def delete(self, key: str) -> None:
        """Remove ``key`` and its manifest; deleting an absent key is not an error."""
        validate_key(key)
        # Sidecar first: a crash in between leaves an uncommitted object, never a dangling manifest.
        self._delete_raw(self.manifest_key(key))
        self._delete_raw(key)
