"""Run a per-row curation function over a partition with several worker processes.

The per-source CPU stages (AST + heuristics + edu scorer, MinHash signatures, decontamination)
are pure Python over independent rows, so a partition splits into contiguous chunks that worker
processes handle in parallel. Workers are *forked* after the payload (rows, texts, filter
objects) is stored in a module global: they inherit it copy-on-write, and only chunk bounds go
to them and compact results come back (no pickling of rows).

``fn(payload, start, end)`` must be a module-level function (it is pickled by reference) and
deterministic per row, so results do not depend on ``workers`` or ``chunk_size``; callers
concatenate the per-chunk results in chunk order. ``workers <= 1`` (or a partition of one
chunk) runs in the calling process with no pool at all.

Chunk size: ``DEFAULT_CHUNK_ROWS`` = 256 rows (~0.3-0.5 MB of code answers, 0.1-0.3 CPU-s of
work per chunk here): large enough that the ~1 ms per-chunk IPC is noise, small enough that a
2-worker pool over a 3,000-row partition gets ~12 chunks to balance.

Fork, not spawn (and ``gc.freeze()`` around it, see ``map_chunks``): spawn would re-import the project and re-build tree-sitter parsers, regexes
and the benchmark index in every worker. Do not call these helpers from a process that runs
other threads holding locks (the Dagster step process does not).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
DEFAULT_CHUNK_ROWS = 256

_PAYLOAD: Any = None  # set in the parent just before forking; inherited by the workers


def _run_chunk(task: tuple[Callable[[Any, int, int], T], int, int]) -> T:
    fn, start, end = task
    return fn(_PAYLOAD, start, end)


def default_workers() -> int:
    """Worker processes to use: the CPUs this process may run on (2 on the curation box)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def chunk_bounds(n: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` covering ``range(n)`` in chunks of ``chunk_size`` rows."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    return [(s, min(n, s + chunk_size)) for s in range(0, n, chunk_size)]


def thread_map(fn: Callable[[Any], T], items: Sequence[Any], threads: int) -> list[T]:
    """``[fn(x) for x in items]`` over up to ``threads`` threads (for work that releases the GIL:
    file reads, numpy sorts and arithmetic, the ``nogil`` kernels). The threads end before this
    returns, so a later fork (:func:`map_chunks`) never copies a running one."""
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(min(threads, len(items))) as pool:
        return list(pool.map(fn, items))


def map_chunks(fn: Callable[[Any, int, int], T], payload: Any, n: int, workers: int = 1,
               chunk_size: int = DEFAULT_CHUNK_ROWS,
               progress: Callable[[int, int], None] | None = None) -> list[T]:
    """``[fn(payload, start, end) for each chunk of range(n)]``, in chunk order.

    ``workers > 1`` forks a pool of that many processes (capped at the number of chunks).
    ``progress(rows_done, n)``, when given, is called in this process after each chunk.
    """
    bounds = chunk_bounds(n, chunk_size)
    if workers <= 1 or len(bounds) <= 1:
        out = []
        for s, e in bounds:
            out.append(fn(payload, s, e))
            if progress is not None:
                progress(e, n)
        return out
    global _PAYLOAD
    if _PAYLOAD is not None:
        raise RuntimeError("map_chunks is not re-entrant: a pool is already running in this process")
    _PAYLOAD = payload
    # Without freeze, the workers' cyclic GC walks (and so copy-on-write copies) every object
    # the parent holds: whole partitions of rows, once per worker and stage.
    gc.freeze()
    try:
        # ProcessPoolExecutor, not multiprocessing.Pool: a worker killed mid-chunk (OOM killer,
        # a segfault in a C extension) raises BrokenProcessPool here instead of hanging the step.
        # With "fork" it starts every worker before its manager thread, so no worker is forked
        # while that thread holds a lock.
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(workers, len(bounds)), mp_context=ctx) as pool:
            futures = [pool.submit(_run_chunk, (fn, s, e)) for s, e in bounds]
            out = []
            for (s, e), fut in zip(bounds, futures):
                try:
                    out.append(fut.result())
                except BrokenProcessPool as err:
                    # every unfinished chunk fails with the pool, so [s, e) is the first of them,
                    # not necessarily the one the dead worker held
                    raise RuntimeError(f"a worker process died while {fn.__qualname__} ran over {n} rows "
                                       f"(first unfinished chunk: rows [{s}, {e}); killed for memory? see "
                                       "the kernel log); nothing was written for this partition") from err
                if progress is not None:
                    progress(e, n)
            # leaving the block waits for the workers to exit: reaped children, and their CPU
            # time shows in RUSAGE_CHILDREN (the benchmark's accounting)
            return out
    finally:
        gc.unfreeze()
        _PAYLOAD = None
