"""numba-compiled MinHash kernels (imported only when numba is installed; see minhash_numpy).

- :func:`minhash_loops`: the signature, ``min((s * a + b) mod 2^64 mod p)``, in one pass
  (:func:`ascii_signatures`: shingles and signatures of a batch of ASCII texts in one call);
- :func:`ascii_shingles`: datatrove's shingles of an ASCII text without a Python string per
  token: lower-case, numbers -> "0" (``\\p{Nd}+([.,]\\p{Nd}+)?``; on ASCII the other separators
  of datatrove's pattern cannot occur), tokens ``\\w+|[^\\w\\s]`` (character classes passed in,
  derived from Python's ``re`` so they agree by construction), n-grams joined by one space,
  hashed with :func:`xxh64` (seed 0, the XXH64 specification; the same values as
  ``xxhash.xxh64_intdigest``);
- :func:`xxh3_64`: XXH3-64 (seed 0, default secret; the values of ``xxhash.xxh3_64_intdigest``),
  all input sizes;
- :func:`ascii_token_hashes` / :func:`joined_token_hashes`: decontamination's token hashes
  (``decontam.token_hashes(decontam.tokenize(text))``) of an ASCII text, or of tokens a caller
  joined with ``"\\n"`` (which no token contains); :func:`any_indexed`: whether any n-gram of
  given lengths is in a :class:`decontam.BenchmarkIndex` (its bit filter, then binary search).

Every function is plain Python compiled with ``numba.njit(cache=True)``: the compiled code is
cached next to this module, so a process pays the compile once per machine. Equality with the
pure-Python paths is tested in tests/unit/curation/test_dedup.py.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

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
# inlined at numba's level: a call that passes an array costs an atomic incref/decref pair
_jit_inline = numba.njit(cache=True, nogil=True, inline="always")


@_jit
def minhash_loops(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per hash function j: min over shingles s of ((s * a[j] + b[j]) mod 2^64) mod (2^61 - 1)."""
    best = np.empty(a.size, dtype=np.uint64)
    _minhash_into(shingles, a, b, best)
    return best


@_jit
def _minhash_into(shingles: np.ndarray, a: np.ndarray, b: np.ndarray, best: np.ndarray) -> None:
    best[:] = _ALL_ONES
    for i in range(shingles.size):
        s = shingles[i]
        for j in range(a.size):
            x = s * a[j] + b[j]  # uint64: wraps mod 2^64, as numpy does
            r = (x & _MERSENNE) + (x >> _S61)  # 2^61 = 1 (mod p): r = x (mod p), r <= p + 7
            # r - p wraps to a huge value unless r >= p, so the min is r mod p; branch-free,
            # the inner loop vectorizes (unsigned 64-bit min/multiply)
            r = min(r, r - _MERSENNE)
            best[j] = min(best[j], r)


@_jit
def ascii_signatures(buf: np.ndarray, offsets: np.ndarray, rows: np.ndarray, n: int, is_word: np.ndarray,
                     is_space: np.ndarray, a: np.ndarray, b: np.ndarray, sigs: np.ndarray, has: np.ndarray) -> None:
    """MinHash signatures of many ASCII texts, concatenated in ``buf``: text d is
    ``buf[offsets[d]:offsets[d + 1]]``; its :func:`minhash_loops` of :func:`ascii_shingles` goes to
    ``sigs[rows[d]]`` and ``has[rows[d]]`` says whether it had a shingle (one call per batch
    instead of two per text)."""
    for d in range(rows.size):
        sh = ascii_shingles(buf[offsets[d]:offsets[d + 1]], n, is_word, is_space)
        if sh.size:
            _minhash_into(sh, a, b, sigs[rows[d]])
            has[rows[d]] = True



@_jit
def ascii_shingle_sets(buf: np.ndarray, offsets: np.ndarray, n: int, is_word: np.ndarray,
                       is_space: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique :func:`ascii_shingles` of each ASCII text ``buf[offsets[d]:offsets[d + 1]]``,
    concatenated: (values, offsets) (a text has fewer shingles than bytes)."""
    out = np.empty(buf.size, dtype=np.uint64)
    out_offsets = np.empty(offsets.size, dtype=np.int64)
    out_offsets[0] = 0
    k = 0
    for d in range(offsets.size - 1):
        sh = np.sort(ascii_shingles(buf[offsets[d]:offsets[d + 1]], n, is_word, is_space))
        for i in range(sh.size):
            if i == 0 or sh[i] != sh[i - 1]:
                out[k] = sh[i]
                k += 1
        out_offsets[d + 1] = k
    return out[:k], out_offsets


@_jit
def set_intersections(values: np.ndarray, offsets: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``|S[left[p]] & S[right[p]]|`` per pair p, S[d] = ``values[offsets[d]:offsets[d + 1]]``
    (sorted, unique): a merge walk."""
    out = np.empty(left.size, dtype=np.int64)
    for p in range(left.size):
        i, i_end = offsets[left[p]], offsets[left[p] + 1]
        j, j_end = offsets[right[p]], offsets[right[p] + 1]
        c = 0
        while i < i_end and j < j_end:
            x, y = values[i], values[j]
            if x == y:
                c += 1
                i += 1
                j += 1
            elif x < y:
                i += 1
            else:
                j += 1
        out[p] = c
    return out

@_jit
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _load_intrinsic(bits: int) -> Any:
    """``uint64(little-endian uint<bits> at buf[i:i + bits // 8])`` as one unaligned load (a
    byte-by-byte read costs ~8x more: numba's index wrap-around blocks LLVM's load combining)."""

    @intrinsic
    def load(typingctx: Any, arr: Any, idx: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(bits).as_pointer())
            value = builder.load(ptr, align=1)
            return value if bits == 64 else builder.zext(value, ir.IntType(64))

        return types.uint64(arr, idx), codegen

    return load


if sys.byteorder == "little":
    _read64 = _load_intrinsic(64)
    _read32 = _load_intrinsic(32)
else:  # pragma: no cover - big-endian hosts: assemble the little-endian value byte by byte
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


@_jit_inline
def xxh64(buf: np.ndarray, start: int, end: int) -> np.uint64:
    """XXH64 (seed 0) of ``buf[start:end]`` (uint8). Inlined into compiled callers: a call that
    passes an array costs an atomic reference count pair, more than hashing a shingle."""
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
def _token_bounds(buf: np.ndarray, k: int, is_word: np.ndarray, is_space: np.ndarray):
    """(starts, ends, count) of the tokens of buf[:k]: runs of word characters, or one character
    that is neither word nor space (spaces separate tokens and are dropped)."""
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
    return starts, ends, t


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
    starts, ends, t = _token_bounds(buf, k, is_word, is_space)
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


# ----------------------------------------------------------------------------- XXH3-64

# XXH3's default secret (xxhash.h, XXH3_kSecret)
_SECRET = np.array([
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
], dtype=np.uint8)
_SECRET_SIZE = 192
_P32_1 = np.uint64(0x9E3779B1)
_P32_2 = np.uint64(0x85EBCA77)
_P32_3 = np.uint64(0xC2B2AE3D)
_MX1 = np.uint64(0x165667919E3779F9)
_MX2 = np.uint64(0x9FB21C651E98DF25)
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _secret64(at: int, size: int = 8) -> np.uint64:
    return np.uint64(int.from_bytes(_SECRET[at:at + size].tobytes(), "little"))


# the secret words the inputs of up to 16 bytes use, as constants (not array reads)
_FLIP_0 = _secret64(56) ^ _secret64(64)
_FLIP_3 = _secret64(0, 4) ^ _secret64(4, 4)
_FLIP_8 = _secret64(8) ^ _secret64(16)
_FLIP_16_LO = _secret64(24) ^ _secret64(32)
_FLIP_16_HI = _secret64(40) ^ _secret64(48)


@_jit
def _avalanche64(h: np.uint64) -> np.uint64:  # XXH64's finalizer
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


@_jit
def _avalanche3(h: np.uint64) -> np.uint64:
    h = h ^ (h >> np.uint64(37))
    h = h * _MX1
    return h ^ (h >> np.uint64(32))


@_jit
def _mul128_fold64(a: np.uint64, b: np.uint64) -> np.uint64:
    """Low 64 bits XOR high 64 bits of the 128-bit product a * b."""
    a_lo, a_hi = a & _M32, a >> _S32
    b_lo, b_hi = b & _M32, b >> _S32
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    hi_hi = a_hi * b_hi
    cross = (lo_lo >> _S32) + (hi_lo & _M32) + lo_hi
    upper = (hi_lo >> _S32) + (cross >> _S32) + hi_hi
    lower = (cross << _S32) | (lo_lo & _M32)
    return lower ^ upper


@_jit
def _mix16(buf: np.ndarray, i: int, s: int) -> np.uint64:
    return _mul128_fold64(_read64(buf, i) ^ _read64(_SECRET, s), _read64(buf, i + 8) ^ _read64(_SECRET, s + 8))


@_jit
def _bswap64(x: np.uint64) -> np.uint64:
    r = _ZERO
    for _ in range(8):
        r = (r << np.uint64(8)) | (x & np.uint64(0xFF))
        x = x >> np.uint64(8)
    return r


@_jit
def _accumulate_stripe(acc: np.ndarray, buf: np.ndarray, i: int, s: int) -> None:
    for lane in range(8):
        v = _read64(buf, i + 8 * lane)
        key = v ^ _read64(_SECRET, s + 8 * lane)
        acc[lane ^ 1] += v
        acc[lane] += (key & _M32) * (key >> _S32)


@_jit
def _xxh3_long(buf: np.ndarray, start: int, length: int) -> np.uint64:
    acc = np.empty(8, dtype=np.uint64)
    acc[0], acc[1], acc[2], acc[3] = _P32_3, _P1, _P2, _P3
    acc[4], acc[5], acc[6], acc[7] = _P4, _P32_2, _P5, _P32_1
    stripes_per_block = (_SECRET_SIZE - 64) // 8
    block_len = 64 * stripes_per_block
    n_blocks = (length - 1) // block_len
    for blk in range(n_blocks):
        base = start + blk * block_len
        for st in range(stripes_per_block):
            _accumulate_stripe(acc, buf, base + 64 * st, 8 * st)
        for lane in range(8):  # scramble
            a = acc[lane]
            a = a ^ (a >> np.uint64(47))
            a = a ^ _read64(_SECRET, _SECRET_SIZE - 64 + 8 * lane)
            acc[lane] = a * _P32_1
    base = start + n_blocks * block_len
    n_stripes = ((length - 1) - block_len * n_blocks) // 64
    for st in range(n_stripes):
        _accumulate_stripe(acc, buf, base + 64 * st, 8 * st)
    _accumulate_stripe(acc, buf, start + length - 64, _SECRET_SIZE - 64 - 7)
    h = np.uint64(length) * _P1
    for k in range(4):  # merge the accumulators pairwise with secret bytes 11..74
        s = 11 + 16 * k
        h += _mul128_fold64(acc[2 * k] ^ _read64(_SECRET, s), acc[2 * k + 1] ^ _read64(_SECRET, s + 8))
    return _avalanche3(h)


@_jit
def xxh3_64(buf: np.ndarray, start: int, end: int) -> np.uint64:
    """XXH3-64 (seed 0, default secret) of ``buf[start:end]`` (uint8)."""
    if end - start <= 16:
        return _xxh3_short(buf, start, end)
    return _xxh3_over16(buf, start, end)


@_jit_inline
def _xxh3_short(buf: np.ndarray, start: int, end: int) -> np.uint64:
    """:func:`xxh3_64` of at most 16 bytes. Hot loops inline this and call :func:`_xxh3_over16`
    in a second pass: a call in the loop, even one never taken, doubles the loop's cost."""
    length = end - start
    if length > 8:
        lo = _read64(buf, start) ^ _FLIP_16_LO
        hi = _read64(buf, end - 8) ^ _FLIP_16_HI
        acc = np.uint64(length) + _bswap64(lo) + hi + _mul128_fold64(lo, hi)
        return _avalanche3(acc)
    if length >= 4:
        in1 = _read32(buf, start)
        in2 = _read32(buf, end - 4)
        keyed = (in2 + (in1 << _S32)) ^ _FLIP_8
        # rrmxmx
        h = keyed ^ (_rotl(keyed, 49) ^ _rotl(keyed, 24))
        h = h * _MX2
        h = h ^ ((h >> np.uint64(35)) + np.uint64(length))
        h = h * _MX2
        return h ^ (h >> np.uint64(28))
    if length > 0:
        c1 = np.uint64(buf[start])
        c2 = np.uint64(buf[start + (length >> 1)])
        c3 = np.uint64(buf[end - 1])
        combined = (c1 << np.uint64(16)) | (c2 << np.uint64(24)) | c3 | (np.uint64(length) << np.uint64(8))
        return _avalanche64(combined ^ _FLIP_3)
    return _avalanche64(_FLIP_0)


@_jit
def _xxh3_over16(buf: np.ndarray, start: int, end: int) -> np.uint64:
    length = end - start
    if length <= 128:
        acc = np.uint64(length) * _P1
        if length > 32:
            if length > 64:
                if length > 96:
                    acc += _mix16(buf, start + 48, 96)
                    acc += _mix16(buf, end - 64, 112)
                acc += _mix16(buf, start + 32, 64)
                acc += _mix16(buf, end - 48, 80)
            acc += _mix16(buf, start + 16, 32)
            acc += _mix16(buf, end - 32, 48)
        acc += _mix16(buf, start, 0)
        acc += _mix16(buf, end - 16, 16)
        return _avalanche3(acc)
    if length <= 240:
        acc = np.uint64(length) * _P1
        for r in range(8):
            acc += _mix16(buf, start + 16 * r, 16 * r)
        acc = _avalanche3(acc)
        for r in range(8, length // 16):
            acc += _mix16(buf, start + 16 * r, 16 * (r - 8) + 3)
        acc += _mix16(buf, end - 16, 136 - 17)
        return _avalanche3(acc)
    return _xxh3_long(buf, start, length)


# ----------------------------------------------------------------------------- decontamination

_SPLITMIX1 = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX2 = np.uint64(0x94D049BB133111EB)


@_jit
def _hash_tokens(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, t: int) -> np.ndarray:
    """xxh3-64 of ``buf[starts[q]:ends[q]]`` for q < t: short tokens inline, longer ones after."""
    out = np.empty(t, dtype=np.uint64)
    longs = np.empty(t, dtype=np.int64)
    n_long = 0
    for q in range(t):
        if ends[q] - starts[q] <= 16:
            out[q] = _xxh3_short(buf, starts[q], ends[q])
        else:
            longs[n_long] = q
            n_long += 1
    for r in range(n_long):
        q = longs[r]
        out[q] = _xxh3_over16(buf, starts[q], ends[q])
    return out


@_jit
def ascii_token_hashes(raw: np.ndarray, is_word: np.ndarray, is_space: np.ndarray) -> np.ndarray:
    """xxh3-64 of each token ``\\w+|[^\\w\\s]`` of the lower-cased ASCII text ``raw`` (uint8).
    NFKC leaves ASCII unchanged, so this is ``decontam.token_hashes(decontam.tokenize(text))``."""
    size = raw.size
    buf = np.empty(size, dtype=np.uint8)
    for i in range(size):
        c = raw[i]
        buf[i] = c + 32 if 65 <= c <= 90 else c
    starts, ends, t = _token_bounds(buf, size, is_word, is_space)
    return _hash_tokens(buf, starts, ends, t)


@_jit
def joined_token_hashes(buf: np.ndarray) -> np.ndarray:
    """xxh3-64 of each token of ``"\\n".join(tokens)`` encoded as UTF-8 (``buf``: uint8; an
    empty buffer holds no token). No token contains a newline."""
    size = buf.size
    if size == 0:
        return np.empty(0, dtype=np.uint64)
    n = 1
    for i in range(size):
        if buf[i] == 10:
            n += 1
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    t = 0
    start = 0
    for i in range(size + 1):
        if i == size or buf[i] == 10:
            starts[t] = start
            ends[t] = i
            t += 1
            start = i + 1
    return _hash_tokens(buf, starts, ends, t)


@_jit
def any_indexed(th: np.ndarray, wanted: np.ndarray, mult: np.uint64, bits: np.ndarray, shift: np.uint64,
                hashes: np.ndarray) -> bool:
    """Whether any n-gram of token hashes ``th`` whose length L has ``wanted[L]`` is in the
    index: ``decontam.combine`` (polynomial in ``mult``, splitmix64 finish), then the index's
    bit filter (bit ``h >> shift`` of ``bits``), then binary search in sorted ``hashes``."""
    top = wanted.size - 1
    last = hashes.size - 1
    if last < 0:
        return False
    for i in range(th.size):
        h = _ZERO
        for j in range(min(top, th.size - i)):
            h = h * mult + th[i + j]
            if wanted[j + 1]:
                m = h ^ (h >> np.uint64(30))
                m = m * _SPLITMIX1
                m = m ^ (m >> np.uint64(27))
                m = m * _SPLITMIX2
                m = m ^ (m >> np.uint64(31))
                slot = m >> shift
                if (bits[slot >> np.uint64(3)] >> (slot & np.uint64(7))) & np.uint8(1):
                    k = np.searchsorted(hashes, m)
                    if k <= last and hashes[k] == m:
                        return True
    return False


@_jit
def ascii_screen(buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, is_space: np.ndarray,
                 wanted: np.ndarray, mult: np.uint64, bits: np.ndarray, shift: np.uint64,
                 hashes: np.ndarray) -> np.ndarray:
    """:func:`any_indexed` of the :func:`ascii_token_hashes` of each ASCII text
    ``buf[offsets[d]:offsets[d + 1]]``, for a batch of texts in one call (bool per text)."""
    out = np.zeros(offsets.size - 1, dtype=np.bool_)
    for d in range(offsets.size - 1):
        th = ascii_token_hashes(buf[offsets[d]:offsets[d + 1]], is_word, is_space)
        out[d] = any_indexed(th, wanted, mult, bits, shift, hashes)
    return out


# ----------------------------------------------------------------------------- exact dedup


@_jit
def collapse_whitespace(buf: np.ndarray, offsets: np.ndarray, is_space: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``" ".join(text.split())`` of each ASCII text ``buf[offsets[d]:offsets[d + 1]]`` (uint8;
    ``is_space``: the ASCII characters ``str.isspace`` accepts), concatenated: (bytes, offsets)."""
    out = np.empty(buf.size, dtype=np.uint8)
    out_offsets = np.empty(offsets.size, dtype=np.int64)
    k = 0
    out_offsets[0] = 0
    for d in range(offsets.size - 1):
        start = k
        pending = False  # a whitespace run after a word: one space, if another word follows
        for i in range(offsets[d], offsets[d + 1]):
            c = buf[i]
            if is_space[c]:
                pending = k > start
            else:
                if pending:
                    out[k] = 32
                    k += 1
                    pending = False
                out[k] = c
                k += 1
        out_offsets[d + 1] = k
    return out[:k], out_offsets
