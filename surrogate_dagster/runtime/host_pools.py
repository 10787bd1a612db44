"""One step per pool slot on this host, also when two runs claim a slot in the same instant.

Dagster enforces pools (``llm``, ``gpu``, ``cross_source``) by slot rows in the instance's
storage. On a local instance's SQLite storage that claim is a check followed by an insert with no
lock between them: two runs whose steps ask for the last free slot at the same moment (a UI run
and a CLI run, or two CLIs) are both given it, and two training steps then share the one GPU.
So every pool step also takes one of its pool's ``k`` slots (``k`` = the pool's limit on the
instance) as an exclusive ``flock`` on ``<instance root>/pool_locks/<pool>.<i>.lock`` before its
body runs. The kernel releases a lock when its process dies, so a killed run never keeps one.

With Dagster's claim working, the lock is free when taken and costs one ``open``. Where the
instance has no root directory (an ephemeral instance, one process) or no pool limits, nothing
is locked. On Kubernetes each step runs in its own pod with its own file system and the lock
guards nothing: the pool there rests on Dagster's claim alone.

Nothing here imports Dagster: the decorator reads ``context.op_def.pool``, ``context.instance``
and ``context.log`` from the step's context.
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..locks import first_free

LOCK_DIR = "pool_locks"
POLL_SECONDS = 0.5


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def pool_slot(lock_dir: Path, pool: str, slots: int, owner: str,
              log: Callable[[str], None] | None = None) -> Iterator[int]:
    """Hold one of ``slots`` exclusive locks for ``pool`` under ``lock_dir`` (waiting while all are
    taken); yields the slot's index. ``owner`` (run id and step) is written into the lock file so
    a waiting step can say whom it waits for."""
    if slots < 1:
        raise ValueError(f"pool {pool!r} has {slots} slots: no step of it can run")
    lock_dir.mkdir(parents=True, exist_ok=True)
    paths = [lock_dir / f"{pool}.{i}.lock" for i in range(slots)]
    t0 = time.monotonic()
    said = False
    while (got := first_free(paths)) is None:
        if not said and log is not None:
            log(f"pool {pool}: all {slots} host slot(s) taken (by {', '.join(_holder(p) for p in paths)}); "
                f"waiting")
            said = True
        time.sleep(POLL_SECONDS)
    i, fd = got
    taken = time.monotonic()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{owner} pid {os.getpid()}\n".encode(), 0)
        if log is not None:
            log(f"pool {pool}: host slot {i} taken after waiting {taken - t0:.1f}s")
        yield i
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)  # not only close: a worker forked meanwhile holds a copy of fd
        os.close(fd)
        if log is not None:
            log(f"pool {pool}: host slot {i} released after {time.monotonic() - taken:.1f}s")


def _pool_slots(instance, pool: str) -> int | None:
    """The pool's limit on ``instance``; None when the instance enforces no pools."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return None
    limit = storage.get_concurrency_info(pool).slot_count
    return limit if limit and limit > 0 else None


@contextmanager
def step_pool_slot(context) -> Iterator[None]:
    """The host slot of the running step's pool (see the module docstring); nothing to hold when
    the step has no pool, the instance no root directory or the pool no limit."""
    pool = context.op_def.pool
    root = getattr(context.instance, "root_directory", None)
    slots = _pool_slots(context.instance, pool) if pool and root else None
    if slots is None:
        yield
        return
    owner = f"run {context.run.run_id} step {context.op_def.name}"
    with pool_slot(Path(root) / LOCK_DIR, pool, slots, owner, context.log.info):
        yield


MARK = "__holds_pool_slot__"


def holds_pool_slot(fn: Callable) -> Callable:
    """Decorate a pool asset's body (below ``@asset(pool=...)``) so it runs holding a host slot of
    that pool. The body's first parameter must be the step context."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapper(context, *args, **kwargs):
            with step_pool_slot(context):
                yield from fn(context, *args, **kwargs)
    else:
        @functools.wraps(fn)
        def wrapper(context, *args, **kwargs):
            with step_pool_slot(context):
                return fn(context, *args, **kwargs)
    setattr(wrapper, MARK, True)
    return wrapper
