"""Exclusive ``flock`` slots: one lock file per slot, taken without waiting.

A lock held this way is exclusive across processes and dropped by the kernel when its holder
dies, so a killed process never keeps a slot. Used for the sandbox's uid leases
(``sandbox/uids.py``) and the host slots of Dagster pools (``runtime/host_pools.py``).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Iterable


def try_exclusive(path: Path, mode: int = 0o644) -> int | None:
    """The open descriptor of ``path`` holding its exclusive lock, or None when another holds it.
    Closing the descriptor (or the process ending) releases the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def first_free(paths: Iterable[Path], mode: int = 0o644) -> tuple[int, int] | None:
    """(index, descriptor) of the first of ``paths`` whose lock could be taken; None when all are
    held."""
    for i, path in enumerate(paths):
        fd = try_exclusive(path, mode)
        if fd is not None:
            return i, fd
    return None
