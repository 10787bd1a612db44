"""The one seam through which curation applies row blocks, on the executor the profile names.

A block is :class:`.blocks.Block` (``name`` + ``decide(row) -> None | reason``, optionally
``decide_batch``); a plain callable ``row -> None | reason`` is accepted too (named by its
``__name__``). :func:`apply_blocks` runs a chain of blocks over a partition's rows and returns,
per row, the first reason (None: kept) and the per-block counts, whatever the executor:

    kind        where the rows are decided
    in_process  this process: :func:`.blocks.run_blocks` (tests, tiny partitions)
    pool        this machine's forked worker pool (:mod:`.parallel`): run_blocks per chunk
    local       datatrove's LocalPipelineExecutor: ``tasks`` ranks on ``workers`` processes
    slurm       datatrove's SlurmPipelineExecutor (job arrays via sbatch)
    ray         datatrove's RayPipelineExecutor (a Ray cluster: ``address``)

The settings are the profile's ``phases.ops.datatrove_executor`` (validated by
:func:`..runtime.executors.validate_settings`). For the datatrove kinds each block becomes a
datatrove filter calling ``decide`` per row, and the rows travel as JSONL
(``{"i": position, "row": row}``) through a run folder under ``io_root`` (a local path or an
fsspec URL such as ``s3://bucket/curation-runs`` that every node reaches; default: the caller's
``work_dir``). Each run gets its own folder (so datatrove's completion records never skip a
rank of a later run), removed afterwards. Every input position must come back exactly once,
kept or dropped, else the run fails naming the missing rows. Rows must be JSON (what the
normalized rows are); the blocks see them after a JSON round trip, equal to the originals for
JSON data, so every kind returns the same reasons (tested). The datatrove kinds count rows
seen/kept/dropped per block; block notes and CPU seconds stay in the remote workers' logs.
A block with ``fork_safe = False`` (a torch model) and the blocks after it run in the calling
process over the survivors, on every kind but in_process (which runs everything there).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..runtime.executors import io_filesystems, validate_settings
from .blocks import Block, BlockStats, run_blocks
from .parallel import DEFAULT_CHUNK_ROWS, map_chunks

Reason = str | None


class CallableBlock:
    """A plain ``row -> None | reason`` function as a block (picklable when the function is)."""

    def __init__(self, fn: Callable[[dict], Reason], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)

    def decide(self, row: dict) -> Reason:
        return self.fn(row)


def as_block(block: Block | Callable[[dict], Reason]) -> Block:
    return block if callable(getattr(block, "decide", None)) else CallableBlock(block)


@dataclass
class BlockRun:
    """Per-row reasons (None: kept) in input order, per-block counts, and how the run went."""

    reasons: list[Reason]
    stats: BlockStats
    kind: str
    seconds: float


def _chunk(blocks: Sequence[Block], rows: Sequence[dict], start: int, end: int) -> tuple[list[Reason], BlockStats]:
    stats = BlockStats()
    return run_blocks(blocks, rows[start:end], stats), stats


def apply_blocks(rows: Sequence[dict], blocks: Sequence[Block | Callable[[dict], Reason]],
                 settings: dict[str, Any] | None, work_dir: str | Path, workers: int = 1,
                 chunk_size: int = DEFAULT_CHUNK_ROWS) -> BlockRun:
    """Decide every row with the chain ``blocks`` on the executor ``settings`` name (default
    in_process). ``workers``/``chunk_size`` are the pool's when the settings do not give their
    own. For the pool, pass the same ``blocks`` sequence object on every call: its workers are
    kept per sequence (see :func:`.parallel.pool_for`)."""
    cfg = dict(settings or {"kind": "in_process"})
    validate_settings(cfg)
    kind = cfg["kind"]
    chain = blocks if all(callable(getattr(b, "decide", None)) for b in blocks) else [as_block(b) for b in blocks]
    t0 = time.monotonic()
    stats = BlockStats()
    if kind == "in_process" or not rows:
        return BlockRun(run_blocks(chain, rows, stats), stats, kind, time.monotonic() - t0)
    # A block that is not fork_safe (a torch model) and every block after it run here, batched,
    # over the survivors of the blocks before it, which fan out.
    split = next((i for i, b in enumerate(chain) if not getattr(b, "fork_safe", True)), len(chain))
    away, here = tuple(chain[:split]), chain[split:]
    if kind == "pool":
        reasons = []
        for part, part_stats in map_chunks(_chunk, away if split < len(chain) else chain, rows,
                                           cfg.get("workers", workers), cfg.get("chunk_rows", chunk_size)):
            reasons.extend(part)
            stats.merge(part_stats)
    elif away:
        with io_filesystems(cfg):  # an s3:// io_root: the profile's endpoint and keys reach fsspec
            reasons, dropped_by = _datatrove_run(rows, away, cfg, work_dir)
        alive = len(rows)
        for j, b in enumerate(away):  # the chain's counts, rebuilt from which block dropped each row
            counts = stats.of(b.name)
            counts.seen += alive
            for i in dropped_by[j]:
                counts.dropped[reasons[i]] += 1
            alive -= len(dropped_by[j])
            counts.kept += alive
    else:
        reasons = [None] * len(rows)
    if here:
        survivors = [i for i, r in enumerate(reasons) if r is None]
        for i, reason in zip(survivors, run_blocks(here, [rows[i] for i in survivors], stats)):
            reasons[i] = reason
    return BlockRun(reasons, stats, kind, time.monotonic() - t0)


@contextmanager
def _default_signal_handlers() -> Iterator[None]:
    """The default SIGTERM/SIGINT handlers while datatrove runs, the caller's back afterwards.

    datatrove's local executor forks a pool and ends it with SIGTERM. A fork inherits the calling
    process's handlers, and a Dagster step's turn SIGTERM into an exception: a worker raising it
    inside the pool's queue lock left that lock held, and the next run in the process hung. Workers
    forked meanwhile get the defaults (SIGTERM ends them, SIGINT is KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():  # handlers are the main thread's
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _datatrove_run(rows: Sequence[dict], blocks: Sequence[Block], cfg: dict[str, Any],
                   work_dir: str | Path) -> tuple[list[Reason], list[list[int]]]:
    """(reasons, positions each block dropped) of one run through a fresh run folder."""
    from datatrove.io import get_datafolder
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from fsspec.core import url_to_fs

    from ..runtime.executors import BlockFilter, make_executor

    root = str(cfg.pop("io_root", None) or work_dir).rstrip("/")
    run_dir = f"{root}/blocks-{uuid.uuid4().hex[:12]}"
    folder = get_datafolder(run_dir)
    tasks = max(1, int(cfg.get("tasks", 1)))
    cfg.setdefault("tasks", tasks)
    done = False
    try:
        # one input file per rank: datatrove hands ranks whole files
        per = -(-len(rows) // tasks)
        for k in range(tasks):
            with folder.open(f"input/{k:05d}.jsonl", "w") as fh:
                for i in range(k * per, min(len(rows), (k + 1) * per)):
                    fh.write(json.dumps({"i": i, "row": rows[i]}, ensure_ascii=False) + "\n")
        steps: list = [JsonlReader(f"{run_dir}/input", adapter=_doc_in, glob_pattern="*.jsonl")]
        for j, b in enumerate(blocks):
            excl = JsonlWriter(f"{run_dir}/dropped/{j:02d}", adapter=_position_out, compression=None)
            steps.append(BlockFilter(b.decide, label=b.name, exclusion_writer=excl))
        steps.append(JsonlWriter(f"{run_dir}/kept", adapter=_position_out, compression=None))
        with _default_signal_handlers():
            make_executor(steps, cfg, f"{run_dir}/logs").run()
        reasons: list[Reason] = [None] * len(rows)
        dropped_by: list[list[int]] = [[] for _ in blocks]
        seen = [False] * len(rows)
        for path in folder.list_files(recursive=True, glob_pattern="**/*.jsonl"):
            if not (path.startswith("kept/") or path.startswith("dropped/")):
                continue
            block = int(path.split("/")[1]) if path.startswith("dropped/") else None
            with folder.open(path, "r") as fh:
                for line in fh:
                    rec = json.loads(line)
                    i = rec["i"]
                    if not 0 <= i < len(rows):
                        raise RuntimeError(f"unknown row position {i} from the {cfg['kind']} executor ({run_dir})")
                    if seen[i]:
                        raise RuntimeError(f"row {i} came back twice from the {cfg['kind']} executor ({run_dir})")
                    seen[i] = True
                    if block is not None:
                        reasons[i] = rec["reason"]
                        dropped_by[block].append(i)
        lost = [i for i, s in enumerate(seen) if not s]
        if lost:
            raise RuntimeError(f"{len(lost)} rows did not come back from the {cfg['kind']} executor "
                               f"(first positions {lost[:5]}); see its logs in {run_dir}/logs")
        done = True
        return reasons, dropped_by
    finally:
        fs, path = url_to_fs(run_dir)
        if done and fs.exists(path):  # a failed run keeps its folder: the logs say why
            fs.rm(path, recursive=True)


def _doc_in(self, data: dict, path: str, id_in_file: int | str) -> dict:
    return {"text": json.dumps(data["row"], ensure_ascii=False), "id": str(data["i"]), "metadata": {}}


def _position_out(self, doc) -> dict:
    out: dict[str, Any] = {"i": int(doc.id)}
    if "filter_reason" in doc.metadata:
        out["reason"] = doc.metadata["filter_reason"]
    return out

