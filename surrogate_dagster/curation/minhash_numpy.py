"""Vectorized MinHash stages that read and write datatrove's exact signature files.

datatrove's ``MinhashDedupSignature`` hashes each 5-gram through a Python generator, packs one
record per document and bucket with ``struct``, then re-reads, sorts and re-verifies every bucket
file; its ``MinhashDedupBuckets`` merges the bucket files through a Python heap of dataclass
objects. On code answers (~450 shingles a document) that is most of the near-dedup time, and the
bucket stage runs over *every* source on each re-curation. This module does the same arithmetic
with numpy and writes/reads the same bytes:

- shingles: ``xxh64(" ".join(5 tokens))`` of datatrove's normalized token stream, hashed with
  ``map`` instead of a generator (see :func:`shingle_hashes` for the one normalization step that
  is skipped because it cannot change the tokens);
- signatures: ``min((s * a + b) mod 2^64 mod p)`` over the shingles, with datatrove's own
  permutation parameters (``np.random.RandomState(seed)``) and the Mersenne-prime reduction
  ``(x & p) + (x >> 61)`` instead of a 64-bit division, in the compiled kernels
  (:mod:`.minhash_kernels`, numba: one pass, no temporaries, compiled once per machine and
  cached next to it). They are the package's only MinHash (``benchmarks/minhash_scurve.py
  --speed`` times them against datatrove's block and this loop in plain numpy; figures in
  docs/BENCHMARKS.md); datatrove is the reference in tests/unit/curation/test_minhash_parity.py;
- files: ``bucket_XXX/00000.minhash.sig``, records ``<{r}QI`` (r hashes + doc index) sorted by
  all fields, exactly as datatrove leaves them after its sort (an argsort on the first hash,
  ties re-sorted by every field, instead of a structured-array sort);
- candidate pairs: per bucket, all partitions' records grouped by equal signature, each group in
  (file, doc) order; consecutive members form a pair, the same (and only the same) pairs
  datatrove's heap merge (order: signature, file, doc) writes to its ``.dups`` files. Grouping
  uses a stable sort on a 64-bit key of the signature (verified hash by hash; a key collision
  falls back to the full sort). Buckets are handled on threads (reads and sorts drop the GIL);
- signatures and bucket files with ``threads`` > 1 use threads too: the kernels are ``nogil``,
  so no process is forked and nothing is pickled.

tests/unit/curation/test_minhash_parity.py checks byte-identical files and identical pair sets against
datatrove's blocks. No Dagster imports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import xxhash
from datatrove.utils.text import NUMBERS_PATTERN, TextNormConfig

from .parallel import thread_map

MERSENNE = np.uint64((1 << 61) - 1)  # datatrove's _mersenne_prime
SIG_FILE = "00000.minhash.sig"  # datatrove's name for rank 0's bucket file


def record_dtype(hashes_per_bucket: int) -> np.dtype:
    """The structured dtype of one ``.sig`` record, field names as datatrove sorts them."""
    return np.dtype([(f"field{i + 1}", "<u8") for i in range(hashes_per_bucket)]
                    + [(f"field{hashes_per_bucket + 1}", "<u4")])


def permutation_params(seed: int, num_hashes: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), each ``num_hashes`` uint64: the draws ``MinhashDedupSignature.parameters`` makes."""
    gen = np.random.RandomState(seed)
    a = gen.randint(1, MERSENNE, dtype=np.uint64, size=(1, num_hashes))
    b = gen.randint(0, MERSENNE, dtype=np.uint64, size=(1, num_hashes))
    return a.ravel(), b.ravel()


def check_norm_config(norm: TextNormConfig) -> None:
    """:func:`shingle_hashes` implements lowercase + numbers + whitespace only; refuse others."""
    if (norm.remove_punctuation or norm.norm_unicode_diacritics or norm.norm_weekdays
            or norm.norm_monthnames or not norm.lowercase or not norm.norm_numbers):
        raise ValueError(f"the numpy MinHash engine supports lowercase + numbers + whitespace "
                         f"normalization only (diacritics in the tokenizer), got {norm}")


def shingle_hashes(text: str, n_grams: int, word_tokenize: Callable[[str], list[str]],
                   regex_tokens: bool = False) -> np.ndarray:
    """xxh64 of each n-gram of datatrove's normalized tokens, in order (uint64, not unique).

    Equal to ``MinhashDedupSignature.get_shingles(text).ravel()`` for the normalization
    :func:`check_norm_config` allows. datatrove's whitespace collapse is skipped: the tokenizer
    never emits whitespace, so collapsing runs of it cannot change a token. ``regex_tokens``
    says that ``word_tokenize`` is ``\\w+|[^\\w\\s]`` after diacritic stripping
    (minhash.RegexWordTokenizer): then ASCII text goes through the compiled kernel when numba is
    installed; anything else through ``word_tokenize`` and ``xxhash``.
    """
    if regex_tokens and text.isascii():
        k = kernels()
        if k is not None:
            return k.ascii_shingles(np.frombuffer(text.encode("ascii"), dtype=np.uint8), n_grams,
                                    k.IS_WORD, k.IS_SPACE)
    tokens = word_tokenize(NUMBERS_PATTERN.sub("0", text.lower()))
    m = len(tokens) - n_grams + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    grams = map(" ".join, zip(*(tokens[i:] for i in range(n_grams))))
    return np.fromiter(map(xxhash.xxh64_intdigest, grams), dtype=np.uint64, count=m)


_KERNELS: Any = None  # None: not tried yet; False: numba unavailable or disabled


def kernels() -> Any:
    """The compiled kernels module (:mod:`.minhash_kernels`), or None (numpy/Python paths)."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = False
        if os.environ.get("SURROGATE_MINHASH_NUMBA", "1") != "0":
            try:
                from . import minhash_kernels
            except ImportError:  # numba is optional
                pass
            else:
                _KERNELS = minhash_kernels
    return _KERNELS or None


def warm_up() -> None:
    """Compile (or load from cache) the numba kernels now, e.g. in a parent before forking
    (MinHash, decontamination and exact-dedup kernels: ~20 ms once numba is loaded)."""
    k = kernels()
    if k is not None:  # argument types as the callers pass them (bytes buffers are read-only)
        text = np.frombuffer(b"a b c d e", dtype=np.uint8)
        one, zero = np.ones(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64)
        k.minhash_loops(zero, one, zero)
        k.ascii_shingles(text, 5, k.IS_WORD, k.IS_SPACE)
        k.ascii_signatures(text, np.array([0, text.size]), np.zeros(1, dtype=np.int64), 5, k.IS_WORD, k.IS_SPACE,
                           one, zero, np.empty((1, 1), dtype=np.uint64), np.zeros(1, dtype=np.bool_))
        k.collapse_whitespace(text, np.array([0, text.size]), k.IS_SPACE)
        vals, offs = k.ascii_shingle_sets(text, np.array([0, text.size]), 5, k.IS_WORD, k.IS_SPACE)
        k.set_intersections(vals, offs, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
        th = k.ascii_token_hashes(text, k.IS_WORD, k.IS_SPACE)
        k.joined_token_hashes(text)
        filt = (np.ones(2, dtype=np.bool_), np.uint64(3), np.zeros(1, dtype=np.uint8), np.uint64(63), one)
        k.any_indexed(th, *filt)
        k.ascii_screen(text, np.array([0, text.size]), k.IS_WORD, k.IS_SPACE, *filt)


def require_kernels() -> Any:
    """The compiled kernels; MinHash has no other implementation in the package."""
    k = kernels()
    if k is None:
        raise RuntimeError("MinHash needs the compiled kernels (numba, a pinned dependency); "
                           "unset SURROGATE_MINHASH_NUMBA=0 or install numba")
    return k


def minhash(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``min over shingles of ((s * a + b) mod 2^64) mod p`` per hash function (uint64), compiled.

    The modulus uses 2^61 = 1 (mod p): r = (x & p) + (x >> 61) is congruent to x and lies in
    [0, p + 7]; it equals x mod p unless r >= p, which the kernel then settles exactly
    (tests/unit/curation/test_dedup.py checks datatrove's expression, including that case).
    """
    return require_kernels().minhash_loops(np.ascontiguousarray(shingles, dtype=np.uint64), a, b)


def signature_matrix(texts: Sequence[str], n_grams: int, word_tokenize: Callable[[str], list[str]],
                     a: np.ndarray, b: np.ndarray, regex_tokens: bool = False,
                     threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(signatures ``(k, H)`` uint64, their doc indices ``(k,)`` uint32) for the k texts that
    have at least one shingle; the others can never match and get no record (as in datatrove).
    ``threads`` > 1 splits the compiled (``nogil``) work on ASCII texts over that many threads."""
    sigs = np.empty((len(texts), a.size), dtype=np.uint64)
    has = np.zeros(len(texts), dtype=bool)
    k = require_kernels()
    ascii_rows = [i for i, text in enumerate(texts) if text.isascii()] if regex_tokens else []
    if ascii_rows:  # one compiled call per thread for all ASCII texts (what shingle_hashes would do per text)
        a_c, b_c = np.ascontiguousarray(a), np.ascontiguousarray(b)
        size = max(1, -(-len(ascii_rows) // max(1, 4 * threads if threads > 1 else 1)))

        def run(rows: list[int]) -> None:  # rows of sigs/has are disjoint between calls
            lengths = np.fromiter((len(texts[i]) for i in rows), dtype=np.int64, count=len(rows))
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            buf = np.frombuffer("".join([texts[i] for i in rows]).encode("ascii"), dtype=np.uint8)
            k.ascii_signatures(buf, offsets, np.asarray(rows, dtype=np.int64), n_grams, k.IS_WORD,
                               k.IS_SPACE, a_c, b_c, sigs, has)

        thread_map(run, [ascii_rows[g:g + size] for g in range(0, len(ascii_rows), size)], threads)
    done = set(ascii_rows)
    for i, text in enumerate(texts):
        if i in done:
            continue
        sh = shingle_hashes(text, n_grams, word_tokenize, regex_tokens)
        if sh.size:
            sigs[i] = minhash(sh, a, b)
            has[i] = True
    idx = np.flatnonzero(has)
    return sigs[idx], idx.astype(np.uint32)


def write_signature_files(folder: Path, sigs: np.ndarray, doc_idx: np.ndarray, buckets: int,
                          hashes_per_bucket: int, threads: int = 1) -> None:
    """datatrove's ``bucket_XXX/00000.minhash.sig`` files: one record per doc, sorted
    (``threads`` > 1 writes that many buckets at once; same bytes)."""
    if sigs.shape[1] != buckets * hashes_per_bucket:
        raise ValueError(f"signatures have {sigs.shape[1]} hashes, expected {buckets} x {hashes_per_bucket}")
    r = hashes_per_bucket
    packed = np.dtype([("h", "<u8", (r,)), ("d", "<u4")])  # record_dtype's bytes, hashes as one field

    def write(bi: int) -> None:
        # this bucket's hashes, one 64-byte row per doc (a strided column read per hash would
        # touch a cache line per value of the whole matrix, for every one of the r columns)
        band = np.ascontiguousarray(sigs[:, bi * r:(bi + 1) * r], dtype="<u8")
        order = _record_order(band, doc_idx)
        raw = np.empty(len(doc_idx), dtype=packed)
        raw["h"] = band[order]
        raw["d"] = doc_idx[order]
        bucket_dir = folder / f"bucket_{bi:03d}"
        bucket_dir.mkdir(parents=True, exist_ok=True)
        data = raw.tobytes()
        written = (bucket_dir / SIG_FILE).write_bytes(data)
        if written != len(data):  # pragma: no cover - buffered writes raise rather than fall short
            raise OSError(f"short write of {bucket_dir / SIG_FILE}: {written} of {len(data)} bytes")

    thread_map(write, range(buckets), threads)


def _record_order(band: np.ndarray, doc_idx: np.ndarray) -> np.ndarray:
    """The permutation that sorts records (``band[d, 0]``, ..., ``band[d, r - 1]``, ``doc_idx[d]``)
    ascending by all fields, i.e. datatrove's ``records.sort(order=names)`` (same order, same
    bytes; numpy's structured sort compares records field by field in generic code, ~10x slower).
    The first hash decides almost always (near-uniform 61-bit values); records whose first hash
    ties are re-sorted by every field, so the first sort need not be stable."""
    order = np.argsort(band[:, 0])
    first = band[order, 0]
    tie = np.zeros(first.size, dtype=bool)
    eq = first[1:] == first[:-1]
    tie[1:] |= eq
    tie[:-1] |= eq
    if tie.any():
        sub = order[tie]  # ties form runs; the runs are already in first-hash order
        keys = (doc_idx[sub], *(band[sub, j] for j in reversed(range(band.shape[1]))))
        order[tie] = sub[np.lexsort(keys)]
    return order


def read_bucket(folder: Path, bucket: int, hashes_per_bucket: int) -> np.ndarray:
    """One partition's records of one bucket (structured array, see :func:`record_dtype`)."""
    path = Path(folder) / f"bucket_{bucket:03d}" / SIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; recompute this partition's signatures")
    dtype = record_dtype(hashes_per_bucket)
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes is not a whole number of {dtype.itemsize}-byte records")
    return np.fromfile(path, dtype=dtype)


def _read_band(folders: Sequence[Path], bucket: int, hashes_per_bucket: int) -> tuple[np.ndarray, np.ndarray]:
    """Every partition's records of one bucket, concatenated in partition order (one packed
    array: hashes ``"h"`` (n, r), doc index ``"d"``), and each partition's record count."""
    packed = np.dtype([("h", "<u8", (hashes_per_bucket,)), ("d", "<u4")])  # record_dtype's bytes
    paths = [Path(f) / f"bucket_{bucket:03d}" / SIG_FILE for f in folders]
    sizes = np.empty(len(paths), dtype=np.int64)
    for k, path in enumerate(paths):
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} is missing; recompute this partition's signatures") from None
        if size % packed.itemsize:
            raise ValueError(f"{path}: {size} bytes is not a whole number of {packed.itemsize}-byte records")
        sizes[k] = size // packed.itemsize
    records = np.empty(int(sizes.sum()), dtype=packed)
    view = memoryview(records.view(np.uint8))
    pos = 0
    for path, n in zip(paths, sizes.tolist()):
        nbytes = n * packed.itemsize
        with open(path, "rb", buffering=0) as fh:
            got = fh.readinto(view[pos:pos + nbytes])
            while got < nbytes:  # pragma: no cover - readinto of a regular file reads it whole
                more = fh.readinto(view[pos + got:pos + nbytes])
                if not more:
                    raise ValueError(f"{path} shrank while being read")
                got += more
        pos += nbytes
    return records, sizes


_KEY_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd: a different multiplier per position is not needed


def _band_pairs(records: np.ndarray, sizes: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Pairs of one bucket: among records with equal signatures, ordered by (file, doc), each
    two consecutive ones; what datatrove's merge emits (it orders by signature, file, doc and
    pairs equal neighbours; the order *between* signatures does not change the pairs).

    Records are grouped by a 64-bit key of the whole signature (the first hash alone ties often:
    boilerplate shingles win the minimum in many documents). A stable sort keeps each group in
    (file, doc) order: partitions are concatenated in file order and each file is sorted by
    (signature, doc). Every pair is checked hash by hash; if two different signatures ever
    share a key, the band is settled by the exact sort instead."""
    h = records["h"]
    with np.errstate(over="ignore"):
        key = h[:, 0].copy()
        for j in range(1, h.shape[1]):
            key *= _KEY_MULT
            key += h[:, j]
    order = np.argsort(key, kind="stable")
    k = key[order]
    at = np.flatnonzero(k[1:] == k[:-1])
    if not at.size:
        return []
    left, right = order[at], order[at + 1]
    if not (h[left] == h[right]).all():  # a 64-bit key collision (tested with planted ones)
        return _band_pairs_exact(records, sizes)
    return _pair_list(records, sizes, left, right)


def _pair_list(records: np.ndarray, sizes: np.ndarray, left: np.ndarray,
               right: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((file, doc), (file, doc)) of record rows ``left[i]``, ``right[i]``, sorted within the pair."""
    ends = np.cumsum(sizes)
    f1 = np.searchsorted(ends, left, side="right").tolist()
    f2 = np.searchsorted(ends, right, side="right").tolist()
    d1, d2 = records["d"][left].tolist(), records["d"][right].tolist()
    return [((a, b), (c, d)) if (a, b) <= (c, d) else ((c, d), (a, b)) for a, b, c, d in zip(f1, d1, f2, d2)]


def _band_pairs_exact(records: np.ndarray, sizes: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """:func:`_band_pairs` by datatrove's full order: (signature, file, doc), equal neighbours."""
    sig = records["h"]
    file_id = np.repeat(np.arange(sizes.size), sizes)
    doc = records["d"].astype(np.int64)
    # lexsort: last key first
    o = np.lexsort((doc, file_id, *(sig[:, j] for j in reversed(range(sig.shape[1])))))
    same = np.flatnonzero((sig[o[1:]] == sig[o[:-1]]).all(axis=1))
    return _pair_list(records, sizes, o[same], o[same + 1])


def bucket_pairs(folders: Sequence[Path], buckets: int, hashes_per_bucket: int,
                 threads: int = 1) -> set[tuple[tuple[int, int], tuple[int, int]]]:
    """Candidate pairs ``((file, doc), (file, doc))`` (sorted within the pair) over all buckets,
    partition k being ``folders[k]``: what datatrove's bucket stage emits for the same files.
    ``threads`` > 1 handles that many buckets at once (same pairs)."""

    def band(bi: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        records, sizes = _read_band(folders, bi, hashes_per_bucket)
        return _band_pairs(records, sizes) if records.size >= 2 else []

    pairs: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    for found in thread_map(band, range(buckets), threads):
        pairs.update(found)
    return pairs


def shingle_sets(texts: Sequence[str], n_grams: int, word_tokenize: Callable[[str], list[str]],
                 regex_tokens: bool = False, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique :func:`shingle_hashes` of each text, concatenated: (values uint64, offsets
    int64; text d's set is ``values[offsets[d]:offsets[d + 1]]``). ASCII texts go through one
    compiled call per thread when ``regex_tokens`` and numba allow (see :func:`shingle_hashes`)."""
    sets: list[np.ndarray | None] = [None] * len(texts)
    k = kernels() if regex_tokens else None
    ascii_rows = [i for i, text in enumerate(texts) if text.isascii()] if k is not None else []
    if ascii_rows:
        size = max(1, -(-len(ascii_rows) // max(1, threads)))
        groups = [ascii_rows[g:g + size] for g in range(0, len(ascii_rows), size)]

        def run(rows: list[int]) -> tuple[list[int], np.ndarray, np.ndarray]:
            lengths = np.fromiter((len(texts[i]) for i in rows), dtype=np.int64, count=len(rows))
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            buf = np.frombuffer("".join([texts[i] for i in rows]).encode("ascii"), dtype=np.uint8)
            return (rows, *k.ascii_shingle_sets(buf, offsets, n_grams, k.IS_WORD, k.IS_SPACE))

        for rows, vals, offs in thread_map(run, groups, threads):
            for q, i in enumerate(rows):
                sets[i] = vals[offs[q]:offs[q + 1]]
    for i, text in enumerate(texts):
        if sets[i] is None:
            sets[i] = np.unique(shingle_hashes(text, n_grams, word_tokenize, regex_tokens))
    lengths = np.fromiter((x.size for x in sets), dtype=np.int64, count=len(sets))
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate(sets) if sets else np.empty(0, dtype=np.uint64)
    return values.astype(np.uint64, copy=False), offsets


def set_jaccards(values: np.ndarray, offsets: np.ndarray, left: Sequence[int],
                 right: Sequence[int]) -> list[float]:
    """Jaccard of sets ``left[p]`` and ``right[p]`` of :func:`shingle_sets` per pair p, as
    ``minhash.jaccard`` gives it (0.0 when both are empty)."""
    left_a, right_a = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    k = kernels()
    if k is not None:
        inter = k.set_intersections(values, offsets, left_a, right_a).tolist()
    else:
        inter = [np.intersect1d(values[offsets[a]:offsets[a + 1]], values[offsets[b]:offsets[b + 1]],
                                assume_unique=True).size for a, b in zip(left, right)]
    sizes = np.diff(offsets)
    out = []
    for i, a, b in zip(inter, (sizes[left_a]).tolist(), (sizes[right_a]).tolist()):
        union = a + b - i
        out.append(i / union if union else 0.0)
    return out
