"""Object store abstraction with a per-object SHA-256 manifest.

Every object ``K`` has a sidecar ``K.sha256.json`` holding its sha256 and size. The sidecar is
the commit marker: it is removed before an object is (re)written and written only after the
object is fully stored, so a reader never trusts a half-finished write. Reads verify the bytes
against the sidecar, because S3 multipart ETags are not MD5 and the S3 client runs with
checksums off for Wasabi (see PITFALLS "Storage, APIs, sandboxes").

Concurrency model: one writer per key. Two writers racing on the same key can leave the object
of one and the manifest of the other; that is reported as an IntegrityError on read, never
silently returned.
"""

from __future__ import annotations

import hashlib
import json
import os
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


class ObjectStore(ABC):
    """Key/value blob store with SHA-256 verification on every read.

    Subclasses implement the raw primitives (``_put_raw_stream``, ``_open_raw``, ...); the
    manifest protocol lives here so local and S3 behave identically.
    """

    # ---- raw primitives (no manifest logic) -------------------------------------------------
    @abstractmethod
    def _put_raw_stream(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> None:
        """Store the chunks under ``key`` atomically: all or nothing visible under the key."""

    def _put_raw_bytes(self, key: str, data: bytes, content_type: str | None) -> None:
        self._put_raw_stream(key, [data], content_type)

    @abstractmethod
    def _open_raw(self, key: str) -> BinaryIO:
        """Open the raw object for reading; raise MissingObject if absent."""

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

    def _download_raw(self, key: str, dest: Path) -> str | None:
        """Copy the raw object to ``dest``; return its sha256 if computed on the way, else None."""
        h = hashlib.sha256()
        with self._open_raw(key) as src, open(dest, "wb") as out:
            while chunk := src.read(CHUNK_SIZE):
                h.update(chunk)
                out.write(chunk)
        return h.hexdigest()

    # ---- manifest protocol ------------------------------------------------------------------
    @staticmethod
    def manifest_key(key: str) -> str:
        return key + MANIFEST_SUFFIX

    def _commit(self, info: ObjectInfo, content_type: str | None) -> ObjectInfo:
        doc = {"key": info.key, "sha256": info.sha256, "size": info.size, "content_type": content_type}
        self._put_raw_bytes(self.manifest_key(info.key), json.dumps(doc).encode(), "application/json")
        return info

    def _uncommit(self, key: str) -> None:
        # Removing the sidecar first means a crash during the rewrite leaves "no object" rather
        # than a new object paired with the old manifest.
        self._delete_raw(self.manifest_key(key))

    def info(self, key: str) -> ObjectInfo:
        """Manifest entry for ``key`` (no read of the object itself)."""
        validate_key(key)
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
            info = ObjectInfo(key=doc["key"], sha256=doc["sha256"], size=int(doc["size"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise IntegrityError(key, "a valid manifest", f"unparseable manifest ({exc})") from None
        if info.key != key:
            raise IntegrityError(key, f"manifest for {key!r}", f"manifest for {info.key!r}")
        return info

    # ---- public API -------------------------------------------------------------------------
    def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> ObjectInfo:
        """Store ``data`` under ``key`` and record its sha256/size in the manifest sidecar."""
        validate_key(key)
        data = bytes(data)
        info = ObjectInfo(key, hashlib.sha256(data).hexdigest(), len(data))
        self._uncommit(key)
        self._put_raw_bytes(key, data, content_type)
        return self._commit(info, content_type)

    def put_chunks(self, key: str, chunks: Iterable[bytes], content_type: str | None = None) -> ObjectInfo:
        """Stream chunks into ``key`` (hashing on the way); if the iterator raises, nothing is stored."""
        validate_key(key)
        hashed = _HashingIter(chunks)
        self._uncommit(key)
        self._put_raw_stream(key, hashed, content_type)
        return self._commit(ObjectInfo(key, hashed.hexdigest, hashed.size), content_type)

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None) -> ObjectInfo:
        """Store a local file under ``key`` in bounded memory."""
        return self.put_chunks(key, iter_file_chunks(path), content_type)

    def get_bytes(self, key: str) -> bytes:
        """Return the object's bytes after verifying them against the manifest.

        Raises MissingObject when there is no committed object, IntegrityError on mismatch.
        """
        info = self.info(key)
        try:
            with self._open_raw(key) as fh:
                data = fh.read()
        except MissingObject:
            raise MissingObject(key, "manifest present but the object is gone") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != info.sha256 or len(data) != info.size:
            raise IntegrityError(key, info.sha256, actual)
        return data

    def get_file(self, key: str, path: str | os.PathLike[str]) -> ObjectInfo:
        """Download ``key`` to ``path`` (via a temp file beside it); ``path`` only appears if verified."""
        info = self.info(key)
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        try:
            try:
                actual = self._download_raw(key, tmp)
            except MissingObject:
                raise MissingObject(key, "manifest present but the object is gone") from None
            size = tmp.stat().st_size
            if actual is None:
                actual, size = sha256_file(tmp)
            if actual != info.sha256 or size != info.size:
                raise IntegrityError(key, info.sha256, actual)
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
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
        self._uncommit(key)
        self._delete_raw(key)
