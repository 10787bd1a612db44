"""numba-compiled MinHash kernels (imported only when numba is installed; see minhash_numpy).

- :func:`minhash_loops`: the signature, ``min((s * a + b) mod 2^64 mod p)``, in one pass;
- :func:`ascii_shingles`: datatrove's shingles of an ASCII text without a Python string per
  token: lower-case, numbers -> "0" (``\\p{Nd}+([.,]\\p{Nd}+)?``; on ASCII the other separators
  of datatrove's pattern cannot occur), tokens ``\\w+|[^\\w\\s]`` (character classes passed in,
  derived from Python's ``re`` so they agree by construction), n-grams joined by one space,
  hashed with :func:`xxh64` (seed 0, the XXH64 specification; the same values as
  ``xxhash.xxh64_intdigest``).

Every function is plain Python compiled with ``numba.njit(cache=True)``: the compiled code is
cached next to this module, so a process pays the compile once per machine. Equality with the
pure-Python paths is tested in tests/test_dedup.py.
"""

from __future__ import annotations

import re

import numba
import numpy as np

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)
_MERSENNE = np.uint64(0x1FFFFFFFFFFFFFFF)
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZERO = np.uint64(0)
_S61 = np.uint64(61)

# ASCII character classes of Python's re for str patterns (\s includes \x1c-\x1f)
IS_WORD = np.array([re.fullmatch(r"\w", chr(i)) is not None for i in range(128)], dtype=np.bool_)
IS_SPACE = np.array([re.fullmatch(r"\s", chr(i)) is not None for i in range(128)], dtype=np.bool_)

_jit = numba.njit(cache=True, nogil=True)


@_jit
def minhash_loops(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per hash function j: min over shingles s of ((s * a[j] + b[j]) mod 2^64) mod (2^61 - 1)."""
    best = np.full(a.size, _ALL_ONES)
    for i in range(shingles.size):
        s = shingles[i]
        for j in range(a.size):
            x = s * a[j] + b[j]  # uint64: wraps mod 2^64, as numpy does
            r = (x & _MERSENNE) + (x >> _S61)  # 2^61 = 1 (mod p): r = x (mod p), r <= p + 7
            if r >= _MERSENNE:
                r -= _MERSENNE
            if r < best[j]:
                best[j] = r
    return best


@_jit
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@_jit
def _read64(buf: np.ndarray, i: int) -> np.uint64:
    v = _ZERO
    for k in range(8):
        v |= np.uint64(buf[i + k]) << np.uint64(8 * k)
    return v


@_jit
def _read32(buf: np.ndarray, i: int) -> np.uint64:
    v = _ZERO
    for k in range(4):
        v |= np.uint64(buf[i + k]) << np.uint64(8 * k)
    return v


@_jit
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


@_jit
def _merge(acc: np.uint64, v: np.uint64) -> np.uint64:
    acc = acc ^ _round(_ZERO, v)
    return acc * _P1 + _P4


@_jit
def xxh64(buf: np.ndarray, start: int, end: int) -> np.uint64:
    """XXH64 (seed 0) of ``buf[start:end]`` (uint8)."""
    length = end - start
    i = start
    if length >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = _ZERO
        v4 = _ZERO - _P1
        limit = end - 32
        while i <= limit:
            v1 = _round(v1, _read64(buf, i))
            v2 = _round(v2, _read64(buf, i + 8))
            v3 = _round(v3, _read64(buf, i + 16))
            v4 = _round(v4, _read64(buf, i + 24))
            i += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = _P5
    h = h + np.uint64(length)
    while i + 8 <= end:
        h = h ^ _round(_ZERO, _read64(buf, i))
        h = _rotl(h, 27) * _P1 + _P4
        i += 8
    if i + 4 <= end:
        h = h ^ (_read32(buf, i) * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        i += 4
    while i < end:
        h = h ^ (np.uint64(buf[i]) * _P5)
        h = _rotl(h, 11) * _P1
        i += 1
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


@_jit
def _is_digit(c: int) -> bool:
    return 48 <= c <= 57


@_jit
def ascii_shingles(raw: np.ndarray, n: int, is_word: np.ndarray, is_space: np.ndarray) -> np.ndarray:
    """xxh64 of each n-gram of datatrove's normalized tokens of an ASCII text (``raw``: uint8)."""
    size = raw.size
    # 1. lower-case, and every number (digits, optionally "." or "," and more digits) -> "0"
    buf = np.empty(size, dtype=np.uint8)
    k = 0
    i = 0
    while i < size:
        c = raw[i]
        if _is_digit(c):
            j = i + 1
            while j < size and _is_digit(raw[j]):
                j += 1
            if j + 1 < size and (raw[j] == 46 or raw[j] == 44) and _is_digit(raw[j + 1]):
                j += 2
                while j < size and _is_digit(raw[j]):
                    j += 1
            buf[k] = 48
            i = j
        else:
            buf[k] = c + 32 if 65 <= c <= 90 else c
            i += 1
        k += 1
    # 2. tokens: runs of word characters, or one character that is neither word nor space
    starts = np.empty(k, dtype=np.int64)
    ends = np.empty(k, dtype=np.int64)
    t = 0
    i = 0
    while i < k:
        c = buf[i]
        if is_word[c]:
            j = i + 1
            while j < k and is_word[buf[j]]:
                j += 1
            starts[t] = i
            ends[t] = j
            t += 1
            i = j
        elif is_space[c]:
            i += 1
        else:
            starts[t] = i
            ends[t] = i + 1
            t += 1
            i += 1
    m = t - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    # 3. the tokens joined by single spaces, so each n-gram is one contiguous slice
    total = t - 1
    for q in range(t):
        total += ends[q] - starts[q]
    spaced = np.empty(total, dtype=np.uint8)
    at = np.empty(t, dtype=np.int64)
    pos = 0
    for q in range(t):
        if q:
            spaced[pos] = 32
            pos += 1
        at[q] = pos
        for r in range(starts[q], ends[q]):
            spaced[pos] = buf[r]
            pos += 1
    out = np.empty(m, dtype=np.uint64)
    for q in range(m):
        last = q + n - 1
        out[q] = xxh64(spaced, at[q], at[last] + ends[last] - starts[last])
    return out
