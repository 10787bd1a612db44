"""Decontamination that survives renaming: an index of canonicalized benchmark code.

The exact index (:mod:`.decontam`) compares normalized tokens, so a benchmark solution whose
identifiers were renamed, or a short item shown as a line-numbered listing, a notebook or
highlighted HTML, shares too few 13-grams with its item to match. This second index compares
canonicalized code (:mod:`.canonical_code`: names and numbers as position-stable placeholders,
display wrappers stripped by :mod:`.decontam_views`).

Index (:class:`CanonicalIndex`): for each indexed *part* (a benchmark's reference code with and
without its docstring, with its tests: :func:`.benchmark_refs.load_code_parts`) its distinct
shingle hashes and its function fingerprints, sorted, each with the part it came from.
Shingles and fingerprints found in more than ``max_item_df`` items are pruned (``def v(v):
return v`` is everyone's); a part that loses a fingerprint that way has none.

Rule, either of:
- shingles: the row holds at least ``min_shingles`` of the part's distinct shingles *and* at
  least ``min_fraction`` of them;
- whole functions: the row holds the fingerprint of every function of the part, and those
  functions hold at least ``min_fingerprint_words`` kept words besides ``def`` and ``return``.
  A one-line solution (``return len(set(s.lower()))``) has fewer than ``min_shingles`` shingles,
  half of them its signature, so overlap cannot name it; the whole function canonically
  identical can, when its structure is specific (``def f(a): return a.b()`` is everyone's).
A part matchable by neither is counted in ``meta["unmatchable_parts"]``. The thresholds were
chosen on a tuning half of planted items and clean functions and checked on the held-out half
(benchmarks/decontam_renamed_bench.py).

Batches (:meth:`CanonicalIndex.check_many`): ASCII rows go through one compiled pass per batch
(:mod:`.decontam_canonical_kernels`, with numba) that keeps only the hashes the index holds;
other rows, and every row without numba, through :mod:`.canonical_code`. Both give the same
:class:`Evidence` (tests/unit/curation/test_decontam_canonical_kernels.py).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from . import minhash_numpy as mnp
from .canonical_code import (ASYNC_HASH, DEF_HASH, FINGERPRINT_SEEDS, KEPT_HASHES, _MULT, _param_table,
                             canonical_stream, function_fingerprints, shingle_hashes)
from .decontam_text import FILTER_BITS, BenchmarkItem, Match, bit_filter
from .decontam_views import strip_views

FORMAT_VERSION = 2  # 2: function fingerprints beside the shingles
_BATCH_BYTES = 1 << 20  # stripped text per compiled call (its output buffers are 16 bytes per byte)


@dataclass(frozen=True)
class CanonicalParams:
    """The rule's parameters (assets/curation.yaml ``decontamination.canonical``)."""

    k: int = 14
    min_shingles: int = 8
    min_fraction: float = 0.4
    max_item_df: int = 3
    keep_numbers: bool = True  # numbers kept as values (a renamer leaves them), else placeholders
    min_fingerprint_words: int = 2


@dataclass(frozen=True)
class Evidence:
    """What each row of a batch shares with the index: (row, part, distinct shingles shared)
    for every part sharing shingles with a row, and (row, part) for every part all of whose
    function fingerprints a row holds. Sorted by row, then part."""

    n_rows: int
    rows: np.ndarray
    parts: np.ndarray
    shared: np.ndarray
    whole_rows: np.ndarray
    whole_parts: np.ndarray


class CanonicalIndex:
    """Sorted canonical shingle hashes and function fingerprints of benchmark code parts."""

    def __init__(self, params: CanonicalParams, parts: list[tuple[str, str]], arrays: dict[str, np.ndarray],
                 meta: dict[str, Any]) -> None:
        self.params = params
        self.parts = parts  # (benchmark, item_id) of each part, by part number
        self.part_shingles = arrays["c_part_shingles"]  # distinct shingles per part after pruning
        self.hashes, self.refs = arrays["c_hashes"], arrays["c_refs"]  # sorted shingles, their parts
        self.fp_hashes, self.fp_refs = arrays["c_fp_hashes"], arrays["c_fp_refs"]  # sorted fingerprints
        self.part_functions = arrays["c_part_functions"]  # fingerprints per part (0: none kept)
        self.part_function_words = arrays["c_part_function_words"]
        self.part_function_tokens = arrays["c_part_function_tokens"]
        self.meta = meta
        self._bits: np.ndarray | None = None

    @classmethod
    def build(cls, parts: Iterable[BenchmarkItem], params: CanonicalParams = CanonicalParams()) -> "CanonicalIndex":
        """Index each part's distinct shingles and function fingerprints (parts of one item are
        kept apart: the rule counts a share of one part)."""
        if params.k < 2 or params.min_shingles < 1 or not 0 < params.min_fraction <= 1:
            raise ValueError(f"bad canonical decontamination parameters: {params}")
        keys: list[tuple[str, str]] = []
        uniq: list[np.ndarray] = []
        functions: list[dict[int, tuple[int, int]]] = []
        for p in parts:
            s = canonical_stream(strip_views(p.text), params.keep_numbers)
            keys.append((p.benchmark, p.item_id))
            uniq.append(np.unique(shingle_hashes(s.tokens, s.kinds, params.k, s.hashes)))
            functions.append({int(f): (w, n) for f, w, n in function_fingerprints(s)})
        item_of = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        item = np.array([item_of[key] for key in keys], dtype=np.int64)
        hashes, refs, common = _pruned(uniq, item, params.max_item_df)
        fp_hashes, fp_refs, fp_common = _pruned([np.array(sorted(f), dtype=np.uint64) for f in functions], item,
                                                params.max_item_df)
        n = len(keys)
        part_functions = np.array([len(f) for f in functions], dtype=np.int32)
        part_functions[np.bincount(fp_refs, minlength=n) < part_functions] = 0  # lost one to pruning: none
        keep = part_functions[fp_refs] > 0
        fp_hashes, fp_refs = fp_hashes[keep], fp_refs[keep]
        words = np.array([sum(w for w, _ in f.values()) for f in functions], dtype=np.int32)
        tokens = np.array([sum(t for _, t in f.values()) for f in functions], dtype=np.int32)
        arrays = {"c_hashes": hashes, "c_refs": refs,
                  "c_part_shingles": np.bincount(refs, minlength=n).astype(np.int32),
                  "c_fp_hashes": fp_hashes, "c_fp_refs": fp_refs, "c_part_functions": part_functions,
                  "c_part_function_words": words, "c_part_function_tokens": tokens}
        index = cls(params, keys, arrays, {})
        by_fp = index._fingerprinted()
        unmatchable: dict[str, int] = {}
        for p, (bench, _) in enumerate(keys):
            if index.part_shingles[p] < params.min_shingles and not by_fp[p]:
                unmatchable[bench] = unmatchable.get(bench, 0) + 1
        index.meta = {"format": FORMAT_VERSION, "params": params.__dict__, "parts": n, "items": len(item_of),
                      "indexed_shingles": int(hashes.size), "pruned_common_shingles": int(common),
                      "indexed_fingerprints": int(fp_hashes.size), "pruned_common_fingerprints": int(fp_common),
                      "fingerprinted_parts": int(by_fp.sum()), "unmatchable_parts": unmatchable}
        return index

    def _fingerprinted(self) -> np.ndarray:
        """Bool per part: matchable by its whole functions under the current parameters."""
        return (self.part_functions > 0) & (self.part_function_words >= self.params.min_fingerprint_words)

    # ------------------------------------------------------------------------- rows
    def warm_up(self) -> None:
        """Build the shingle bit filter and load the compiled pass now (before threads or forks)."""
        if self._bits is None:
            self._bits = bit_filter(self.hashes)
        if mnp.kernels() is not None:
            from . import decontam_canonical_kernels as ck

            ck.warm_up()

    def check(self, text: str) -> Match | None:
        """The best part passing the rule (whole functions first, then most shingles), or None."""
        return self.check_many([text])[0]

    def check_many(self, texts: Sequence[str], stripped: Sequence[str] | None = None) -> list[Match | None]:
        """:meth:`check` of each text (``stripped``: their :func:`strip_views`, when known)."""
        return self.decide(self.evidence(texts, stripped))

    def evidence(self, texts: Sequence[str], stripped: Sequence[str] | None = None) -> Evidence:
        """:class:`Evidence` of a batch: ASCII rows by the compiled pass, the others (and all
        rows without numba) by :mod:`.canonical_code`."""
        views = list(stripped) if stripped is not None else [strip_views(t) for t in texts]
        compiled = mnp.kernels() is not None and bool(self.hashes.size or self.fp_hashes.size)
        fast = [i for i, v in enumerate(views) if v.isascii()] if compiled else []
        slow = np.setdiff1d(np.arange(len(views)), fast).tolist() if len(fast) < len(views) else []
        groups = [self._compiled_hits(views, fast[a:b]) for a, b in _batches(views, fast)]
        if slow:
            groups.append(self._reference_hits(views, slow))
        return self._evidence_of(len(views), groups)

    def _reference_hits(self, views: list[str], rows: list[int]) -> tuple[np.ndarray, ...]:
        """(rows, shingle hashes, rows, fingerprints) of ``views[rows]``, by :mod:`.canonical_code`."""
        sh, fp = [], []
        for i in rows:
            s = canonical_stream(views[i], self.params.keep_numbers)
            sh.append(shingle_hashes(s.tokens, s.kinds, self.params.k, s.hashes))
            fp.append(np.array([f for f, _, _ in function_fingerprints(s)], dtype=np.uint64))
        rows_arr = np.asarray(rows, dtype=np.int64)
        return (np.repeat(rows_arr, [a.size for a in sh]), np.concatenate(sh),
                np.repeat(rows_arr, [a.size for a in fp]), np.concatenate(fp))

    def _compiled_hits(self, views: list[str], rows: list[int]) -> tuple[np.ndarray, ...]:
        """:meth:`_reference_hits` of ASCII rows in one compiled call, keeping only held hashes."""
        from . import decontam_canonical_kernels as ck
        from .minhash_kernels import IS_SPACE, IS_WORD

        self.warm_up()
        p = self.params
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(views[i]) for i in rows], out=offsets[1:])
        buf = np.frombuffer("".join([views[i] for i in rows]).encode("ascii"), dtype=np.uint8)
        sh, sh_off, fp, fp_off = ck.canonical_hits(
            buf, offsets, IS_WORD, IS_SPACE, KEPT_HASHES, p.keep_numbers, p.k, _param_table(p.k), _MULT, self._bits,
            np.uint64(64 - FILTER_BITS), self.hashes, self.fp_hashes, FINGERPRINT_SEEDS, DEF_HASH, ASYNC_HASH)
        rows_arr = np.asarray(rows, dtype=np.int64)
        return np.repeat(rows_arr, np.diff(sh_off)), sh, np.repeat(rows_arr, np.diff(fp_off)), fp

    def _evidence_of(self, n_rows: int, groups: list[tuple[np.ndarray, ...]]) -> Evidence:
        """Evidence from (row, hash) hits, repeats and hashes the index lacks included."""
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)) * 2
        cat = [np.concatenate([g[j] for g in groups] + [empty[j]]) for j in range(4)]
        n_parts = max(1, len(self.parts))
        rows, parts, shared = _held(cat[0], cat[1], self.hashes, self.refs, n_parts)
        f_rows, f_parts, held = _held(cat[2], cat[3], self.fp_hashes, self.fp_refs, n_parts)
        whole = (held == self.part_functions[f_parts]) & (self.part_functions[f_parts] > 0) if held.size else held > 0
        return Evidence(n_rows, rows, parts, shared, f_rows[whole], f_parts[whole])

    def decide(self, ev: Evidence) -> list[Match | None]:
        """The rule (module docstring) on a batch's evidence, under the current parameters."""
        p = self.params
        out: list[Match | None] = [None] * ev.n_rows
        ok = (ev.shared >= p.min_shingles) & (ev.shared >= p.min_fraction * self.part_shingles[ev.parts])
        # per row, the passing part sharing the most shingles (the lowest part number on a tie)
        r, q, n = ev.rows[ok], ev.parts[ok], ev.shared[ok]
        order = np.lexsort((q, -n, r))
        r, q, n = r[order], q[order], n[order]
        firsts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if r.size else r
        for i in firsts.tolist():
            bench, item_id = self.parts[int(q[i])]
            out[int(r[i])] = Match(bench, item_id, int(n[i]), int(n[i]),
                                   f"canonical: {int(n[i])} of {int(self.part_shingles[q[i]])} shingles")
        # whole functions take precedence: the part with the most function tokens
        fine = self._fingerprinted()[ev.whole_parts]
        r, q = ev.whole_rows[fine], ev.whole_parts[fine]
        order = np.lexsort((q, -self.part_function_tokens[q], r))
        r, q = r[order], q[order]
        firsts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if r.size else r
        for i in firsts.tolist():
            best = int(q[i])
            bench, item_id = self.parts[best]
            fns, tokens = int(self.part_functions[best]), int(self.part_function_tokens[best])
            out[int(r[i])] = Match(bench, item_id, tokens, fns, f"canonical: {fns} whole function(s), {tokens} tokens")
        return out

    # ------------------------------------------------------------------------- storage
    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        header = {"params": self.params.__dict__, "parts": self.parts, "meta": self.meta}
        return header, {"c_hashes": self.hashes, "c_refs": self.refs, "c_part_shingles": self.part_shingles,
                        "c_fp_hashes": self.fp_hashes, "c_fp_refs": self.fp_refs,
                        "c_part_functions": self.part_functions, "c_part_function_words": self.part_function_words,
                        "c_part_function_tokens": self.part_function_tokens}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "CanonicalIndex":
        if header["meta"].get("format") != FORMAT_VERSION:
            raise ValueError(f"canonical index format {header['meta'].get('format')} != {FORMAT_VERSION}")
        return cls(CanonicalParams(**header["params"]), [tuple(p) for p in header["parts"]], arrays, header["meta"])

    def to_bytes(self) -> bytes:
        header, arrays = self.to_arrays()
        buf = io.BytesIO()
        np.savez_compressed(buf, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "CanonicalIndex":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls.from_arrays(json.loads(z["header"].tobytes().decode()), {k: z[k] for k in z.files})


def _batches(views: list[str], rows: list[int]) -> list[tuple[int, int]]:
    """Bounds into ``rows`` of consecutive batches of about ``_BATCH_BYTES`` of text (>= 1 row)."""
    out, start, size = [], 0, 0
    for j, i in enumerate(rows):
        size += len(views[i])
        if size >= _BATCH_BYTES:
            out.append((start, j + 1))
            start, size = j + 1, 0
    if start < len(rows):
        out.append((start, len(rows)))
    return out


def _held(rows: np.ndarray, hashes: np.ndarray, index: np.ndarray, refs: np.ndarray,
          n_parts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, part, count): how many distinct hashes of each row each part holds (sorted index
    ``index``, part ``refs`` per entry)."""
    empty = np.empty(0, dtype=np.int64)
    if not hashes.size or not index.size:
        return empty, empty, empty
    order = np.lexsort((hashes, rows))
    rows, hashes = rows[order], hashes[order]
    new = np.r_[True, (rows[1:] != rows[:-1]) | (hashes[1:] != hashes[:-1])]
    rows, hashes = rows[new], hashes[new]
    lo = np.searchsorted(index, hashes, side="left")
    hi = np.searchsorted(index, hashes, side="right")
    pair = np.repeat(rows, hi - lo) * n_parts + refs[_ranges(lo, hi)]
    pair, count = np.unique(pair, return_counts=True)
    return pair // n_parts, pair % n_parts, count


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The positions lo[i] <= j < hi[i], for every i, concatenated."""
    cnt = hi - lo
    return np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)


def _pruned(per_part: list[np.ndarray], item: np.ndarray, max_item_df: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(sorted hashes, their part numbers, hashes pruned): each part's distinct hashes, without
    those found in more than ``max_item_df`` distinct items (an item's parts share hashes)."""
    hashes = np.concatenate(per_part) if per_part else np.empty(0, dtype=np.uint64)
    refs = (np.concatenate([np.full(u.size, i, dtype=np.int32) for i, u in enumerate(per_part)])
            if per_part else np.empty(0, dtype=np.int32))
    if not hashes.size:
        return hashes.astype(np.uint64), refs, 0
    pair = np.unique(np.stack([hashes, item[refs].astype(np.uint64)]), axis=1)
    hs, df = np.unique(pair[0], return_counts=True)
    common = hs[df > max_item_df]
    keep = ~np.isin(hashes, common)
    hashes, refs = hashes[keep], refs[keep]
    order = np.argsort(hashes, kind="stable")
    return hashes[order], refs[order], int(common.size)
