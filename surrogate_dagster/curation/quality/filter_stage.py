"""The per-source filter step in one call: AST validity, then the heuristics, then the edu scorer.

Same decisions as running the three blocks one after the other (``filtered_rows``): a row is
dropped by the first of ``AstChecker.check_row``, ``HeuristicFilter.check_row`` (only on rows
the AST check kept) and ``EduFilter.check_rows`` (only on rows both kept) that gives a reason,
and each block's stats count exactly the rows it saw. What this adds:

- locality: rows go through the three blocks chunk by chunk, so the heuristics and the edu
  scorer find the answer's fence scan (``code_blocks.PARTS_MEMO``) and tree-sitter parses
  (``ast_validity.PARSE_MEMO``) that the AST check just made, instead of redoing them;
- parallelism: ``workers > 1`` forks that many processes over chunks of ``chunk_size`` rows
  (:mod:`..parallel`); results and stats are identical to ``workers=1``.

A scorer that is not ``fork_safe`` (the transformers-based Stack-Edu classifier: torch state
does not survive a fork reliably, and each worker would load its own model) is run once in the
calling process over all survivors, batched as before; AST and heuristics still fan out.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from ..ast_validity import AstChecker, AstStats
from ..parallel import DEFAULT_CHUNK_ROWS, map_chunks
from .edu_classifier import EduFilter, EduStats
from .heuristics import HeuristicFilter, HeuristicStats


@dataclass
class FilterResult:
    """Per-row drop reasons (None = kept, same order as the input) and each block's stats."""

    reasons: list[str | None]
    ast: AstStats = field(default_factory=AstStats)
    heuristics: HeuristicStats = field(default_factory=HeuristicStats)
    edu: EduStats = field(default_factory=EduStats)
    cpu_seconds: Counter = field(default_factory=Counter)  # "ast" / "heuristics" / "edu", all workers

    def merge(self, other: "FilterResult") -> "FilterResult":
        """Append another chunk's result (rows after this one's)."""
        self.reasons += other.reasons
        self.ast.merge(other.ast)
        self.heuristics.merge(other.heuristics)
        self.edu.merge(other.edu)
        self.cpu_seconds.update(other.cpu_seconds)
        return self


Blocks = tuple[AstChecker, HeuristicFilter, "EduFilter | None"]


def _filter_chunk(blocks: Blocks, rows: Sequence[dict], start: int, end: int) -> FilterResult:
    """AST + heuristics (+ edu when given) over rows[start:end] (a map_chunks worker)."""
    checker, heuristics, edu = blocks
    res = FilterResult([])
    t0 = time.process_time()
    res.reasons = [checker.check_row(rows[i], res.ast) for i in range(start, end)]
    t1 = time.process_time()
    for k, reason in enumerate(res.reasons):
        if reason is None:
            res.reasons[k] = heuristics.check_row(rows[start + k], res.heuristics)
    t2 = time.process_time()
    res.cpu_seconds.update(ast=t1 - t0, heuristics=t2 - t1)
    if edu is not None:
        _edu_pass(edu, rows, res, start)
        res.cpu_seconds["edu"] += time.process_time() - t2
    return res


def _edu_pass(edu: EduFilter, rows: Sequence[dict], res: FilterResult, offset: int) -> None:
    """Score the rows ``res`` still keeps (rows[offset + k] for reasons[k] None), in one batch."""
    survivors = [k for k, r in enumerate(res.reasons) if r is None]
    if survivors:
        for k, reason in zip(survivors, edu.check_rows([rows[offset + k] for k in survivors], res.edu)):
            res.reasons[k] = reason


def filter_rows(rows: Sequence[dict], checker: AstChecker, heuristics: HeuristicFilter, edu: EduFilter,
                workers: int = 1, chunk_size: int = DEFAULT_CHUNK_ROWS) -> FilterResult:
    """Drop reasons for one partition's rows and the three blocks' stats (module docstring)."""
    in_workers = edu if getattr(edu.scorer, "fork_safe", False) or workers <= 1 else None
    result = FilterResult([])
    for part in map_chunks(_filter_chunk, (checker, heuristics, in_workers), rows, workers, chunk_size):
        result.merge(part)
    if in_workers is None:
        t0 = time.process_time()
        _edu_pass(edu, rows, result, 0)
        result.cpu_seconds["edu"] += time.process_time() - t0
    return result
