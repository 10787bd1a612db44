"""The one seam through which curation applies row blocks, on the executor the profile names.

A block decides one row: ``decide(row) -> None`` (keep) or a drop reason; a block is either an
object with ``name`` and ``decide`` or a plain callable ``row -> None | reason`` (its
``__name__`` is its name). :func:`apply_blocks` runs blocks in order over a partition's rows
and returns, per row, the first reason (None: kept), whatever the executor:

    kind        where the rows are decided
    in_process  this process, one row after the other (tests, tiny partitions)
    pool        this machine's forked worker pool (:mod:`.parallel`), ``workers`` processes
    local       datatrove's LocalPipelineExecutor: ``tasks`` ranks on ``workers`` processes
    slurm       datatrove's SlurmPipelineExecutor (job arrays via sbatch)
    ray         datatrove's RayPipelineExecutor (a Ray cluster: ``address``)

The settings are the profile's ``phases.ops.datatrove_executor`` (validated by
:func:`..ops.executors.validate_settings`). For the datatrove kinds the rows travel as JSONL
(``{"i": position, "row": row}``) through a run folder: ``io_root`` (a local path or an
fsspec URL such as ``s3://bucket/curation-runs`` that every node can reach; default: the
caller's ``work_dir``). Each run gets its own folder (so datatrove's completion records never
skip a rank of a later run) and it is removed afterwards. Every input position must come back
exactly once, kept or dropped, else the run fails naming the missing rows. Rows must be JSON
(what the normalized rows are); the blocks see the rows after a JSON round trip, equal to the
originals for JSON data, so every kind returns the same reasons (tested).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..ops.executors import validate_settings
from .parallel import DEFAULT_CHUNK_ROWS, map_chunks

Reason = str | None


@runtime_checkable
class RowBlock(Protocol):
    name: str

    def decide(self, row: dict) -> Reason: ...


Block = RowBlock | Callable[[dict], Reason]


def block_name(block: Block) -> str:
    return getattr(block, "name", None) or getattr(block, "__name__", type(block).__name__)


def block_decide(block: Block) -> Callable[[dict], Reason]:
    decide = getattr(block, "decide", None)
    return decide if callable(decide) else block


def first_reason(blocks: Sequence[Block], row: dict) -> Reason:
    """The first block's drop reason for ``row``, None when every block keeps it."""
    for b in blocks:
        reason = block_decide(b)(row)
        if reason is not None:
            return reason
    return None


@dataclass
class BlockRun:
    """Per-row reasons (None: kept) in input order, and how the run went."""

    reasons: list[Reason]
    kind: str
    seconds: float


def _chunk(blocks: Sequence[Block], rows: Sequence[dict], start: int, end: int) -> list[Reason]:
    return [first_reason(blocks, rows[i]) for i in range(start, end)]


def apply_blocks(rows: Sequence[dict], blocks: Sequence[Block], settings: dict[str, Any] | None,
                 work_dir: str | Path, workers: int = 1, chunk_size: int = DEFAULT_CHUNK_ROWS) -> BlockRun:
    """Decide every row with ``blocks`` on the executor ``settings`` name (default in_process).

    ``workers``/``chunk_size`` are the pool's when the settings do not give their own.
    For the pool, pass the same ``blocks`` sequence object on every call: its workers are kept
    per sequence (see :func:`.parallel.pool_for`).
    """
    cfg = dict(settings or {"kind": "in_process"})
    validate_settings(cfg)
    kind = cfg["kind"]
    t0 = time.monotonic()
    if kind == "in_process" or not rows:
        reasons = [first_reason(blocks, r) for r in rows]
    elif kind == "pool":
        reasons = [r for part in map_chunks(_chunk, blocks, rows, cfg.get("workers", workers),
                                            cfg.get("chunk_rows", chunk_size)) for r in part]
    else:
        reasons = _datatrove_run(rows, blocks, cfg, work_dir)
    return BlockRun(reasons, kind, time.monotonic() - t0)


def _datatrove_run(rows: Sequence[dict], blocks: Sequence[Block], cfg: dict[str, Any],
                   work_dir: str | Path) -> list[Reason]:
    from datatrove.io import get_datafolder
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from fsspec.core import url_to_fs

    from ..ops.executors import BlockFilter, make_executor

    root = str(cfg.pop("io_root", None) or work_dir).rstrip("/")
    run_dir = f"{root}/blocks-{uuid.uuid4().hex[:12]}"
    folder = get_datafolder(run_dir)
    tasks = max(1, int(cfg.get("tasks", 1)))
    cfg.setdefault("tasks", tasks)
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
            steps.append(BlockFilter(block_decide(b), label=block_name(b), exclusion_writer=excl))
        steps.append(JsonlWriter(f"{run_dir}/kept", adapter=_position_out, compression=None))
        make_executor(steps, cfg, f"{run_dir}/logs").run()
        reasons: list[Reason] = [None] * len(rows)
        seen = [False] * len(rows)
        for path in folder.list_files(recursive=True, glob_pattern="**/*.jsonl"):
            if not (path.startswith("kept/") or path.startswith("dropped/")):
                continue
            with folder.open(path, "r") as fh:
                for line in fh:
                    rec = json.loads(line)
                    i = rec["i"]
                    if not 0 <= i < len(rows):
                        raise RuntimeError(f"unknown row position {i} from the {cfg['kind']} executor ({run_dir})")
                    if seen[i]:
                        raise RuntimeError(f"row {i} came back twice from the {cfg['kind']} executor ({run_dir})")
                    seen[i] = True
                    reasons[i] = rec.get("reason")
        lost = [i for i, s in enumerate(seen) if not s]
        if lost:
            raise RuntimeError(f"{len(lost)} rows did not come back from the {cfg['kind']} executor "
                               f"(first positions {lost[:5]}); see its logs in {run_dir}/logs")
        return reasons
    finally:
        fs, path = url_to_fs(run_dir)
        if fs.exists(path):
            fs.rm(path, recursive=True)


def _doc_in(self, data: dict, path: str, id_in_file: int | str) -> dict:
    return {"text": json.dumps(data["row"], ensure_ascii=False), "id": str(data["i"]), "metadata": {}}


def _position_out(self, doc) -> dict:
    out: dict[str, Any] = {"i": int(doc.id)}
    if "filter_reason" in doc.metadata:
        out["reason"] = doc.metadata["filter_reason"]
    return out

