"""Decontamination that survives renaming: shingles of canonicalized code.

The exact index (:mod:`.decontam`) compares normalized tokens, so a benchmark solution whose
identifiers were renamed, or a short item shown as a line-numbered listing, a notebook or
highlighted HTML, shares too few 13-grams with its item to match. This second index compares
structure instead.

Views stripped first (:func:`strip_views`, after the escapes and comment markers of
:func:`.decontam.normalize`): HTML tags (syntax-highlighted code), notebook JSON quoting (the
``"...",`` around each source line), and line-number gutters (``cat -n``, ``12 |``): a number
at the start of a line counts as a gutter only when a neighbouring line carries the next or
previous number, so ``10 items`` in prose is left alone.

Canonical tokens (:func:`canonical_tokens`): the normalized tokens (``\\w+`` words and single
punctuation marks, lower-cased), without parentheses and with one quote character (a formatter
adds or drops redundant parentheses and swaps quote styles). Words are *kept* when they are Python keywords, builtins or
English function words (a renamer leaves them alone and they carry the structure); every other
word is an identifier and every number a literal. Identifiers and literals become
position-stable placeholders: within a shingle of ``k`` tokens, a placeholder says how far back
the same name (or value) last occurred in that shingle, or that it is new there (Baker's
parameterized-string "prev" encoding, clipped to the window). ``def add(a, b): return a + b``
and ``def plus(x, y): return x + y`` give the same shingles, wherever in a row they stand and
whatever comes before them, which first-seen numbering over the whole row would not.

Index (:class:`CanonicalIndex`): the distinct shingle hashes of each indexed *part* (a
benchmark's reference code with and without its docstring, with its tests, see
:func:`.benchmark_refs.load_code_parts`), sorted, with the part each came from. Shingles found
in more than ``max_item_df`` items are pruned (``def v(v): return v`` is everyone's). A part
with fewer than ``min_shingles`` shingles left is unmatchable (counted in ``meta``).

Rule: a row matches a part when it holds at least ``min_shingles`` of the part's distinct
shingles *and* at least ``min_fraction`` of them. The figures behind the defaults (tuning half
vs held-out half of planted items and clean functions) are in benchmarks/decontam_bench.py.
"""

from __future__ import annotations

import builtins
import html
import io
import json
import keyword
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import xxhash
from numpy.lib.stride_tricks import sliding_window_view

from .decontam_text import _DIFF_PREFIX, _ESCAPE, _MARKERS, _SURROGATE, BenchmarkItem, Match, _mix, _unescape

FORMAT_VERSION = 1
_TOKEN = re.compile(r"\w+|[^\w\s]")
_HTML_TAG = re.compile(r"</?[a-zA-Z][\w-]*(?:\s+[\w:-]+\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[\w-]+))*\s*/?>")
# A line's leading number and what separates it from the code: a tab or spaces (``cat -n``,
# ``nl``), or a bar/colon (editor and grep views).
_GUTTER = re.compile(r"^[ \t]*(\d{1,6})(?:[ \t]*[|:\u2502][ \t]?|\t| +|$)")
_NUMBERED = re.compile(r"^[ \t]*\d+[^\n]*\n[ \t]*\d+", re.M)  # two consecutive lines opening with numbers
_NB_OPEN = re.compile(r'^[ \t]*"')
_NB_CLOSE = re.compile(r'"[ \t]*,?[ \t]*$')
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
_PARENS = frozenset("()")
_MULT = np.uint64(0x9E3779B97F4A7C15)
_ID_SEED, _LIT_SEED = 0x1D, 0x117


@dataclass(frozen=True)
class CanonicalParams:
    """The rule's parameters (assets/curation.yaml ``decontamination.canonical``)."""

    k: int = 12
    min_shingles: int = 6
    min_fraction: float = 0.4
    max_item_df: int = 3
    keep_numbers: bool = True  # numbers kept as values (a renamer leaves them), else placeholders


def _resolve(text: str) -> str:
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
        if _SURROGATE.search(text):
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _strip_gutters(text: str) -> str:
    lines = text.split("\n")
    nums = [int(m.group(1)) if (m := _GUTTER.match(ln)) else None for ln in lines]
    out = []
    for i, ln in enumerate(lines):
        n = nums[i]
        # a gutter only where a neighbouring line (blank lines skipped) continues the count
        near = [nums[j] for j in (i - 1, i + 1) if 0 <= j < len(lines)]
        if n is not None and any(v is not None and abs(v - n) == 1 for v in near):
            ln = _GUTTER.sub("", ln, count=1)
        out.append(ln)
    return "\n".join(out)


def _strip_notebook(text: str) -> str:
    out = []
    for ln in text.split("\n"):
        stripped = ln.strip()
        if stripped in ('"', '",', "],", "]", "[", '"source": [', '"source":['):
            continue
        out.append(_NB_CLOSE.sub("", _NB_OPEN.sub("", ln)))
    return "\n".join(out)


def strip_views(text: str) -> str:
    """Text with escapes resolved and display wrappers removed (see the module docstring)."""
    text = _resolve(text)
    if "<" in text and "</" in text:  # highlighted HTML: tags out, then the entities they escaped
        text = _HTML_TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    if '"cell_type"' in text or '"source"' in text:
        text = _strip_notebook(text)
    if _NUMBERED.search(text):
        text = _strip_gutters(text)
    for marker in _MARKERS:
        if marker in text:
            text = text.replace(marker, " ")
    return _DIFF_PREFIX.sub(" ", text)


def canonical_tokens(text: str, keep_numbers: bool = True) -> tuple[list[str], np.ndarray]:
    """(tokens, kinds) of :func:`strip_views` text: kind 0 kept, 1 identifier, 2 literal."""
    text = strip_views(text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    # parentheses dropped and quotes unified: a formatter adds and removes redundant parentheses
    # and swaps quote styles, neither of which changes the code
    toks = [t for t in _TOKEN.findall(text.lower().replace('"', "'")) if t not in _PARENS]
    lit = 0 if keep_numbers else 2
    kind_of = {t: 0 if (t in _KEPT or not (t[0].isalnum() or t[0] == "_")) else lit if t[0].isdigit() else 1
               for t in set(toks)}  # classify each distinct token once
    return toks, np.array([kind_of[t] for t in toks], dtype=np.int8)


def _param_table(k: int) -> np.ndarray:
    """Hash of (kind, back-distance) for placeholders: row kind-1, column distance (0 = new)."""
    return np.array([[xxhash.xxh3_64_intdigest(f"{seed}:{d}") for d in range(k)] for seed in (_ID_SEED, _LIT_SEED)],
                    dtype=np.uint64)


def shingle_hashes(tokens: list[str], kinds: np.ndarray, k: int) -> np.ndarray:
    """The ``len(tokens) - k + 1`` canonical shingle hashes of a token stream, in order."""
    n = len(tokens)
    if n < k:
        return np.empty(0, dtype=np.uint64)
    th = np.fromiter(map(xxhash.xxh3_64_intdigest, tokens), dtype=np.uint64, count=n)
    # back-distance of each placeholder to the previous occurrence of the same token (k: none)
    dist = np.full(n, k, dtype=np.int64)
    param = np.flatnonzero(kinds > 0)
    if param.size:
        order = param[np.argsort(th[param], kind="stable")]
        same = th[order[1:]] == th[order[:-1]]
        dist[order[1:][same]] = np.minimum(order[1:][same] - order[:-1][same], k)
    table = _param_table(k)
    offsets = np.arange(k)
    powers = np.ones(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k - 2, -1, -1):
            powers[j] = powers[j + 1] * _MULT
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


class CanonicalIndex:
    """Sorted canonical shingle hashes of benchmark code parts, each with its part number."""

    def __init__(self, params: CanonicalParams, parts: list[tuple[str, str]], part_shingles: np.ndarray,
                 hashes: np.ndarray, refs: np.ndarray, meta: dict[str, Any]) -> None:
        self.params = params
        self.parts = parts  # (benchmark, item_id) of each part, by part number
        self.part_shingles = part_shingles  # distinct shingles per part after pruning
        self.hashes = hashes
        self.refs = refs
        self.meta = meta

    @classmethod
    def build(cls, parts: Iterable[BenchmarkItem], params: CanonicalParams = CanonicalParams()) -> "CanonicalIndex":
        """Index each part's distinct canonical shingles (parts of one item are kept apart: the
        rule's fraction is of one part)."""
        if params.k < 2 or params.min_shingles < 1 or not 0 < params.min_fraction <= 1:
            raise ValueError(f"bad canonical decontamination parameters: {params}")
        keys: list[tuple[str, str]] = []
        uniq: list[np.ndarray] = []
        for p in parts:
            h = np.unique(shingle_hashes(*canonical_tokens(p.text, params.keep_numbers), params.k))
            keys.append((p.benchmark, p.item_id))
            uniq.append(h)
        item_of = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        hashes = np.concatenate(uniq) if uniq else np.empty(0, dtype=np.uint64)
        refs = (np.concatenate([np.full(u.size, i, dtype=np.int32) for i, u in enumerate(uniq)])
                if uniq else np.empty(0, dtype=np.int32))
        # document frequency over items (an item's parts share shingles; count the item once)
        items = np.array([item_of[keys[r]] for r in range(len(keys))], dtype=np.int64)[refs] if refs.size else refs
        pair = np.unique(np.stack([hashes, items.astype(np.uint64)]), axis=1) if hashes.size else np.empty((2, 0), np.uint64)
        hs, df = np.unique(pair[0], return_counts=True)
        common = hs[df > params.max_item_df]
        keep = ~np.isin(hashes, common)
        hashes, refs = hashes[keep], refs[keep]
        order = np.argsort(hashes, kind="stable")
        hashes, refs = hashes[order], refs[order]
        part_shingles = np.bincount(refs, minlength=len(keys)).astype(np.int32)
        unmatchable: dict[str, int] = {}
        for (bench, _), c in zip(keys, part_shingles):
            if c < params.min_shingles:
                unmatchable[bench] = unmatchable.get(bench, 0) + 1
        meta = {"format": FORMAT_VERSION, "params": params.__dict__, "parts": len(keys), "items": len(item_of),
                "indexed_shingles": int(hashes.size), "pruned_common_shingles": int(common.size),
                "unmatchable_parts": unmatchable}
        return cls(params, keys, part_shingles, hashes, refs, meta)

    def check(self, text: str) -> Match | None:
        """The part sharing the most shingles among those passing the rule, or None."""
        if not self.hashes.size:
            return None
        return self.check_shingles(self.row_shingles(text))

    def row_shingles(self, text: str) -> np.ndarray:
        """The distinct canonical shingle hashes of ``text`` (sorted)."""
        return np.unique(shingle_hashes(*canonical_tokens(text, self.params.keep_numbers), self.params.k))

    def shared(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(parts, counts): each part sharing shingles with the distinct sorted hashes ``q``, and
        how many it shares."""
        lo = np.searchsorted(self.hashes, q, side="left")
        found = self.hashes[np.minimum(lo, self.hashes.size - 1)] == q if self.hashes.size else lo < 0
        q, lo = q[found], lo[found]
        cnt = np.searchsorted(self.hashes, q, side="right") - lo
        j = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
        parts, counts = np.unique(self.refs[j], return_counts=True)
        return parts, counts

    def check_shingles(self, q: np.ndarray) -> Match | None:
        """:meth:`check` of a row's distinct shingle hashes ``q`` (sorted)."""
        p = self.params
        if q.size < p.min_shingles:
            return None
        parts, shared = self.shared(q)
        ok = (shared >= p.min_shingles) & (shared >= p.min_fraction * self.part_shingles[parts])
        if not ok.any():
            return None
        i = int(np.argmax(np.where(ok, shared, -1)))
        best = int(parts[i])
        bench, item_id = self.parts[best]
        return Match(bench, item_id, int(shared[i]), int(shared[i]),
                     f"canonical: {int(shared[i])} of {int(self.part_shingles[best])} shingles")

    def check_many(self, texts: Sequence[str]) -> list[Match | None]:
        return [self.check(t) for t in texts]

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        header = {"params": self.params.__dict__, "parts": self.parts, "meta": self.meta}
        return header, {"c_hashes": self.hashes, "c_refs": self.refs, "c_part_shingles": self.part_shingles}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "CanonicalIndex":
        if header["meta"].get("format") != FORMAT_VERSION:
            raise ValueError(f"canonical index format {header['meta'].get('format')} != {FORMAT_VERSION}")
        return cls(CanonicalParams(**header["params"]), [tuple(p) for p in header["parts"]],
                   arrays["c_part_shingles"], arrays["c_hashes"], arrays["c_refs"], header["meta"])

    def to_bytes(self) -> bytes:
        header, arrays = self.to_arrays()
        buf = io.BytesIO()
        np.savez_compressed(buf, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "CanonicalIndex":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls.from_arrays(json.loads(z["header"].tobytes().decode()), {k: z[k] for k in z.files})
