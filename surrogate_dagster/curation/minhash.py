"""Near deduplication: datatrove's MinHash LSH, per-partition signatures, a true-Jaccard check.

Geometry. 256 hashes split into b bands ("buckets") of r rows ("hashes per bucket"), b*r = 256.
Two documents whose 5-gram shingle sets have Jaccard J share at least one band, i.e. become a
candidate pair, with probability P(J) = 1 - (1 - J^r)^b. The runbook's threshold is J = 0.7.
The factorizations of 256 give:

    b x r     P(0.5)  P(0.6)  P(0.7)  P(0.75) P(0.8)  P(0.9)   (1/b)^(1/r)
    64 x 4    0.984   1.000   1.000   1.000   1.000   1.000    0.354
    32 x 8    0.118   0.418   0.850   0.966   0.997   1.000    0.648
    16 x 16   0.000   0.005   0.052   0.149   0.367   0.962    0.841
    (14 x 8   0.053   0.211   0.565   0.772   0.924   1.000    0.719  datatrove default, 112 hashes)

We use **32 x 8**: of the three, its S-curve is the one that rises around 0.7; it catches 85%
of pairs at exactly J=0.7 and >96% from J=0.75 up (28 x 9 would give 68% at 0.7 and is not a
factorization of 256). Its price, candidates from J=0.5-0.6 (12-42%), is what the true-Jaccard
check removes: every candidate pair is re-shingled and kept only if its real Jaccard is >= 0.7.
datatrove itself never checks candidates (its clustering unions every bucket collision), so
without the check a J=0.6 pair would be dropped 42% of the time. 64 x 4 would push recall at
0.7 to ~100% but makes almost every pair above J=0.4 a candidate; 16 x 16 misses 95% of the
pairs at the threshold. datatrove's default (14 x 8, 112 hashes) catches only 57% at J=0.7.
benchmarks/minhash_scurve.py measures the detection rate of planted pairs per Jaccard level
against this theory, for 32 x 8 with the check and for datatrove's stock 14 x 8 without it
(recorded figures: docs/BENCHMARKS.md).

Shingles are datatrove's: ``simplify_text`` (lowercase, numbers -> 0, whitespace collapsed,
diacritics stripped) and 5-grams of a regex word tokenizer ``\\w+|[^\\w\\s]`` (no spaCy).
Unlike datatrove's default we KEEP punctuation: in code, operators and brackets carry meaning
(``a + b`` vs ``a - b``).

Incremental layout. :func:`compute_signatures` writes one partition (one source) into its own
folder: datatrove's ``bucket_XXX/00000.minhash.sig`` files plus ``manifest.json`` (doc ids in
signature order and the geometry). Re-curating a source rewrites only that folder.
:func:`find_near_duplicates` then reads every partition's files (partition k becoming file
``k``), finds the bucket collisions, verifies the candidate pairs and clusters across sources
with union-find.

One implementation. Signatures, bucket files and candidate pairs are computed by the compiled
kernels (:mod:`.minhash_numpy` over :mod:`.minhash_kernels`, numba) and are the same bytes and
pairs as datatrove's ``MinhashDedupSignature`` / ``MinhashDedupBuckets`` would give
(tests/unit/curation/test_minhash_parity.py runs datatrove's blocks as the reference); their
cost against datatrove's signature block is measured by ``benchmarks/minhash_scurve.py --speed``
(figures in docs/BENCHMARKS.md). Specs whose normalization the kernels do not implement
(``remove_punctuation``) are refused.

Limit: datatrove emits, per band, only pairs of *adjacent* equal signatures (a, b), (b, c); if
(a, b) fails the check while (a, c) would pass, that edge can only come from another band.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import unicodedata
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.utils.text import TextNormConfig
from datatrove.utils.word_tokenizers import WordTokenizer

from . import minhash_numpy as mnp
from .parallel import default_workers

REASON = "near_duplicate"
THRESHOLD = 0.7
MANIFEST = "manifest.json"


def candidate_probability(jaccard: float, buckets: int, hashes_per_bucket: int) -> float:
    """P(pair becomes a candidate | Jaccard) = 1 - (1 - J^r)^b, b buckets of r hashes."""
    return 1.0 - (1.0 - jaccard**hashes_per_bucket) ** buckets


def geometry_threshold(buckets: int, hashes_per_bucket: int) -> float:
    """The usual S-curve midpoint estimate (1/b)^(1/r)."""
    return (1.0 / buckets) ** (1.0 / hashes_per_bucket)


def strip_marks(text: str) -> str:
    """datatrove's diacritics step (NFD, drop combining marks), skipped for ASCII text.

    datatrove runs it per character in Python (most of the signature time on code); ASCII text
    has no marks, so the fast path returns the very same string.
    """
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


class RegexWordTokenizer(WordTokenizer):
    """Word/punctuation tokenizer for code and prose; replaces datatrove's spaCy default.

    It also applies :func:`strip_marks`, which our spec turns off in ``simplify_text``: that
    step is the last one there, so moving it here leaves the shingles unchanged.
    """

    _TOKEN = re.compile(r"\w+|[^\w\s]")

    def __init__(self) -> None:
        super().__init__(language=None)

    def word_tokenize(self, text: str) -> list[str]:
        return self._TOKEN.findall(strip_marks(text))

    def sent_tokenize(self, text: str) -> list[str]:
        # MinHash never splits sentences; one "sentence" per document is enough for the interface.
        return [text]

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._TOKEN.finditer(text)]


@dataclass(frozen=True)
class MinhashSpec:
    """Everything that must be equal for two partitions' signatures to be comparable."""

    n_grams: int = 5
    buckets: int = 32
    hashes_per_bucket: int = 8
    seed: int = 1
    remove_punctuation: bool = False

    def __post_init__(self) -> None:
        if self.remove_punctuation:
            raise ValueError("MinhashSpec(remove_punctuation=True): the MinHash kernels keep punctuation "
                             "(code operators carry meaning); no other MinHash implementation is shipped")

    @property
    def num_hashes(self) -> int:
        return self.buckets * self.hashes_per_bucket

    def config(self) -> MinhashConfig:
        """The datatrove config for this spec (64-bit xxhash, datatrove's default hashing)."""
        return _config(self)


@functools.lru_cache(maxsize=16)
def _config(spec: MinhashSpec) -> MinhashConfig:
    # cached: building a MinhashConfig runs a ~1 s dependency check (HashConfig.__post_init__)
    return MinhashConfig(
        n_grams=spec.n_grams,
        num_buckets=spec.buckets,
        hashes_per_bucket=spec.hashes_per_bucket,
        seed=spec.seed,
        norm_config=_norm_config(spec),
    )


def _norm_config(spec: MinhashSpec) -> TextNormConfig:
    # diacritics are stripped by RegexWordTokenizer instead (see its docstring)
    return TextNormConfig(remove_punctuation=spec.remove_punctuation, norm_unicode_diacritics=False)


DEFAULT_SPEC = MinhashSpec()


_TOKENIZER = RegexWordTokenizer()


@functools.lru_cache(maxsize=16)
def _params(spec: MinhashSpec) -> tuple[np.ndarray, np.ndarray]:
    # not spec.config(): signing never builds datatrove's MinhashConfig (~0.5 s check)
    mnp.check_norm_config(_norm_config(spec))
    return mnp.permutation_params(spec.seed, spec.num_hashes)


def shingle_hashes(text: str, spec: MinhashSpec = DEFAULT_SPEC, compiled: bool = True) -> np.ndarray:
    """Hashed shingles of ``text`` in order, with repeats: datatrove's ``get_shingles`` (flat).
    ``compiled=False`` tokenizes in Python (the compiled tokenizer is used on ASCII text; both
    give the same values, and non-ASCII text always takes the Python tokenizer)."""
    return mnp.shingle_hashes(text, spec.n_grams, _TOKENIZER.word_tokenize, regex_tokens=compiled)


def shingles(text: str, spec: MinhashSpec = DEFAULT_SPEC) -> np.ndarray:
    """Sorted unique hashed shingles of ``text``, exactly as the signature stage sees them."""
    return np.unique(shingle_hashes(text, spec))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted-unique shingle arrays (0.0 when both are empty)."""
    inter = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - inter
    return inter / union if union else 0.0


@dataclass
class SignatureStats:
    """What :func:`compute_signatures` wrote."""

    out_dir: str
    n_docs: int
    n_without_shingles: int  # fewer tokens than n_grams: never a candidate


def compute_signatures(docs: Iterable[tuple[str, str]], out_dir: Path | str,
                       spec: MinhashSpec = DEFAULT_SPEC, workers: int = 1) -> SignatureStats:
    """Write MinHash signatures of one partition's ``(doc_id, text)`` pairs to ``out_dir``.

    The folder is built beside ``out_dir`` and swapped in at the end, so a failure leaves the
    previous signatures in place. Doc ids must be unique within the partition. ``workers > 1``
    runs the compiled kernels on that many threads (they release the GIL; same bytes).
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    doc_ids: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    for doc_id, text in docs:
        if not isinstance(text, str):
            raise TypeError(f"doc {doc_id!r} in partition {out_dir.name!r}: text is {type(text).__name__}")
        if doc_id in seen:
            raise ValueError(f"duplicate doc id {doc_id!r} in partition {out_dir.name!r}")
        seen.add(doc_id)
        doc_ids.append(doc_id)  # list index == the record's doc index (datatrove enumerates all docs)
        texts.append(text)
    try:
        mnp.warm_up()  # compile (or load) the kernels before the threads start
        a, b = _params(spec)
        sigs, idx = mnp.signature_matrix(texts, spec.n_grams, _TOKENIZER.word_tokenize, a, b,
                                         regex_tokens=True, threads=workers)
        mnp.write_signature_files(tmp, sigs, idx, spec.buckets, spec.hashes_per_bucket, threads=workers)
        n_signed = len(idx)
        manifest = {"spec": asdict(spec), "doc_ids": doc_ids}
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        old = out_dir.parent / f".{out_dir.name}.old-{uuid.uuid4().hex[:8]}"
        if out_dir.exists():
            out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return SignatureStats(str(out_dir), len(doc_ids), len(doc_ids) - n_signed)


@dataclass(frozen=True)
class NearDuplicate:
    """A dropped document and the cluster member kept in its place."""

    partition: str
    doc_id: str
    kept_partition: str
    kept_doc_id: str
    jaccard: float  # true Jaccard between this doc and the kept one
    reason: str = REASON


@dataclass
class NearDupResult:
    """Dropped docs keyed by (partition, doc_id), plus counts for asset metadata."""

    dropped: dict[tuple[str, str], NearDuplicate] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)


def _load_manifest(sig_dir: Path) -> dict:
    path = sig_dir / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"no MinHash signatures at {sig_dir} (missing {MANIFEST})")
    return json.loads(path.read_text())


def _order_partitions(names: Iterable[str], priority: Sequence[str]) -> list[str]:
    rank = {p: i for i, p in enumerate(priority)}
    return sorted(names, key=lambda p: (rank.get(p, len(rank)), p))


DocKey = tuple[str, str]  # (partition, doc_id)


def _load_partitions(partitions: Mapping[str, Path | str],
                     priority: Sequence[str]) -> tuple[list[str], dict[str, dict], MinhashSpec]:
    names = _order_partitions(partitions, priority)
    manifests = {p: _load_manifest(Path(partitions[p])) for p in names}
    specs = {json.dumps(m["spec"], sort_keys=True) for m in manifests.values()}
    if len(specs) > 1:
        raise ValueError(f"partitions were signed with different MinHash specs: {sorted(specs)}")
    spec = MinhashSpec(**manifests[names[0]]["spec"]) if names else DEFAULT_SPEC
    return names, manifests, spec


def candidate_pairs(partitions: Mapping[str, Path | str],
                    priority: Sequence[str] = ()) -> set[tuple[DocKey, DocKey]]:
    """The LSH stage alone: every pair sharing a bucket, as sorted ((p, id), (p, id)) tuples
    (the pairs datatrove's ``MinhashDedupBuckets`` finds in the same files). No Jaccard check."""
    return _candidates(partitions, *_load_partitions(partitions, priority))


def _candidates(partitions: Mapping[str, Path | str], names: list[str], manifests: dict[str, dict],
                spec: MinhashSpec, threads: int = 1) -> set[tuple[DocKey, DocKey]]:
    if not names:
        return set()
    # one band (bucket_XXX) of every partition at a time: memory is one band's records
    raw = mnp.bucket_pairs([Path(partitions[p]) for p in names], spec.buckets, spec.hashes_per_bucket, threads)
    ids = {p: manifests[p]["doc_ids"] for p in names}
    return {tuple(sorted(((names[k1], ids[names[k1]][d1]), (names[k2], ids[names[k2]][d2]))))
            for (k1, d1), (k2, d2) in raw}


def find_near_duplicates(
    partitions: Mapping[str, Path | str],
    texts: Mapping[tuple[str, str], str] | Callable[[str, str], str],
    threshold: float = THRESHOLD,
    priority: Sequence[str] = (),
    threads: int | None = None,
) -> NearDupResult:
    """Cluster near duplicates across all partitions' signature folders.

    Args:
        partitions: partition name -> folder written by :func:`compute_signatures`.
        texts: ``(partition, doc_id) -> text`` (mapping or callable), used to re-shingle the
            docs of candidate pairs for the true-Jaccard check.
        threshold: minimum true Jaccard for a candidate pair to count as a duplicate.
        priority: partition preference; each cluster keeps its member with the lowest
            (partition rank, doc_id), unlisted partitions ranking after listed ones by name.
        threads: threads for the bucket stage (one bucket each) and the re-shingling
            (the CPUs available by default; results do not depend on it).
    """
    text_of = texts if callable(texts) else (lambda p, d: texts[(p, d)])
    return near_duplicates_streaming(partitions, lambda p, ids: ((d, text_of(p, d)) for d in sorted(ids)),
                                     threshold, priority, threads)


TextFetch = Callable[[str, set[str]], Iterable[tuple[str, str]]]


def near_duplicates_streaming(
    partitions: Mapping[str, Path | str],
    fetch: TextFetch,
    threshold: float = THRESHOLD,
    priority: Sequence[str] = (),
    threads: int | None = None,
) -> NearDupResult:
    """:func:`find_near_duplicates` that asks for texts one partition at a time.

    ``fetch(partition, doc_ids)`` yields ``(doc_id, text)`` for (at least) the wanted ids of one
    partition; other ids it yields are skipped, so a reader can stream the partition's rows.
    Only the candidate pairs' documents are shingled and only their shingle sets are kept: the
    texts of one partition are dropped before the next is fetched, so no step holds the corpus.
    """
    threads = default_workers() if threads is None else max(1, threads)
    names, manifests, spec = _load_partitions(partitions, priority)
    result = NearDupResult(stats={"partitions": len(names),
                                  "docs": sum(len(m["doc_ids"]) for m in manifests.values())})
    pairs = sorted(_candidates(partitions, names, manifests, spec, threads))

    # every doc of a candidate pair, shingled once, partition by partition
    keys = sorted({key for pair in pairs for key in pair})
    slot = {key: i for i, key in enumerate(keys)}
    wanted: dict[str, set[str]] = {}
    for p, d in keys:
        wanted.setdefault(p, set()).add(d)
    parts_values: list[np.ndarray] = []
    sizes = np.zeros(len(keys), dtype=np.int64)
    order: list[int] = []  # slot of each fetched set, in fetch order
    for p in names:
        ids = wanted.get(p)
        if not ids:
            continue
        got = {d: t for d, t in fetch(p, set(ids)) if d in ids}
        missing = ids - set(got)
        if missing:
            raise KeyError(f"partition {p!r}: no text for candidate docs {sorted(missing)[:5]}")
        batch = sorted(got)
        values, offsets = _shingle_sets([got[d] for d in batch], spec, threads)
        del got
        parts_values.append(values)
        for j, d in enumerate(batch):
            s = slot[(p, d)]
            order.append(s)
            sizes[s] = offsets[j + 1] - offsets[j]
    # re-lay the sets in slot order (what set_jaccards indexes by)
    fetched = np.concatenate(parts_values) if parts_values else np.empty(0, np.uint64)
    fetch_offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum([sizes[s] for s in order], out=fetch_offsets[1:])
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.uint64)
    for pos, s in enumerate(order):
        values[offsets[s]:offsets[s + 1]] = fetched[fetch_offsets[pos]:fetch_offsets[pos + 1]]
    del fetched, parts_values
    pair_jaccard = mnp.set_jaccards(values, offsets, [slot[a] for a, _ in pairs], [slot[b] for _, b in pairs])

    parent: dict[DocKey, DocKey] = {}

    def find(x: DocKey) -> DocKey:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving keeps the trees flat without recursion
            x = parent[x]
        return x

    rejected = 0
    for (ka, kb), j in zip(pairs, pair_jaccard):
        if j >= threshold:
            ra, rb = find(ka), find(kb)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        else:
            rejected += 1

    rank = {p: i for i, p in enumerate(names)}
    clusters: dict[DocKey, list[DocKey]] = {}
    for key in parent:
        clusters.setdefault(find(key), []).append(key)
    n_clusters = 0
    drops: list[tuple[DocKey, DocKey]] = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        n_clusters += 1
        kept = min(members, key=lambda k: (rank[k[0]], k[1]))
        drops.extend((m, kept) for m in members if m != kept)
    drop_jaccard = mnp.set_jaccards(values, offsets, [slot[m] for m, _ in drops], [slot[k] for _, k in drops])
    for (m, kept), j in zip(drops, drop_jaccard):
        result.dropped[m] = NearDuplicate(m[0], m[1], kept[0], kept[1], round(j, 4))
    result.stats.update(candidate_pairs=len(pairs), rejected_by_jaccard=rejected,
                        clusters=n_clusters, dropped=len(result.dropped),
                        candidate_docs=len(keys), shingles_held=int(values.size))
    return result


def _shingle_sets(texts: Sequence[str], spec: MinhashSpec, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shingles` of each text, concatenated: (values, offsets), see mnp.shingle_sets."""
    return mnp.shingle_sets(texts, spec.n_grams, _TOKENIZER.word_tokenize, regex_tokens=True, threads=threads)
