"""Canonicalized code for the renaming-proof decontamination index (:mod:`.decontam_canonical`).

The text is :func:`.decontam_views.strip_views` output (display wrappers removed, line breaks
kept). Canonical tokens (:func:`canonical_stream`): the normalized tokens (``\\w+`` words and
single punctuation marks, lower-cased), without parentheses and semicolons and with one quote
character (a formatter adds or drops redundant parentheses and statement-ending semicolons, and
swaps quote styles). Words are *kept* when
they are Python keywords, builtins or English function words (a renamer leaves them alone and
they carry the structure); every other word is an identifier and every number a literal (kept
as its value by default: a renamer leaves numbers alone too). Identifiers and literals become
position-stable placeholders: a placeholder says how far back the same name last occurred, or
that it is new (Baker's parameterized-string "prev" encoding), so ``def add(a, b): return a + b``
and ``def plus(x, y): return x + y`` canonicalize alike wherever they stand in a row, which
first-seen numbering over the whole row would not give.

Two hashes come from a stream:

- shingles (:func:`shingle_hashes`): every ``k`` consecutive canonical tokens, a placeholder's
  distance clipped to the window;
- function fingerprints (:func:`function_fingerprints`): the hash of a whole function
  (:func:`function_spans`: from a ``def`` opening a line to the next line indented no deeper
  that does not open with a closing bracket), distances counted inside the function, with the
  function's count of kept words (:func:`fingerprint_words`: how specific it is).

This module is the reference: the index is built with it, and rows the compiled pass
(:mod:`.decontam_canonical_kernels`) does not take are checked with it.
"""

from __future__ import annotations

import bisect
import builtins
import keyword
import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import xxhash
from numpy.lib.stride_tricks import sliding_window_view

from .decontam_text import _mix
from .decontam_views import strip_views

_TOKEN = re.compile(r"\w+|[^\w\s]")
# English function words (prose structure a renamer leaves alone). Single letters and words that
# are common names (``first``, ``last``, ``one``) are left out: they are identifiers in code.
_ENGLISH = frozenset(
    "an the of to in on at by for from with into onto than then that this these those its "
    "be been being is are was were has have had do does did can could should would will shall may "
    "must not no nor and or but if else when while where which who whom whose what how why each "
    "every all any some such only also more most less least very so as there here their they them "
    "we you your our".split())
_KEPT = frozenset(w.lower() for w in keyword.kwlist + keyword.softkwlist + dir(builtins)
                  if w.isidentifier() and not w.startswith("_")) | _ENGLISH
_DROPPED = frozenset("();")  # redundant parentheses and statement separators
_CLOSERS = (")", "]", "}")
_NOT_COUNTED = frozenset(("def", "return"))  # kept words every function has
_MULT = np.uint64(0x9E3779B97F4A7C15)
_ID_SEED, _LIT_SEED = 0x1D, 0x117
# a fingerprint placeholder: _mix(seed of its kind + distance back to the same name, 0 = new)
FINGERPRINT_SEEDS = np.array([0x5EED_1D00_0000_0000, 0x5EED_7100_0000_0000], dtype=np.uint64)
KEPT_HASHES = np.array(sorted({xxhash.xxh3_64_intdigest(w) for w in _KEPT}), dtype=np.uint64)
DEF_HASH, ASYNC_HASH = (np.uint64(xxhash.xxh3_64_intdigest(w)) for w in ("def", "async"))


@dataclass(frozen=True)
class CanonicalStream:
    """A text's canonical tokens, and for each token where its line stands (for function spans)."""

    tokens: list[str]
    kinds: np.ndarray  # int8: 0 kept, 1 identifier, 2 literal
    hashes: np.ndarray  # uint64: xxh3-64 of each token
    first: np.ndarray  # bool: the first token of its line
    indent: np.ndarray  # int64: the spaces and tabs opening the token's line
    closer: np.ndarray  # bool: the token's line opens with a closing bracket


def canonical_stream(stripped: str, keep_numbers: bool = True) -> CanonicalStream:
    """The canonical tokens of :func:`strip_views` text (see the module docstring)."""
    if not stripped.isascii():
        stripped = unicodedata.normalize("NFKC", stripped)
    # parentheses and semicolons dropped, quotes unified: a formatter adds and removes redundant
    # parentheses, drops statement-ending semicolons and swaps quote styles, none of which
    # changes the code
    toks: list[str] = []
    first: list[bool] = []
    indent: list[int] = []
    closer: list[bool] = []
    for line in stripped.lower().replace('"', "'").split("\n"):
        line_toks = [t for t in _TOKEN.findall(line) if t not in _DROPPED]
        if not line_toks:
            continue
        body = line.lstrip(" \t")
        toks += line_toks
        first += [True] + [False] * (len(line_toks) - 1)
        indent += [len(line) - len(body)] * len(line_toks)
        closer += [body.startswith(_CLOSERS)] * len(line_toks)
    lit = 0 if keep_numbers else 2
    kind_of = {t: 0 if (t in _KEPT or not (t[0].isalnum() or t[0] == "_")) else lit if t[0].isdigit() else 1
               for t in set(toks)}  # classify each distinct token once
    return CanonicalStream(toks, np.array([kind_of[t] for t in toks], dtype=np.int8),
                           np.fromiter(map(xxhash.xxh3_64_intdigest, toks), dtype=np.uint64, count=len(toks)),
                           np.array(first, dtype=bool), np.array(indent, dtype=np.int64), np.array(closer, dtype=bool))


def canonical_tokens(text: str, keep_numbers: bool = True) -> tuple[list[str], np.ndarray]:
    """(tokens, kinds) of ``text`` after :func:`strip_views`: kind 0 kept, 1 identifier, 2 literal."""
    s = canonical_stream(strip_views(text), keep_numbers)
    return s.tokens, s.kinds


def previous_occurrence(hashes: np.ndarray) -> np.ndarray:
    """For each token, the position of the previous token with the same hash, or -1."""
    prev = np.full(hashes.size, -1, dtype=np.int64)
    if hashes.size > 1:
        order = np.argsort(hashes, kind="stable")
        same = hashes[order[1:]] == hashes[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
    return prev


def _param_table(k: int) -> np.ndarray:
    """Hash of (kind, back-distance) for placeholders: row kind-1, column distance (0 = new)."""
    return np.array([[xxhash.xxh3_64_intdigest(f"{seed}:{d}") for d in range(k)] for seed in (_ID_SEED, _LIT_SEED)],
                    dtype=np.uint64)


def _powers(n: int) -> np.ndarray:
    """``_MULT ** (n - 1 - j)`` for j < n (mod 2^64): the polynomial hash's weights."""
    p = np.ones(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n - 2, -1, -1):
            p[j] = p[j + 1] * _MULT
    return p


def shingle_hashes(tokens: list[str], kinds: np.ndarray, k: int, hashes: np.ndarray | None = None) -> np.ndarray:
    """The ``len(tokens) - k + 1`` canonical shingle hashes of a token stream, in order
    (``hashes``: the tokens' xxh3, when already computed)."""
    n = len(tokens)
    if n < k:
        return np.empty(0, dtype=np.uint64)
    th = hashes if hashes is not None else np.fromiter(map(xxhash.xxh3_64_intdigest, tokens), dtype=np.uint64, count=n)
    # back-distance of each placeholder to the previous occurrence of the same token (k: none)
    prev = previous_occurrence(th)
    dist = np.where((prev >= 0) & (kinds > 0), np.minimum(np.arange(n) - prev, k), k)
    table = _param_table(k)
    offsets = np.arange(k)
    powers = _powers(k)
    out = np.empty(n - k + 1, dtype=np.uint64)
    step = max(1, (1 << 20) // k)  # windows per block: ~8 MiB of uint64 per array
    for s in range(0, n - k + 1, step):
        e = min(n - k + 1, s + step)
        span = slice(s, e + k - 1)
        d = sliding_window_view(dist[span], k)
        kd = sliding_window_view(kinds[span], k)
        t = sliding_window_view(th[span], k)
        back = np.where(d <= offsets, d, 0)  # an earlier occurrence outside the window is "new"
        vals = np.where(kd == 0, t, table[np.maximum(kd, 1) - 1, back])
        with np.errstate(over="ignore"):
            out[s:e] = _mix((vals * powers).sum(axis=1, dtype=np.uint64))
    return out


def function_spans(s: CanonicalStream) -> list[tuple[int, int]]:
    """Token spans [start, end) of the functions in a stream: from a ``def`` that opens its line
    (after an ``async``) to the first later line indented no deeper that does not open with a
    closing bracket (a signature's ``):`` line). Nested functions are spans of their own."""
    out = []
    n = len(s.tokens)
    openers = np.flatnonzero(s.first & ~s.closer).tolist()  # the lines that can end a function
    indent = s.indent.tolist()
    for q in np.flatnonzero(s.first).tolist():
        if s.tokens[q] == "def":
            start = q
        elif s.tokens[q] == "async" and q + 1 < n and s.tokens[q + 1] == "def" and not s.first[q + 1]:
            start = q + 1
        else:
            continue
        end = n
        for b in openers[bisect.bisect_right(openers, start):]:  # stops at the function's end
            if indent[b] <= indent[q]:
                end = b
                break
        out.append((start, end))
    return out


def fingerprint(s: CanonicalStream, prev: np.ndarray, start: int, end: int) -> np.uint64:
    """The hash of tokens [start, end): kept tokens as themselves, placeholders as the distance
    back to the same name inside the span (0: new there)."""
    pos = np.arange(start, end)
    back = np.where(prev[start:end] >= start, pos - prev[start:end], 0).astype(np.uint64)
    kinds = s.kinds[start:end]
    with np.errstate(over="ignore"):
        placeholder = _mix(FINGERPRINT_SEEDS[np.maximum(kinds, 1) - 1] + back)
        vals = np.where(kinds == 0, s.hashes[start:end], placeholder)
        return _mix(np.atleast_1d((vals * _powers(end - start)).sum(dtype=np.uint64)))[0]


def fingerprint_words(s: CanonicalStream, start: int, end: int) -> int:
    """Kept words (keywords, builtins, English words, kept numbers) in [start, end), ``def`` and
    ``return`` aside: how specific a function's structure is."""
    return sum(1 for t, kd in zip(s.tokens[start:end], s.kinds[start:end].tolist())
               if kd == 0 and (t[0].isalnum() or t[0] == "_") and t not in _NOT_COUNTED)


def function_fingerprints(s: CanonicalStream) -> list[tuple[np.uint64, int, int]]:
    """(fingerprint, words, tokens) of each function of a stream."""
    prev = previous_occurrence(s.hashes)
    return [(fingerprint(s, prev, a, b), fingerprint_words(s, a, b), b - a) for a, b in function_spans(s)]
