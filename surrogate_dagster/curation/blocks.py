"""One shape for every curation filter: a row goes in, the block keeps it or names why it drops it.

A block has a ``name`` and ``decide(row) -> None | reason``: None keeps the row, a non-empty
string drops it and is the reason recorded for it (``ast_error_python``, ``quality_hex_words``).
A block that is cheaper over many rows at once (a model scoring a batch), or that reports more
than keep/drop (blocks parsed per language, a score histogram), also defines
``decide_batch(rows, notes) -> list[None | reason]``: the same decisions as ``decide`` row by
row, with its own tallies added to the Counter ``notes`` (kept per block by the runner).
``decide_batch`` below gives the row-by-row loop to blocks that do not.

``run_blocks`` applies a chain of blocks to rows: a row is dropped by the first block that gives
a reason, and later blocks never see it. The runner counts, per block, the rows it saw, kept and
dropped by reason (the way datatrove's filters keep ``total``/``forwarded``/``dropped_<reason>``
stats), so counts add up: rows in = rows kept + the sum of every block's drops.

A :class:`Group` is a run of blocks that all decide every row entering it: the row is dropped by
the first of them (in order) that gives a reason, and every reason found is counted under
``flagged`` (how many rows each rule would drop on its own: what a threshold change would move).
Use it where the extra decisions are wanted; a plain chain stops at the first drop. A subclass
may compute ``violations`` in one fused pass, provided it finds exactly what its blocks find.

No Dagster here: the assets call this and turn ``BlockStats`` into metadata.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence, runtime_checkable


@runtime_checkable
class Block(Protocol):
    """A row filter: ``decide(row)`` returns None (keep) or the drop reason."""

    name: str

    def decide(self, row: dict) -> str | None:  # pragma: no cover - protocol
        ...


def decide_batch(block: Block, rows: Sequence[dict], notes: Counter | None = None) -> list[str | None]:
    """``block.decide_batch(rows, notes)`` when the block has one, else ``decide`` row by row."""
    batch = getattr(block, "decide_batch", None)
    if batch is not None:
        out = list(batch(rows, notes if notes is not None else Counter()))
        if len(out) != len(rows):
            raise ValueError(f"block {block.name!r}: decide_batch returned {len(out)} decisions "
                             f"for {len(rows)} rows")
        return out
    return [block.decide(r) for r in rows]


class Group:
    """Blocks that all decide each row entering the group (see the module docstring)."""

    def __init__(self, name: str, blocks: Sequence[Block]) -> None:
        names = [b.name for b in blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"group {name!r}: duplicate block names {names}")
        self.name = name
        self.blocks = tuple(blocks)

    def violations(self, row: dict) -> list[str]:
        """Every reason the group's blocks give for ``row``, in block order."""
        return [r for b in self.blocks if (r := b.decide(row))]

    def decide(self, row: dict) -> str | None:
        """The first of ``violations(row)``, or None: the group as one block."""
        found = self.violations(row)
        return found[0] if found else None


@dataclass
class BlockCounts:
    """What one block (or group) did: rows it saw, kept, and dropped by reason."""

    seen: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    flagged: Counter = field(default_factory=Counter)   # groups only: every reason found per row
    notes: Counter = field(default_factory=Counter)     # the block's own tallies (decide_batch)
    cpu_seconds: float = 0.0                            # process CPU time spent in the block

    def merge(self, other: "BlockCounts") -> "BlockCounts":
        self.seen += other.seen
        self.kept += other.kept
        self.dropped.update(other.dropped)
        self.flagged.update(other.flagged)
        self.notes.update(other.notes)
        self.cpu_seconds += other.cpu_seconds
        return self

    def as_metadata(self) -> dict:
        out = {"rows_seen": self.seen, "rows_kept": self.kept, "rows_dropped": sum(self.dropped.values()),
               "dropped_by_reason": dict(sorted(self.dropped.items()))}
        if self.flagged:
            out["flagged_by_reason"] = dict(sorted(self.flagged.items()))
        return out


@dataclass
class BlockStats:
    """Counts per block name, in chain order; merge the stats of several chunks with ``merge``."""

    blocks: dict[str, BlockCounts] = field(default_factory=dict)

    def of(self, name: str) -> BlockCounts:
        counts = self.blocks.get(name)
        if counts is None:
            counts = self.blocks[name] = BlockCounts()
        return counts

    def merge(self, other: "BlockStats") -> "BlockStats":
        for name, counts in other.blocks.items():
            self.of(name).merge(counts)
        return self

    def dropped(self) -> Counter:
        """Rows dropped by reason, all blocks together."""
        total: Counter = Counter()
        for counts in self.blocks.values():
            total.update(counts.dropped)
        return total

    def as_metadata(self) -> dict:
        return {name: counts.as_metadata() for name, counts in self.blocks.items()}


def run_blocks(steps: Iterable[Block], rows: Sequence[dict], stats: BlockStats | None = None) -> list[str | None]:
    """The drop reason of each row (None = kept), in input order, after the chain ``steps``.

    Block-major: each step decides all rows still kept before the next step starts, so a step
    that is cheaper in batches gets its rows together, and memos a step fills (a fence scan, a
    parse) are found by the next step while still warm. Counts go into ``stats`` when given.
    """
    stats = stats if stats is not None else BlockStats()
    reasons: list[str | None] = [None] * len(rows)
    alive = list(range(len(rows)))
    for step in steps:
        if not alive:
            stats.of(step.name)  # the step is listed even when no row reached it
            continue
        batch = [rows[i] for i in alive]
        counts = stats.of(step.name)
        counts.seen += len(alive)
        t0 = time.process_time()
        if isinstance(step, Group):
            decided = []
            for row in batch:
                found = step.violations(row)
                counts.flagged.update(found)
                decided.append(found[0] if found else None)
        else:
            decided = decide_batch(step, batch, counts.notes)
        counts.cpu_seconds += time.process_time() - t0
        survivors = []
        for i, reason in zip(alive, decided):
            if reason:
                reasons[i] = reason
                counts.dropped[reason] += 1
            else:
                survivors.append(i)
        counts.kept += len(survivors)
        alive = survivors
    return reasons


def keep_drop(rows: Sequence[dict], reasons: Sequence[str | None]) -> tuple[list[dict], list[tuple[dict, str]]]:
    """Split rows by their reasons: (kept rows, [(dropped row, reason)])."""
    kept: list[dict] = []
    dropped: list[tuple[dict, str]] = []
    for row, reason in zip(rows, reasons):
        if reason:
            dropped.append((row, reason))
        else:
            kept.append(row)
    return kept, dropped
