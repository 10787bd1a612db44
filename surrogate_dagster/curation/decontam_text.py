"""What both decontamination indexes share: the item and match records, the steps of the text
normalization (escapes resolved, comment markers and diff prefixes dropped), the 64-bit hash
finisher and the bit filter that screens hashes before a binary search."""

from __future__ import annotations

import html
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


def resolve_escapes(text: str) -> str:
    """JSON/Python string escapes (``\\n``, ``\\"``, ``\\uXXXX``, at any escaping depth) resolved:
    line breaks and tabs stay themselves, other whitespace escapes become spaces, surrogate
    pairs join."""
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
        if _SURROGATE.search(text):  # \\ud83d\\ude00 pairs -> one character, lone halves -> U+FFFD
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def unescape_entities(text: str) -> str:
    """HTML entities decoded (``&lt;`` -> ``<``)."""
    return html.unescape(text) if "&" in text else text


def drop_markers(text: str) -> str:
    """Comment and docstring markers, and a leading diff ``+``/``-``, replaced by a space."""
    for marker in _MARKERS:
        if marker in text:
            text = text.replace(marker, " ")
    return _DIFF_PREFIX.sub(" ", text)


def _unescape(m: re.Match) -> str:
    if m.group(1) is not None:
        return chr(int(m.group(1), 16))
    if m.group(2) is not None:  # line breaks and tabs stay themselves (diff prefixes, gutters and
        return {"n": "\n", "t": "\t"}.get(m.group(2), " ")  # indentation are read from them)
    return m.group(3)


def _mix(h: np.ndarray) -> np.ndarray:
    # splitmix64 finalizer: spreads the polynomial hash so the sorted index has no clumps
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


FILTER_BITS = 25  # 2^25 bits (4 MiB): ~1.4% false positives at 470k hashes, ~0.6% at 190k


def bit_filter(hashes: np.ndarray, bits: int = FILTER_BITS) -> np.ndarray:
    """A one-hash bit filter over the top ``bits`` bits of ``hashes`` (uint8, 2^bits / 8 bytes):
    :func:`in_filter` is False only for a hash surely not among ``hashes``."""
    slot = hashes >> np.uint64(64 - bits)
    table = np.zeros(1 << (bits - 3), dtype=np.uint8)
    for b in range(8):
        sel = slot[(slot & np.uint64(7)) == np.uint64(b)] >> np.uint64(3)
        table[sel] |= np.uint8(1 << b)  # repeated slots set the same bit: duplicates are fine
    return table


def in_filter(table: np.ndarray, q: np.ndarray, bits: int = FILTER_BITS) -> np.ndarray:
    """Bool mask over hashes ``q``: False where ``q`` is surely not in the :func:`bit_filter`."""
    slot = q >> np.uint64(64 - bits)
    return ((table[slot >> np.uint64(3)] >> (slot & np.uint64(7)).astype(np.uint8)) & 1).astype(bool)
