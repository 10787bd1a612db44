"""Filesystem ObjectStore: atomic writes via temp file + fsync + os.replace."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from .object_store import TMP_PREFIX, MissingObject, ObjectStore, validate_raw_key


class LocalObjectStore(ObjectStore):
    """Objects are files under ``root``; key 'a/b.parquet' is ``root/a/b.parquet``.

    A key cannot be both a file and a directory prefix of another key here (S3 allows it);
    that conflict surfaces as the OS error from the write.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        # fsync=False is only for throwaway stores (tests, scratch): durability over power loss
        # needs both the file and the directory entry flushed.
        self._fsync = fsync

    def __repr__(self) -> str:
        return f"LocalObjectStore(root={str(self.root)!r})"

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*validate_raw_key(key).split("/"))

    def _fsync_dir(self, path: Path) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _put_raw_stream(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> None:
        final = self._path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        # Same directory as the target so os.replace is a rename on one filesystem (atomic).
        tmp = final.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        try:
            with open(tmp, "xb") as out:
                for chunk in chunks:
                    out.write(chunk)
                out.flush()
                if self._fsync:
                    os.fsync(out.fileno())
            os.replace(tmp, final)
        except BaseException:
            # Any failure (including KeyboardInterrupt) removes the partial temp file.
            tmp.unlink(missing_ok=True)
            raise
        if self._fsync:
            self._fsync_dir(final.parent)

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
