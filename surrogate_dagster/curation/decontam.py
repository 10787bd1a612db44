"""Benchmark decontamination: an n-gram index of benchmark items and a longest-match checker.

Normalization (:func:`normalize`, on items and rows alike): string escapes resolved at any
depth (code inside JSON tool-call arguments), HTML entities decoded, comment and docstring
markers and diff line prefixes dropped; then Unicode NFKC, lowercase, and tokens ``\\w+|[^\\w\\s]``. Whitespace never
becomes a token, so re-indented, re-wrapped and re-cased copies produce the same token stream.
An n-gram (default n=13) is hashed to 64 bits (xxh3 per token, polynomial combination in
numpy, splitmix64 finish); :class:`BenchmarkIndex` stores the sorted hashes with the item each
came from, so a row is checked with one vectorized ``searchsorted`` over its n-grams.

What counts (each rule chosen by its false positives on clean stdlib functions and its recall
on planted items, benchmarks/decontam_bench.py; figures in docs/BENCHMARKS.md):
- Only informative n-grams count towards the rule: at least ``min_alpha_fraction`` (0.5, i.e.
  7 of 13) of their tokens contain a letter. Punctuation-and-number runs (``[1, 2, 3, 4, 5,
  6, 7]``, ``-1, -1, -1``, ``* * * *``) occur in clean code and name no item. They
  are still indexed (flagged), so they extend the longest matched run once a row matches.
  An n-gram that holds a compound identifier (``similar_elements``; not a dunder) is
  informative regardless: benchmark tests are number-heavy lines that name their function.
- Boilerplate pruning: an n-gram found in more than ``max_item_df`` (10) distinct items
  (LeetCode constraint lines, HumanEval's METADATA header) identifies no item; it is dropped.
- Items shorter than n tokens but at least ``min_item_tokens`` (10) long are indexed whole, as
  one n-gram of their own length, so such a row must contain the entire item. 24% of BFCL
  questions are under 13 tokens; those under 10 ("What is my first name?") are too generic to
  match on. They, and items without a single informative n-gram (HumanEval's ``strlen`` and
  ``fib``: too generic to tell from ordinary code), are counted in ``meta["unmatchable"]``.

Minimum-match rule: a row matches an item when it contains at least
``max(1, min(min_matches, item_ngrams))`` distinct informative n-grams of that item
(``min_matches`` = 4: a contiguous overlap of at least n+3 = 16 tokens, or several separate
13-token overlaps). The ``min(...)`` keeps short items detectable. Requiring several
informative n-grams rather than one shared 13-gram (datatrove's NGramsDecontFilter rule, the
benchmark's baseline) removes most false positives on clean code for a small loss of recall on
half-planted items (the rates for 1, 3 and 4 matches: docs/BENCHMARKS.md).

Batches: :meth:`Decontaminator.check_many` first screens every row for any indexed n-gram
(of any indexed length), then runs :meth:`Decontaminator.check_exact` on the rows with a hit
only; the others get None from the exact index (as ``check_exact`` would). Rows still unmatched
go to the canonical index as one batch (:meth:`.CanonicalIndex.check_many`), their display
wrappers stripped in the pass that normalizes them
(:func:`.decontam_views.normalized_and_stripped`), so results equal ``[check(t) for t in texts]``.
The screen tests n-gram hashes against a bit filter of the index (a 2^25-bit table over the
hashes' top bits, 4 MiB: small enough to stay mostly in cache; ~1.4% false positives at 470k
hashes) and confirms the rest by binary search. With numba installed (the kernels of
:mod:`.minhash_kernels`) one compiled pass per row does it all, stopping at the first hit:
ASCII rows are lower-cased and tokenized in the kernel (NFKC leaves ASCII unchanged; the
character classes come from Python's ``re``), other rows are tokenized by :func:`tokenize`
and handed over newline-joined; tokens are hashed with a compiled XXH3 (the same values as
``xxhash``). Without numba, batches of rows are hashed with numpy, one pass per token position
over the batch. ``workers > 1`` splits the rows over that many threads (the compiled screen
releases the GIL), or over forked processes without numba (:mod:`.parallel`).
benchmarks/curation_chain.py times the step (its decontaminate stage).

Scoring: among the items that pass the rule, the reported one has the longest contiguous run
of matched tokens (``longest_match_tokens`` = consecutive matched n-gram positions + n - 1),
ties broken by the number of matched n-grams. The drop reason is ``decontam_<benchmark>``.
"""

from __future__ import annotations

import io
import json
import math
import re
import unicodedata
from typing import Any, Iterable, Sequence

import numpy as np
import xxhash

from . import minhash_numpy as mnp
from .decontam_canonical import CanonicalIndex
from .decontam_views import normalized_and_stripped
from .decontam_text import (FILTER_BITS, BenchmarkItem, Match, _mix, bit_filter, drop_markers, in_filter,
                            resolve_escapes, unescape_entities)
from .parallel import DEFAULT_CHUNK_ROWS, chunk_bounds, map_chunks, thread_map

_TOKEN = re.compile(r"\w+|[^\w\s]")
_ALPHA = re.compile(r"[^\W\d_]")  # a letter in any script
# An identifier (6+ characters) joining words with underscores (``is_not_prime``, ``find_volume``), dunders
# excepted: specific enough that an n-gram holding one is informative whatever else it holds.
_COMPOUND = re.compile(r"(?=\w{6})(?!__)[^\W\d_]+(?:_[^\W_]+)+(?<!__)")
_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (golden ratio) for the combine
FORMAT_VERSION = 3  # 2: items and rows normalized before tokenizing; 3: optional canonical index inside
_BATCH_TOKENS = 1 << 17  # tokens per batch in check_many: ~1 MiB per uint64 array


def tokenize(text: str) -> list[str]:
    """NFKC, lowercase, word/punctuation tokens (whitespace and case never matter)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def normalize(text: str) -> str:
    """Text as decontamination compares it: escapes resolved, markup and comment markers gone.

    JSON/Python string escapes (``\\n``, ``\\t``, ``\\"``, ``\\\\``, ``\\uXXXX``, at any escaping
    depth) become the characters they stand for (other whitespace escapes become spaces), HTML
    entities are decoded, and comment markers (``#``, triple quotes, ``//``, ``/* */``) and a
    leading diff ``+``/``-`` are dropped. Applied to benchmark items and checked rows alike, so
    the same content matches whichever of these forms either side is in.
    """
    return drop_markers(unescape_entities(resolve_escapes(text)))


def normalized_tokens(text: str) -> list[str]:
    """:func:`tokenize` of :func:`normalize`: the tokens the index and the checker compare."""
    return tokenize(normalize(text))


def token_hashes(tokens: list[str]) -> np.ndarray:
    """xxh3-64 of each token (uint64)."""
    return np.fromiter(map(xxhash.xxh3_64_intdigest, tokens), dtype=np.uint64, count=len(tokens))


def combine(th: np.ndarray, n: int) -> np.ndarray:
    """Hashes of the ``len(th) - n + 1`` n-grams of token hashes ``th``, in order."""
    return combine_lengths(th, (n,))[0]


def combine_lengths(th: np.ndarray, lengths: Iterable[int]) -> list[np.ndarray]:
    """:func:`combine` for several n at once, in the order given.

    The polynomial hash of an (L+1)-gram extends the L-gram's (h * M + next token), so one
    pass per token position up to the longest length yields every length on the way.
    """
    wanted = list(lengths)
    out: dict[int, np.ndarray] = {}
    top = max(wanted, default=0)
    h = np.zeros(max(0, th.size), dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrap-around mod 2^64 is the point
        for j in range(top):
            m = th.size - j
            if m <= 0:
                break
            h = h[:m] * _MULT + th[j:j + m]
            if j + 1 in wanted:
                out[j + 1] = _mix(h)
    return [out.get(n, np.empty(0, dtype=np.uint64)) for n in wanted]


def ngram_hashes(tokens: list[str], n: int) -> np.ndarray:
    """64-bit hashes of the token n-grams of ``tokens``, in order (uint64)."""
    return combine(token_hashes(tokens), n)


def _informative(tokens: list[str], n: int, min_alpha_fraction: float) -> np.ndarray:
    """Mask over n-gram positions: True where enough of the n tokens contain a letter, or where
    the n-gram holds a compound identifier (see :data:`_COMPOUND`): a test line such as
    ``assert similar_elements((3, 4, 5, 6), (5, 7, 4, 10)) == ...`` is mostly numbers but names
    its item."""
    alpha = np.fromiter((bool(_ALPHA.search(t)) for t in tokens), dtype=np.int32, count=len(tokens))
    compound = np.fromiter((bool(_COMPOUND.fullmatch(t)) for t in tokens), dtype=np.int32, count=len(tokens))
    csum = np.concatenate([[0], np.cumsum(alpha)])
    ccum = np.concatenate([[0], np.cumsum(compound)])
    return ((csum[n:] - csum[:-n]) >= math.ceil(min_alpha_fraction * n)) | ((ccum[n:] - ccum[:-n]) > 0)


class BenchmarkIndex:
    """Sorted n-gram hashes of benchmark items, each with the item it came from."""

    def __init__(self, n: int, items: list[tuple[str, str]], item_ngrams: np.ndarray, hashes: np.ndarray,
                 refs: np.ndarray, informative: np.ndarray, meta: dict[str, Any]) -> None:
        self.n = n
        self.items = items  # (benchmark, item_id), position = item number in ``refs``
        self.item_ngrams = item_ngrams  # informative n-grams per item (the rule's cap)
        self.hashes = hashes  # sorted uint64
        self.refs = refs  # int32 item number of each hash
        self.informative = informative  # bool: does this n-gram count towards the rule
        self.meta = meta
        self.short_lengths: list[int] = list(meta.get("short_lengths", []))
        self._bits: np.ndarray | None = None
        # the second index, over canonicalized code (.decontam_canonical), when one was built
        self.canonical: CanonicalIndex | None = None

    def may_contain(self, q: np.ndarray) -> np.ndarray:
        """Bool mask over hashes ``q``: False means surely not indexed (a 2^25-bit filter on the
        top 25 bits, 4 MiB, built on first use; ~1.4% false positives at 470k hashes)."""
        if self._bits is None:
            self._bits = bit_filter(self.hashes)
        return in_filter(self._bits, q)

    def contains(self, q: np.ndarray) -> np.ndarray:
        """Bool mask over hashes ``q``: True where the hash is in the index."""
        found = self.may_contain(q)
        cand = q[found]
        if cand.size and self.hashes.size:
            lo = np.searchsorted(self.hashes, cand)
            found[found] = self.hashes[np.minimum(lo, self.hashes.size - 1)] == cand
        else:
            found[:] = False
        return found

    @classmethod
    def build(cls, items: Iterable[BenchmarkItem], n: int = 13, max_item_df: int = 10,
              min_item_tokens: int = 10, min_alpha_fraction: float = 0.5,
              sources: dict | None = None) -> "BenchmarkIndex":
        """Index ``items``; entries sharing (benchmark, item_id) are merged into one item.

        Args:
            n: n-gram length in tokens.
            max_item_df: n-grams found in more distinct items than this are pruned.
            min_item_tokens: items with fewer than n tokens but at least this many are indexed
                whole; shorter ones are counted in ``meta["unmatchable"]``.
            min_alpha_fraction: an n-gram counts towards the rule only if this share of its
                tokens contains a letter.
            sources: the loader manifest (which benchmarks/files were present), kept in ``meta``.
        """
        if n < 1 or min_item_tokens < 1:
            raise ValueError(f"n and min_item_tokens must be >= 1, got {n}, {min_item_tokens}")
        keys: dict[tuple[str, str], int] = {}
        texts: list[list[str]] = []
        for it in items:
            k = keys.setdefault((it.benchmark, it.item_id), len(keys))
            if k == len(texts):
                texts.append([])
            texts[k].append(it.text)
        uniq: list[np.ndarray] = []
        flags: list[np.ndarray] = []
        unmatchable: dict[str, int] = {}
        short_lengths: set[int] = set()
        for (bench, item_id), parts in zip(keys, texts):
            grams, infos = [], []
            for text in parts:
                toks = normalized_tokens(text)
                if len(toks) >= n:
                    grams.append(ngram_hashes(toks, n))
                    infos.append(_informative(toks, n, min_alpha_fraction))
                elif len(toks) >= min_item_tokens and _informative(toks, len(toks), min_alpha_fraction).all():
                    grams.append(ngram_hashes(toks, len(toks)))
                    infos.append(np.ones(1, dtype=bool))
                    short_lengths.add(len(toks))
            if grams:  # informative-ness is a function of the n-gram, so duplicates agree
                u, first = np.unique(np.concatenate(grams), return_index=True)
                f = np.concatenate(infos)[first]
            else:
                u, f = np.empty(0, dtype=np.uint64), np.empty(0, dtype=bool)
            if not f.any():  # keyed "<benchmark>" or, for an item's sub-item "<id>#<kind>", "<benchmark>#<kind>"
                key = bench + ("#" + item_id.partition("#")[2] if "#" in item_id else "")
                unmatchable[key] = unmatchable.get(key, 0) + 1
            uniq.append(u)
            flags.append(f)
        hashes = np.concatenate(uniq) if uniq else np.empty(0, dtype=np.uint64)
        informative = np.concatenate(flags) if flags else np.empty(0, dtype=bool)
        refs = (np.concatenate([np.full(u.size, i, dtype=np.int32) for i, u in enumerate(uniq)])
                if uniq else np.empty(0, dtype=np.int32))
        order = np.argsort(hashes, kind="stable")
        hashes, refs, informative = hashes[order], refs[order], informative[order]
        # each item contributes a hash at most once, so a hash's run length is its item count
        _, counts = np.unique(hashes, return_counts=True)
        common = np.repeat(counts > max_item_df, counts)
        hashes, refs, informative = hashes[~common], refs[~common], informative[~common]
        meta = {"format": FORMAT_VERSION, "n": n, "max_item_df": max_item_df,
                "min_item_tokens": min_item_tokens, "min_alpha_fraction": min_alpha_fraction,
                "short_lengths": sorted(short_lengths), "sources": sources or {},
                "items_per_benchmark": _count_by_benchmark(keys), "unmatchable": unmatchable,
                "pruned_common_ngrams": int((counts > max_item_df).sum()),
                "indexed_ngrams": int(hashes.size), "informative_ngrams": int(informative.sum())}
        item_ngrams = np.bincount(refs[informative], minlength=len(keys)).astype(np.int32)
        return cls(n, list(keys), item_ngrams, hashes, refs, informative, meta)

    def to_bytes(self) -> bytes:
        """Serialize as an ``.npz`` (no pickle): arrays plus JSON for items and meta."""
        buf = io.BytesIO()
        extra: dict[str, Any] = {}
        canonical_header = None
        if self.canonical is not None:
            canonical_header, extra = self.canonical.to_arrays()
        header = json.dumps({"n": self.n, "items": self.items, "meta": self.meta,
                             "canonical": canonical_header}).encode("utf-8")
        np.savez_compressed(buf, header=np.frombuffer(header, dtype=np.uint8), hashes=self.hashes,
                            refs=self.refs, informative=self.informative, item_ngrams=self.item_ngrams, **extra)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "BenchmarkIndex":
        """Inverse of :meth:`to_bytes`."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes().decode("utf-8"))
            if header["meta"].get("format") != FORMAT_VERSION:
                raise ValueError(f"benchmark index format {header['meta'].get('format')} != {FORMAT_VERSION}")
            index = cls(header["n"], [tuple(i) for i in header["items"]], z["item_ngrams"], z["hashes"],
                        z["refs"], z["informative"], header["meta"])
            if header.get("canonical") is not None:
                index.canonical = CanonicalIndex.from_arrays(header["canonical"], {k: z[k] for k in z.files})
            return index


def _count_by_benchmark(keys: Iterable[tuple[str, str]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for bench, _ in keys:
        out[bench] = out.get(bench, 0) + 1
    return out


class Decontaminator:
    """Checks texts against a :class:`BenchmarkIndex` with the minimum-match rule above, then,
    for a text the exact index does not match, against the canonical index (the one given, else
    the one stored in ``index``; :mod:`.decontam_canonical`)."""

    def __init__(self, index: BenchmarkIndex, min_matches: int = 4, canonical: CanonicalIndex | None = None) -> None:
        if min_matches < 1:
            raise ValueError(f"min_matches must be >= 1, got {min_matches}")
        self.index = index
        self.min_matches = min_matches
        self.canonical = canonical if canonical is not None else index.canonical

    def check(self, text: str) -> Match | None:
        """The best-matching benchmark item, or None when no item passes either rule."""
        m = self.check_exact(text)
        if m is None and self.canonical is not None:
            m = self.canonical.check(text)
        return m

    def check_exact(self, text: str) -> Match | None:
        """The best-matching item of the exact n-gram index alone."""
        idx = self.index
        tokens = normalized_tokens(text)
        if not tokens or idx.hashes.size == 0:
            return None
        th = token_hashes(tokens)
        # query n-grams of every indexed length: n, plus the lengths of items indexed whole
        lengths = (idx.n, *idx.short_lengths)
        grams = [(length, h) for length, h in zip(lengths, combine_lengths(th, lengths)) if h.size]
        if not grams:
            return None
        q = np.concatenate([h for _, h in grams])
        q_len = np.concatenate([np.full(h.size, length, dtype=np.int64) for length, h in grams])
        q_pos = np.concatenate([np.arange(h.size, dtype=np.int64) for _, h in grams])
        order = np.argsort(q, kind="stable")  # sorted needles make searchsorted cache-friendly
        q, q_len, q_pos = q[order], q_len[order], q_pos[order]
        lo = np.searchsorted(idx.hashes, q, side="left")
        hit = idx.hashes[np.minimum(lo, idx.hashes.size - 1)] == q
        if not hit.any():
            return None
        q, q_len, q_pos, lo = q[hit], q_len[hit], q_pos[hit], lo[hit]
        cnt = np.searchsorted(idx.hashes, q, side="right") - lo
        # one entry per (query n-gram, item holding it)
        j = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
        item, info = idx.refs[j].astype(np.int64), idx.informative[j]
        pos, length, h = np.repeat(q_pos, cnt), np.repeat(q_len, cnt), np.repeat(q, cnt)

        # distinct informative n-grams per item (a repeated n-gram in the row counts once)
        ii, hh = item[info], h[info]
        o = np.lexsort((hh, ii))
        ii, hh = ii[o], hh[o]
        first = np.ones(ii.size, dtype=bool)
        first[1:] = (ii[1:] != ii[:-1]) | (hh[1:] != hh[:-1])
        distinct = np.bincount(ii[first], minlength=len(idx.items))
        need = np.maximum(1, np.minimum(self.min_matches, idx.item_ngrams))
        passing = distinct >= need
        keep = passing[item]
        if not keep.any():
            return None

        # longest run of consecutive matched positions per passing item
        item, pos, length = item[keep], pos[keep], length[keep]
        o = np.lexsort((pos, item))
        item, pos, length = item[o], pos[o], length[o]
        new_run = np.ones(item.size, dtype=bool)
        new_run[1:] = (item[1:] != item[:-1]) | (pos[1:] != pos[:-1] + 1)
        run_id = np.cumsum(new_run) - 1
        run_tokens = np.bincount(run_id) + length[new_run] - 1
        run_item, run_start = item[new_run], pos[new_run]
        # best run: longest, then most distinct n-grams, then lowest item number
        best = np.lexsort((run_item, -distinct[run_item], -run_tokens))[0]
        k = int(run_item[best])
        bench, item_id = idx.items[k]
        longest, start = int(run_tokens[best]), int(run_start[best])
        return Match(bench, item_id, longest, int(distinct[k]), " ".join(tokens[start:start + longest])[:300])

    def check_many(self, texts: Sequence[str], workers: int = 1,
                   chunk_size: int = DEFAULT_CHUNK_ROWS) -> list[Match | None]:
        """``[self.check(t) for t in texts]``, screened in batches (see the module docstring);
        ``workers > 1``: that many threads (numba) or forked processes over ``chunk_size``-row chunks."""
        self.index.may_contain(np.empty(0, dtype=np.uint64))  # build the filter once, before forking
        mnp.warm_up()  # and load the compiled kernels once (if numba is installed)
        if self.canonical is not None:
            self.canonical.warm_up()
        if workers > 1 and mnp.kernels() is not None:
            # The compiled screen releases the GIL, so threads share the work with no fork: on a
            # 4.5k-row partition a forked pool cost more CPU than the whole screen does.
            parts = thread_map(lambda b: self._screen(texts[b[0]:b[1]]), chunk_bounds(len(texts), chunk_size),
                               workers)
        else:
            parts = map_chunks(_check_chunk, self, texts, workers, chunk_size)
        return [m for part in parts for m in part]

    def _screen(self, texts: Sequence[str]) -> list[Match | None]:
        idx = self.index
        out: list[Match | None] = [None] * len(texts)
        # one pass gives both indexes their text: without a display wrapper the canonical index's
        # stripped text is the normalized one (.decontam_views)
        pairs = [normalized_and_stripped(t) for t in texts] if self.canonical is not None else None
        normalized = [p[0] for p in pairs] if pairs is not None else [normalize(t) for t in texts]
        if idx.hashes.size:
            lengths = sorted({idx.n, *idx.short_lengths})
            k = mnp.kernels()
            hit_docs = (self._hits_compiled(k, normalized, lengths) if k is not None
                        else self._hits_numpy(normalized, lengths))
            for i in hit_docs:
                out[i] = self.check_exact(texts[i])
        if pairs is not None and self.canonical is not None:
            rest = [i for i, m in enumerate(out) if m is None]
            found = self.canonical.check_many([texts[i] for i in rest], [pairs[i][1] for i in rest])
            for i, m in zip(rest, found):
                out[i] = m
        return out

    def _hits_compiled(self, k: Any, texts: Sequence[str], lengths: list[int]) -> list[int]:
        """Rows (already :func:`normalize` d) with at least one indexed n-gram, one compiled pass
        per row: tokens (ASCII rows tokenized in the kernel too; others by :func:`tokenize`, joined
        by newlines), their xxh3 hashes, the n-gram hashes, the bit filter and a binary search,
        stopping at the first hit."""
        idx = self.index
        idx.may_contain(np.empty(0, dtype=np.uint64))  # build the bit filter
        wanted = np.zeros(max(lengths) + 1, dtype=np.bool_)
        wanted[lengths] = True
        shift = np.uint64(64 - FILTER_BITS)
        ascii_rows = [i for i, text in enumerate(texts) if text.isascii()]
        hits = set()
        if ascii_rows:  # one call for the batch's ASCII texts, concatenated
            offsets = np.zeros(len(ascii_rows) + 1, dtype=np.int64)
            np.cumsum(np.fromiter((len(texts[i]) for i in ascii_rows), dtype=np.int64, count=len(ascii_rows)),
                      out=offsets[1:])
            buf = np.frombuffer("".join([texts[i] for i in ascii_rows]).encode("ascii"), dtype=np.uint8)
            found = k.ascii_screen(buf, offsets, k.IS_WORD, k.IS_SPACE, wanted, _MULT, idx._bits, shift, idx.hashes)
            hits.update(np.asarray(ascii_rows)[found].tolist())
        if len(ascii_rows) < len(texts):
            done = set(ascii_rows)
            for i, text in enumerate(texts):
                if i in done:
                    continue
                joined = "\n".join(tokenize(text)).encode("utf-8")
                th = k.joined_token_hashes(np.frombuffer(joined, dtype=np.uint8))
                if k.any_indexed(th, wanted, _MULT, idx._bits, shift, idx.hashes):
                    hits.add(i)
        return sorted(hits)

    def _hits_numpy(self, texts: Sequence[str], lengths: list[int]) -> list[int]:
        """Rows (already :func:`normalize` d) with at least one indexed n-gram, in batches of
        ~_BATCH_TOKENS tokens (numpy)."""
        idx = self.index
        hit_docs: set[int] = set()
        start = 0
        while start < len(texts):
            # one batch: consecutive texts up to ~_BATCH_TOKENS tokens (at least one text)
            th_parts, doc_of, total, end = [], [], 0, start
            while end < len(texts) and (end == start or total < _BATCH_TOKENS):
                th = token_hashes(tokenize(texts[end]))
                th_parts.append(th)
                doc_of.append(np.full(th.size, end, dtype=np.int64))
                total += th.size
                end += 1
            th, doc = np.concatenate(th_parts), np.concatenate(doc_of)
            for length, h in zip(lengths, combine_lengths(th, lengths)):
                if not h.size:
                    continue
                # an n-gram counts only if its first and last tokens belong to the same row
                within = doc[:h.size] == doc[length - 1:]
                hits = idx.contains(h) & within
                hit_docs.update(np.unique(doc[:h.size][hits]).tolist())
            start = end
        return sorted(hit_docs)

    def __call__(self, text: str) -> str | None:
        """Curation-block form: None to keep, ``"decontam_<benchmark>"`` to drop."""
        m = self.check(text)
        return m.reason if m else None


def _check_chunk(dec: Decontaminator, texts: Sequence[str], start: int, end: int) -> list[Match | None]:
    """Matches for texts[start:end] (a map_chunks worker)."""
    return dec._screen(texts[start:end])
