"""The per-source filter step in one call: a chain of curation blocks (AST validity, the
heuristics, the edu scorer) over a partition, chunk by chunk and optionally in worker processes.

Same decisions and counts as ``curation.blocks.run_blocks(blocks, rows)`` over all rows at once:
a row is dropped by the first block that gives a reason, and each block's counts cover exactly
the rows it saw. What this adds:

- locality: rows go through the chain chunk by chunk, so the heuristics and the edu scorer find
  the answer's fence scan (``code_blocks.PARTS_MEMO``) and tree-sitter parses
  (``ast_validity.PARSE_MEMO``) that the AST check just made, instead of redoing them;
- parallelism: ``workers > 1`` forks that many processes over chunks of ``chunk_size`` rows
  (:mod:`..parallel`); results and counts are identical to ``workers=1``.

A block that is not ``fork_safe`` (the edu block with the transformers-based Stack-Edu
classifier: torch state does not survive a fork reliably, and each worker would load its own
model) and every block after it run once in the calling process over all survivors, batched;
the blocks before it still fan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..blocks import Block, BlockStats, run_blocks
from ..parallel import DEFAULT_CHUNK_ROWS, map_chunks


@dataclass
class FilterResult:
    """Per-row drop reasons (None = kept, same order as the input) and each block's counts."""

    reasons: list[str | None]
    stats: BlockStats = field(default_factory=BlockStats)

    def merge(self, other: "FilterResult") -> "FilterResult":
        """Append another chunk's result (rows after this one's)."""
        self.reasons += other.reasons
        self.stats.merge(other.stats)
        return self


def _filter_chunk(blocks: tuple[Block, ...], rows: Sequence[dict], start: int, end: int) -> FilterResult:
    """The chain over rows[start:end] (a map_chunks worker)."""
    res = FilterResult([])
    res.reasons = run_blocks(blocks, rows[start:end], res.stats)
    return res


def fork_safe(block: Block) -> bool:
    """Whether ``block`` may run in a forked worker (blocks say otherwise with ``fork_safe``)."""
    return bool(getattr(block, "fork_safe", True))


def filter_rows(rows: Sequence[dict], blocks: Sequence[Block], workers: int = 1,
                chunk_size: int = DEFAULT_CHUNK_ROWS) -> FilterResult:
    """Drop reasons for one partition's rows and each block's counts (module docstring)."""
    blocks = tuple(blocks)
    split = len(blocks)
    if workers > 1:
        split = next((i for i, b in enumerate(blocks) if not fork_safe(b)), len(blocks))
    in_workers, in_parent = blocks[:split], blocks[split:]
    result = FilterResult([])
    for part in map_chunks(_filter_chunk, in_workers, rows, workers, chunk_size):
        result.merge(part)
    if in_parent:
        survivors = [i for i, r in enumerate(result.reasons) if r is None]
        later = run_blocks(in_parent, [rows[i] for i in survivors], result.stats)
        for i, reason in zip(survivors, later):
            result.reasons[i] = reason
    return result
