"""Filesystem ObjectStore: temp file + fsync + os.replace, committed under a directory lock.

A write stages the new bytes in a temp file beside the target (same filesystem, so os.replace
is an atomic rename) and fsyncs it. Only then, holding an exclusive flock on the directory, it:

1. writes the sidecar naming the new version with the current one as ``previous`` (reads
   accept either, so the old object stays readable while the rename is pending);
2. renames the temp file over the object;
3. rewrites the sidecar without ``previous``.

A writer killed before step 2 leaves the old object (plus a temp file, swept later); killed after
it, the new one. Writers to one directory commit one at a time, so the last to commit wins with
both its object and its sidecar. Temp files of dead writers are removed when a store is opened
(once per root and process) once they are older than a grace period.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from .object_store import (
    TMP_PREFIX,
    IntegrityError,
    MissingObject,
    ObjectInfo,
    ObjectStore,
    manifest_bytes,
    manifest_versions,
    sha256_file,
    validate_raw_key,
)

# Fallback lock file for filesystems where a directory cannot be flocked (e.g. NFS): the temp
# prefix keeps it out of listings, and the sweep leaves it alone.
LOCK_NAME = f"{TMP_PREFIX}lock"
# A temp file untouched for this long belongs to a dead writer: a live one keeps writing to it.
DEFAULT_TMP_GRACE_S = 3600.0
_SWEPT: set[Path] = set()


class LocalObjectStore(ObjectStore):
    """Objects are files under ``root``; key 'a/b.parquet' is ``root/a/b.parquet``.

    A key cannot be both a file and a directory prefix of another key here (S3 allows it);
    that conflict surfaces as the OS error from the write.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True,
                 tmp_grace_s: float = DEFAULT_TMP_GRACE_S) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        # fsync=False is only for throwaway stores (tests, scratch): durability over power loss
        # needs both the file and the directory entry flushed.
        self._fsync = fsync
        if self.root not in _SWEPT:
            _SWEPT.add(self.root)
            self.sweep_temp_files(tmp_grace_s)

    def __repr__(self) -> str:
        return f"LocalObjectStore(root={str(self.root)!r})"

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*validate_raw_key(key).split("/"))

    def _fsync_dir(self, path: Path) -> None:
        if not self._fsync:
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    # ---- cleanup ----------------------------------------------------------------------------
    def sweep_temp_files(self, older_than_s: float = DEFAULT_TMP_GRACE_S) -> int:
        """Remove temp files (``TMP_PREFIX`` names) last modified more than ``older_than_s`` ago.

        Returns how many were removed. Younger ones may belong to a live writer and stay.
        """
        cutoff = time.time() - older_than_s
        removed = 0
        for dirpath, _dirnames, filenames in os.walk(self.root):
            for name in filenames:
                if not name.startswith(TMP_PREFIX) or name == LOCK_NAME:
                    continue
                path = Path(dirpath) / name
                with contextlib.suppress(FileNotFoundError):
                    if path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
        return removed

    # ---- writing ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _dir_lock(self, directory: Path) -> Iterator[None]:
        """Exclusive flock on ``directory`` (or its lock file where directories cannot be locked).

        The kernel drops the lock when the holder dies, so a killed writer never blocks others.
        """
        fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
        try:
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _stage(self, directory: Path, chunks: Iterable[bytes]) -> tuple[Path, str, int]:
        """Write the chunks to a new fsynced temp file in ``directory``: (path, sha256, size)."""
        tmp = directory / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        h, size = hashlib.sha256(), 0
        try:
            with open(tmp, "xb") as out:
                for chunk in chunks:
                    chunk = bytes(chunk)
                    h.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                if self._fsync:
                    os.fsync(out.fileno())
        except BaseException:
            # Any failure (including KeyboardInterrupt) removes the partial temp file.
            tmp.unlink(missing_ok=True)
            raise
        return tmp, h.hexdigest(), size

    def _write_small(self, path: Path, data: bytes) -> None:
        """Atomically replace ``path`` with ``data`` (temp file, fsync, rename, directory fsync)."""
        tmp, _, _ = self._stage(path.parent, [data])
        try:
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._fsync_dir(path.parent)

    def _current(self, key: str) -> ObjectInfo | None:
        """The committed version now under ``key`` (caller holds the directory lock), or None."""
        try:
            doc = self._manifest_doc(key)
        except (MissingObject, IntegrityError):
            return None  # nothing readable to protect
        versions = manifest_versions(key, doc)
        if len(versions) == 1:
            return versions[0]
        # A writer died between its two sidecar writes: which version is on disk decides.
        try:
            sha, size = sha256_file(self._path(key))
        except FileNotFoundError:
            return None
        return next((v for v in versions if (v.sha256, v.size) == (sha, size)), None)

    def _replace(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> ObjectInfo:
        final = self._path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp, sha, size = self._stage(final.parent, chunks)
        info = ObjectInfo(key, sha, size)
        sidecar = self._path(self.manifest_key(key))
        try:
            with self._dir_lock(final.parent):
                previous = self._current(key)
                if previous is not None and (previous.sha256, previous.size) != (sha, size):
                    self._write_small(sidecar, manifest_bytes(info, content_type, previous))
                os.replace(tmp, final)
                self._fsync_dir(final.parent)
                self._write_small(sidecar, manifest_bytes(info, content_type))
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return info

    def delete(self, key: str) -> None:
        """Remove ``key`` and its manifest (under the directory lock, so no commit interleaves)."""
        final = self._path(key)
        if not final.parent.is_dir():
            return
        with self._dir_lock(final.parent):
            super().delete(key)

    # ---- reading ----------------------------------------------------------------------------
    def _open_raw(self, key: str) -> BinaryIO:
        path = self._path(key)
        try:
            return open(path, "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise MissingObject(key) from None

    def _exists_raw(self, key: str) -> bool:
        return self._path(key).is_file()

    def _list_raw(self, prefix: str) -> Iterator[str]:
        # Walk only the deepest directory the prefix pins down ('a/b/c' -> 'a/b').
        base = self.root.joinpath(*prefix.split("/")[:-1]) if "/" in prefix else self.root
        if not base.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(TMP_PREFIX)]
            rel_dir = Path(dirpath).relative_to(self.root).as_posix()
            for name in filenames:
                if name.startswith(TMP_PREFIX):
                    continue
                key = name if rel_dir == "." else f"{rel_dir}/{name}"
                if key.startswith(prefix):
                    yield key

    def _delete_raw(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except (FileNotFoundError, NotADirectoryError):
            pass

    def uri(self, key: str) -> str:
        return self._path(key).as_uri()
