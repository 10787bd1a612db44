"""What both decontamination indexes share: the item and match records, the escape and marker
patterns of the text normalization, and the 64-bit hash finisher."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BenchmarkItem:
    """One benchmark item's text (prompt, solution, tests...) under a stable id."""

    benchmark: str
    item_id: str
    text: str


@dataclass(frozen=True)
class Match:
    """Why a row was removed: which item it overlaps and how much."""

    benchmark: str
    item_id: str
    longest_match_tokens: int
    matched_ngrams: int
    snippet: str  # the longest matched run, normalized tokens joined by spaces (<= 300 chars)

    @property
    def reason(self) -> str:
        return f"decontam_{self.benchmark}"


# A run of backslashes and what it escapes. The run is collapsed whole, so a string escaped once
# (a tool call's JSON arguments) or twice (JSON inside JSON) normalizes like the raw text.
_ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|([nrtfb])|(.))", re.S)
# Comment and docstring markers, and a diff's line prefix: removed, so a docstring rewritten as
# ``#`` or ``//`` comments, or code quoted as diff lines, yields the tokens of the plain text.
# The markers go by str.replace (several times faster than one regex alternation over the row).
_MARKERS = ('"""', "'''", "#", "//", "/*", "*/")
_DIFF_PREFIX = re.compile(r"^[ \t]*[+-]", re.M)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _unescape(m: re.Match) -> str:
    if m.group(1) is not None:
        return chr(int(m.group(1), 16))
    if m.group(2) is not None:  # a line break stays one, so a diff's line prefixes are still found
        return "\n" if m.group(2) == "n" else " "
    return m.group(3)


def _mix(h: np.ndarray) -> np.ndarray:
    # splitmix64 finalizer: spreads the polynomial hash so the sorted index has no clumps
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))
