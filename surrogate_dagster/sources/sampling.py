"""Choose up to `cap` rows spread over problems: round-robin over groups, seeded, order-free.

Several sources hold many rows per problem (OpenCodeReasoning-2 and rStar-Coder: several
solutions per question; nebius and SWE-Gym OpenHands: several runs per instance). Taking the
first `cap` rows of the file fills the cap with a few problems; this module picks one row of
every problem first, then a second row of every problem that has one, and so on.

Every choice comes from hashes, never from positions:
- a row's rank inside its group is sha256(seed, row content), so the same rows give the same
  choice in any order, and a row appended upstream moves at most two chosen rows per appended row;
- within one round, groups are ordered by sha256(seed, group), so which problems get a second
  row when the cap ends mid-round is seeded too.
Rows with no group value are each their own group. Pure: no Dagster.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIRROR_TAGS = ("_config", "_split", "_index", "_split_index")  # added by the mirror, not upstream


@dataclass(frozen=True)
class Candidate:
    """One row that passed the filters: its stream position, problem and seeded rank."""

    ordinal: int
    group: str
    rank: str


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()


def group_of(row: dict, columns: Sequence[str]) -> str | None:
    """The first non-empty value among `columns` (the problem id), as a string; None if none."""
    for c in columns:
        v = row.get(c)
        if v is not None and str(v).strip():
            return f"{c}={v}"
    return None


def row_rank(seed: int, row: dict) -> str:
    """A seeded rank from the row's upstream content (the mirror's own tags left out)."""
    return _digest(seed, {k: v for k, v in row.items() if k not in MIRROR_TAGS})


def candidate(ordinal: int, row: dict, columns: Sequence[str], seed: int) -> Candidate:
    rank = row_rank(seed, row)
    return Candidate(ordinal, group_of(row, columns) or f"row:{rank}", rank)


def spread_sample(candidates: Iterable[Candidate], cap: int | None, seed: int) -> list[Candidate]:
    """Up to `cap` candidates, round-robin over groups (see the module docstring), in stream order."""
    by_group: dict[str, list[Candidate]] = defaultdict(list)
    for c in candidates:
        by_group[c.group].append(c)
    order = []
    for g, rows in by_group.items():
        g_rank = _digest(seed, "group", g)
        for layer, c in enumerate(sorted(rows, key=lambda c: (c.rank, c.ordinal))):
            order.append(((layer, g_rank, c.rank, c.ordinal), c))
    order.sort(key=lambda kv: kv[0])
    chosen = [c for _, c in (order if cap is None else order[:cap])]
    return sorted(chosen, key=lambda c: c.ordinal)


def group_stats(groups: Iterable[str]) -> dict[str, int]:
    """Distinct groups and the largest group among chosen rows."""
    counts = Counter(groups)
    return {"groups": len(counts), "rows_per_group_max": max(counts.values(), default=0)}
