"""The compiled row pass of the canonical decontamination index (numba; imported only when the
kernels of :mod:`.minhash_kernels` load).

:func:`canonical_hits` does for a batch of ASCII :func:`.decontam_views.strip_views` texts what
:func:`.canonical_code.canonical_stream`, :func:`.canonical_code.shingle_hashes` and
:func:`.canonical_code.function_fingerprints` do for one text, and keeps only the hashes the
index holds: per row, one pass lower-cases and tokenizes the bytes (the character classes of
Python's ``re``), hashes the tokens with the compiled XXH3, classifies them (kept words by
binary search in the sorted hashes of the kept vocabulary), finds each placeholder's previous
occurrence, then hashes every shingle (tested against the index's bit filter, then by binary
search) and every function span (binary search in the fingerprints). Equality with the numpy
path is tested in tests/unit/curation/test_decontam_canonical_kernels.py.
"""

from __future__ import annotations

import numpy as np

from .minhash_kernels import _hash_tokens, _jit, _token_bounds

_SPLITMIX1 = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX2 = np.uint64(0x94D049BB133111EB)
_ZERO = np.uint64(0)


@_jit
def _mix(h: np.uint64) -> np.uint64:  # decontam_text._mix, one value
    h = h ^ (h >> np.uint64(30))
    h = h * _SPLITMIX1
    h = h ^ (h >> np.uint64(27))
    h = h * _SPLITMIX2
    return h ^ (h >> np.uint64(31))


@_jit
def _holds(sorted_hashes: np.ndarray, h: np.uint64) -> bool:
    k = np.searchsorted(sorted_hashes, h)
    return k < sorted_hashes.size and sorted_hashes[k] == h


@_jit
def _stream(raw: np.ndarray, is_word: np.ndarray, is_space: np.ndarray, kept: np.ndarray, keep_numbers: bool):
    """Token hashes, kinds, line flags (first, indent, closer) and previous occurrences."""
    size = raw.size
    low = np.empty(size, dtype=np.uint8)
    for i in range(size):
        c = raw[i]
        if 65 <= c <= 90:
            c += 32
        elif c == 34:  # '"' -> "'"
            c = 39
        elif c == 40 or c == 41 or c == 59:  # parentheses and semicolons are not tokens
            c = 32
        low[i] = c
    starts, ends, t = _token_bounds(low, size, is_word, is_space)
    th = _hash_tokens(low, starts, ends, t)
    kinds = np.zeros(t, dtype=np.int8)
    first = np.zeros(t, dtype=np.bool_)
    indent = np.zeros(t, dtype=np.int64)
    closer = np.zeros(t, dtype=np.bool_)
    line_start, p, new_line, ind, clo = 0, 0, True, 0, False
    for q in range(t):
        c = low[starts[q]]
        if is_word[c]:
            if 48 <= c <= 57:
                kinds[q] = 0 if keep_numbers else 2
            elif not _holds(kept, th[q]):
                kinds[q] = 1
        while p < starts[q]:
            if raw[p] == 10:
                line_start = p + 1
                new_line = True
            p += 1
        if new_line:
            j = line_start
            while j < size and (raw[j] == 32 or raw[j] == 9):
                j += 1
            ind = j - line_start
            clo = j < size and (raw[j] == 41 or raw[j] == 93 or raw[j] == 125)
            first[q] = True
            new_line = False
        indent[q] = ind
        closer[q] = clo
        p = ends[q]
    prev = np.full(t, -1, dtype=np.int64)
    if t > 1:
        order = np.argsort(th[:t], kind="mergesort")
        for r in range(1, t):
            if th[order[r]] == th[order[r - 1]]:
                prev[order[r]] = order[r - 1]
    return th, kinds, first, indent, closer, prev, t


@_jit
def canonical_hits(buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, is_space: np.ndarray,
                   kept: np.ndarray, keep_numbers: bool, k: int, table: np.ndarray, mult: np.uint64,
                   bits: np.ndarray, shift: np.uint64, hashes: np.ndarray, fp_hashes: np.ndarray,
                   seeds: np.ndarray, def_hash: np.uint64, async_hash: np.uint64):
    """For each ASCII text ``buf[offsets[d]:offsets[d + 1]]``: the shingle hashes the index
    holds (``hashes``, screened by the bit filter ``bits``) and the function fingerprints it
    holds (``fp_hashes``), as (shingles, shingle offsets, fingerprints, fingerprint offsets);
    repeats are kept."""
    n_rows = offsets.size - 1
    sh = np.empty(buf.size + 1, dtype=np.uint64)  # at most one hit per token
    fp = np.empty(buf.size + 1, dtype=np.uint64)
    sh_off = np.zeros(n_rows + 1, dtype=np.int64)
    fp_off = np.zeros(n_rows + 1, dtype=np.int64)
    ns, nf = 0, 0
    for d in range(n_rows):
        th, kinds, first, indent, closer, prev, t = _stream(buf[offsets[d]:offsets[d + 1]], is_word, is_space,
                                                            kept, keep_numbers)
        if hashes.size:
            for s in range(t - k + 1):
                h = _ZERO
                for j in range(k):
                    i = s + j
                    kd = kinds[i]
                    if kd == 0:
                        v = th[i]
                    else:
                        back = i - prev[i] if prev[i] >= 0 and i - prev[i] <= j else 0
                        v = table[kd - 1, back]
                    h = h * mult + v
                m = _mix(h)
                slot = m >> shift
                if (bits[slot >> np.uint64(3)] >> (slot & np.uint64(7))) & np.uint8(1) and _holds(hashes, m):
                    sh[ns] = m
                    ns += 1
        if fp_hashes.size:
            for q in range(t):
                if not first[q]:
                    continue
                if th[q] == def_hash:
                    start = q
                elif th[q] == async_hash and q + 1 < t and th[q + 1] == def_hash and not first[q + 1]:
                    start = q + 1
                else:
                    continue
                end = start + 1
                while end < t and not (first[end] and indent[end] <= indent[q] and not closer[end]):
                    end += 1
                h = _ZERO
                for i in range(start, end):
                    kd = kinds[i]
                    if kd == 0:
                        v = th[i]
                    else:
                        back = np.uint64(i - prev[i]) if prev[i] >= start else _ZERO
                        v = _mix(seeds[kd - 1] + back)
                    h = h * mult + v
                m = _mix(h)
                if _holds(fp_hashes, m):
                    fp[nf] = m
                    nf += 1
        sh_off[d + 1] = ns
        fp_off[d + 1] = nf
    return sh[:ns], sh_off, fp[:nf], fp_off


def warm_up() -> None:
    """Compile (or load from the cache) :func:`canonical_hits` with the argument types callers pass."""
    from .minhash_kernels import IS_SPACE, IS_WORD

    text = np.frombuffer(b"def f(a):\n    return a", dtype=np.uint8)
    one = np.ones(1, dtype=np.uint64)
    canonical_hits(text, np.array([0, text.size]), IS_WORD, IS_SPACE, one, True, 2, np.ones((2, 2), dtype=np.uint64),
                   np.uint64(3), np.zeros(1, dtype=np.uint8), np.uint64(63), one, one, one, np.uint64(1), np.uint64(2))
