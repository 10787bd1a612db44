"""A pool of unprivileged host uids, one leased per sandbox run.

Why: RLIMIT_NPROC counts every process of the *real uid* on the host, and the kernel never applies
it to root. Running each sandbox as its own otherwise-unused uid makes the process-count limit
bite (a fork bomb stops at ``nproc``) and keeps concurrent sandboxes from sharing the count.
Leases are ``flock``s on one file per uid, so they are exclusive across processes and released
by the kernel if the holder dies.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..locks import first_free

DEFAULT_UID_BASE = 620_000
DEFAULT_UID_COUNT = 256


class UidPoolExhausted(RuntimeError):
    """Every uid of the pool is leased by a running sandbox."""


class UidLease:
    """An exclusive hold on one uid; release() (or garbage collection of the fd) frees it."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd = fd

    def release(self) -> None:
        """Give the uid back to the pool."""
        if self._fd >= 0:
            os.close(self._fd)  # closing drops the flock
            self._fd = -1

    def __enter__(self) -> "UidLease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_dir() -> Path:
    """Where the per-uid lock files live (SURROGATE_SANDBOX_LOCK_DIR overrides)."""
    d = Path(os.environ.get("SURROGATE_SANDBOX_LOCK_DIR", "/tmp/surrogate-sandbox-uids"))
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def lease_uid(base: int = DEFAULT_UID_BASE, count: int = DEFAULT_UID_COUNT) -> UidLease:
    """Lease a free uid in ``[base, base + count)``, starting at a pid-dependent offset."""
    if count < 1:
        raise ValueError("uid pool needs at least one uid")
    d = lock_dir()
    start = os.getpid() % count  # spreads concurrent workers so they rarely probe the same files
    uids = [base + (start + k) % count for k in range(count)]
    got = first_free((d / f"{uid}.lock" for uid in uids), mode=0o600)
    if got is not None:
        return UidLease(uids[got[0]], got[1])
    raise UidPoolExhausted(f"all {count} sandbox uids from {base} are in use")
