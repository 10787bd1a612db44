"""Run a per-row curation function over a partition with several worker processes.

The per-source CPU stages (sanitize, AST + heuristics + edu scorer, exact digests; MinHash and
decontamination without numba) are pure Python over independent rows, so a partition splits
into contiguous chunks that worker processes handle in parallel:

    map_chunks(fn, static, rows, workers, chunk_size)  ->  [fn(static, rows, start, end), ...]

``static`` is what every chunk needs and does not change (the sanitizer with its NER model, the
AST checker, the benchmark index); ``rows`` is the partition. ``fn`` must be a module-level
function (it is pickled by reference) and deterministic per row, so results do not depend on
``workers`` or ``chunk_size``; callers concatenate the per-chunk results in chunk order.
``workers <= 1`` (or a partition of one chunk) runs in the calling process with no pool at all.

This pool is the ``pool`` kind of the curation block seam (:mod:`.executor`), the one-machine
choice: unlike datatrove's LocalPipelineExecutor it does not round-trip every row through JSONL
files, and it returns the blocks' notes (the two are compared by benchmarks/scale_rehearsal.py;
figures in docs/BENCHMARKS.md). The datatrove kinds (Slurm, Ray) take over beyond one machine.

Workers live as long as the process (``WorkerPool``): forked once per ``static`` (by identity)
and reused by every later call with it, so a run over 22 partitions forks ``workers`` processes
per stage, not per stage and partition. Why: a fork costs time in proportion to the parent's
memory, then every page either side writes faults once, and fresh workers start cold (the NER
model's first calls are slower); a pool per partition pays all of that again for every partition
(the measured cost is in docs/BENCHMARKS.md, under benchmarks/curation_chain.py). Workers inherit
``static`` by fork (never pickled: a spaCy pipeline is big and not worth pickling); the chunk's
rows go to them pickled, results come back pickled.

Fork, not spawn (and ``gc.freeze()`` around it): spawn would re-import the project and re-build
tree-sitter parsers, regexes and the NER model in every worker, and the workers' cyclic GC
would otherwise walk (and so copy) every object the parent held at the fork. Do not call these
helpers from a process that runs other threads holding locks (the Dagster step process does
not). A worker holds the parent's memory as it was at its fork (copy-on-write) until it ends:
at most ``MAX_POOLS`` pools are kept (least recently used ones are shut down), and
``shutdown_pools()`` (also run at exit) ends them all.

Chunk size: ``DEFAULT_CHUNK_ROWS`` = 256 rows (a few hundred KB of code answers): large enough
that the per-chunk pickling is noise next to the chunk's work, small enough that 2 workers over a
3,000-row partition get ~12 chunks to balance.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
import os
import pickle
import resource
import traceback
from collections import OrderedDict
from collections.abc import Sequence as SequenceABC
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
DEFAULT_CHUNK_ROWS = 256
MAX_POOLS = 3  # sanitize, filter and one static-less pool (digests) stay warm together

ChunkFn = Callable[[Any, Sequence[Any], int, int], T]


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


class RowWindow(SequenceABC):
    """``rows[start:start + len(items)]`` addressed by absolute row numbers, as a worker sees the
    chunk it was sent: ``window[i]`` for ``start <= i < end`` and ``window[start:end]`` work as
    they do on the whole partition, so chunk functions need not know where they run."""

    __slots__ = ("_items", "_start")

    def __init__(self, items: list, start: int) -> None:
        self._items, self._start = items, start

    def __len__(self) -> int:
        # the chunk's end: like the whole partition's length, it bounds the valid row numbers
        return self._start + len(self._items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise IndexError("a RowWindow slice takes no step")
            lo = self._start if i.start is None else i.start
            hi = len(self) if i.stop is None else i.stop
            if lo < self._start or hi > len(self):
                raise IndexError(f"rows [{lo}, {hi}) are outside this chunk [{self._start}, {len(self)})")
            return self._items[lo - self._start:hi - self._start]
        if not self._start <= i < len(self):
            raise IndexError(f"row {i} is outside this chunk [{self._start}, {len(self)})")
        return self._items[i - self._start]


def _worker_loop(conn: Connection, static: Any, inherited: list[Connection]) -> None:
    """A pool worker: run (fn, start, end, rows) tasks until told to stop or orphaned."""
    for c in inherited:  # the parent's ends of every pipe: with a copy open here, EOF never comes
        c.close()
    parent = os.getppid()
    while True:
        if not conn.poll(1.0):
            if os.getppid() != parent:
                return  # the parent died without telling us
            continue
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, start, end, items = task
        try:
            reply = ("ok", fn(static, RowWindow(items, start), start, end))
        except BaseException as err:  # noqa: BLE001 - sent to the parent, which re-raises it
            err.add_note(f"in a curation worker (pid {os.getpid()}), rows [{start}, {end}):\n"
                         + "".join(traceback.format_exception(err)))
            try:
                pickle.dumps(err)
            except Exception:  # noqa: BLE001 - an exception that cannot travel: send its text
                err = RuntimeError("".join(traceback.format_exception(err)))
            reply = ("err", err)
        conn.send(reply)


_OPEN_CONNS: list[Connection] = []  # parent ends of every live pool's pipes (closed in new workers)


class WorkerPool:
    """``workers`` processes forked once with ``static``; ``map`` runs chunks of rows on them.

    One chunk in flight per worker: the next is sent only when the worker has answered, so
    neither side ever blocks writing a message larger than the pipe buffer to the other.
    """

    def __init__(self, static: Any, workers: int) -> None:
        self.static, self.workers = static, workers
        ctx = multiprocessing.get_context("fork")
        self._procs: list[multiprocessing.process.BaseProcess] = []
        self._conns: list[Connection] = []
        gc.freeze()  # the workers' GC never walks what they inherit
        try:
            for _ in range(workers):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_worker_loop, args=(theirs, static, [*_OPEN_CONNS, mine]),
                                   daemon=True, name="curation-worker")
                proc.start()
                theirs.close()
                _OPEN_CONNS.append(mine)
                self._procs.append(proc)
                self._conns.append(mine)
        except BaseException:
            self.close()
            raise
        finally:
            gc.unfreeze()

    def map(self, fn: ChunkFn, rows: Sequence[Any], chunk_size: int,
            progress: Callable[[int, int], None] | None = None) -> list[T]:
        """``[fn(static, rows, s, e) for (s, e) in chunk_bounds(len(rows), chunk_size)]``."""
        n = len(rows)
        bounds = chunk_bounds(n, chunk_size)
        results: list[Any] = [None] * len(bounds)
        finished = [False] * len(bounds)
        todo = list(range(len(bounds)))[::-1]  # popped from the end: chunk order
        busy: dict[int, int] = {}  # worker -> chunk
        rows_done = 0

        def died() -> RuntimeError:
            self.close()
            s, e = bounds[finished.index(False)]
            return RuntimeError(f"a worker process died while {fn.__qualname__} ran over {n} rows "
                                f"(first unfinished chunk: rows [{s}, {e}); killed for memory? see "
                                "the kernel log); nothing was written for this partition")

        def send(w: int) -> None:
            i = todo.pop()
            s, e = bounds[i]
            try:
                self._conns[w].send((fn, s, e, list(rows[s:e])))
            except (BrokenPipeError, ConnectionResetError):  # it died while idle
                raise died() from None
            busy[w] = i

        for w in range(min(self.workers, len(bounds))):
            send(w)
        while busy:
            by_conn = {self._conns[w]: w for w in busy}
            by_sentinel = {self._procs[w].sentinel: w for w in busy}
            for ready in wait([*by_conn, *by_sentinel]):
                w = by_conn.get(ready, by_sentinel.get(ready))
                if w not in busy:
                    continue  # its answer was read through the other handle
                try:
                    status, value = self._conns[w].recv()
                except (EOFError, OSError):
                    raise died() from None
                i = busy.pop(w)
                if status == "err":
                    self.close()  # other workers may still hold chunks: start clean next time
                    raise value
                results[i], finished[i] = value, True
                rows_done += bounds[i][1] - bounds[i][0]
                if progress is not None:
                    progress(rows_done, n)
                if todo:
                    send(w)
        return results

    @property
    def alive(self) -> bool:
        return bool(self._procs) and all(p.is_alive() for p in self._procs)

    def close(self) -> None:
        """Stop the workers (politely, then by force) and release their pipes."""
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass  # already gone
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join()
        for conn in self._conns:
            if conn in _OPEN_CONNS:
                _OPEN_CONNS.remove(conn)
            conn.close()
        self._procs, self._conns = [], []


_POOLS: "OrderedDict[tuple, WorkerPool]" = OrderedDict()


def _pool_key(static: Any, workers: int) -> tuple:
    parts = static if isinstance(static, tuple) else (static,)
    return (workers, *map(id, parts))  # the pool holds `static`, so these ids stay its own


def pool_for(static: Any, workers: int) -> WorkerPool:
    """The live pool forked with this ``static`` (same objects), or a new one."""
    key = _pool_key(static, workers)
    pool = _POOLS.get(key)
    if pool is not None and pool.alive:
        _POOLS.move_to_end(key)
        return pool
    if pool is not None:
        _POOLS.pop(key).close()
    while len(_POOLS) >= MAX_POOLS:
        _POOLS.popitem(last=False)[1].close()
    pool = _POOLS[key] = WorkerPool(static, workers)
    return pool


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's children: those already ended (and waited
    for) and the pool workers still running (Linux ``/proc``), which ``RUSAGE_CHILDREN`` does not
    count until they end. Benchmarks add it to ``time.process_time()``."""
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = ended.ru_utime + ended.ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for pool in _POOLS.values():
        for proc in pool._procs:
            try:
                with open(f"/proc/{proc.pid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue  # ended between the two reads: counted in RUSAGE_CHILDREN next time
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (stat fields 14, 15)
    return total


def shutdown_pools() -> None:
    """End every pool's workers (tests; a long-lived process that is done curating)."""
    while _POOLS:
        _POOLS.popitem()[1].close()


atexit.register(shutdown_pools)


def map_chunks(fn: ChunkFn, static: Any, rows: Sequence[Any], workers: int = 1,
               chunk_size: int = DEFAULT_CHUNK_ROWS,
               progress: Callable[[int, int], None] | None = None) -> list[T]:
    """``[fn(static, rows, start, end) for each chunk of rows]``, in chunk order.

    ``workers > 1`` runs the chunks on the process's pool for ``static`` (forked on first use).
    ``progress(rows_done, len(rows))``, when given, is called in this process after each chunk.
    """
    bounds = chunk_bounds(len(rows), chunk_size)
    if workers <= 1 or len(bounds) <= 1:
        out = []
        for s, e in bounds:
            out.append(fn(static, rows, s, e))
            if progress is not None:
                progress(e, len(rows))
        return out
    pool = pool_for(static, workers)
    try:
        return pool.map(fn, rows, chunk_size, progress)
    except BaseException:
        _POOLS.pop(_pool_key(static, pool.workers), None)  # closed by map, or interrupted: never reuse
        pool.close()
        raise
