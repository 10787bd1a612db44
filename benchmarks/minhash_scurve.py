"""MinHash S-curve: detection rate of synthetic pairs at Jaccard 0.5..0.9 vs theory.

Each pair shares a prefix of random letter-only words and ends in its own random suffix, which
fixes the 5-gram Jaccard exactly (the actual value is re-measured and used for the theory).
Pairs of different levels share no words, so every candidate is a planted pair.

For our geometry (32 x 8 = 256 hashes) and datatrove's default (14 x 8 = 112, the baseline) it
prints the LSH candidate rate (datatrove's stages 1-2), the theoretical 1-(1-J^r)^b averaged
over the pairs, and the drop rate: ours after the true-Jaccard check at 0.7, datatrove's
stock pipeline without a check (every candidate is dropped).

``--speed`` instead times the signature stage on code-like docs: the package's MinHash (compiled
kernels) against datatrove's ``MinhashDedupSignature`` (the reference, same bytes: see
tests/unit/curation/test_minhash_parity.py) and the same arithmetic in plain numpy over the same shingles,
in CPU seconds of this process, with ratios against the kernels.

Run: .venv/bin/python benchmarks/minhash_scurve.py [--pairs 300] [--shingles 200] [--speed [--docs 2000]]
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import tempfile
import time
from pathlib import Path

from loguru import logger

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surrogate_dagster.curation.minhash import (  # noqa: E402
    THRESHOLD,
    MinhashSpec,
    candidate_pairs,
    candidate_probability,
    compute_signatures,
    find_near_duplicates,
    jaccard,
    shingles,
)

LEVELS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
GEOMETRIES = {"ours 32x8": MinhashSpec(buckets=32, hashes_per_bucket=8),
              "datatrove default 14x8": MinhashSpec(buckets=14, hashes_per_bucket=8)}


def make_pairs(n_pairs: int, n_shingles: int, seed: int = 0) -> list[tuple[float, str, str]]:
    """(target J, doc a, doc b): J = s / (2S - s) for s shared of S shingles per doc."""
    rng = random.Random(seed)

    def words(k: int) -> list[str]:
        return ["".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(k)]

    out = []
    for target in LEVELS:
        shared = round(2 * n_shingles * target / (1 + target))  # shared 5-grams
        unique = n_shingles - shared
        for _ in range(n_pairs):
            prefix = words(shared + 4)  # shared + 4 tokens give `shared` full 5-grams
            out.append((target, " ".join(prefix + words(unique)), " ".join(prefix + words(unique))))
    return out


def run(n_pairs: int, n_shingles: int) -> None:
    pairs = make_pairs(n_pairs, n_shingles)
    docs = [(f"{i}a", a) for i, (_, a, _) in enumerate(pairs)] + [(f"{i}b", b) for i, (_, _, b) in enumerate(pairs)]
    texts = {("bench", d): t for d, t in docs}
    true_j = [jaccard(shingles(a), shingles(b)) for _, a, b in pairs]
    print(f"{len(pairs)} pairs ({n_pairs} per level), ~{n_shingles} 5-gram shingles per doc, threshold {THRESHOLD}")

    rows: dict[str, dict] = {}
    for name, spec in GEOMETRIES.items():
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            compute_signatures(docs, Path(tmp) / "bench", spec)
            t1 = time.perf_counter()
            cands = candidate_pairs({"bench": Path(tmp) / "bench"})
            t2 = time.perf_counter()
            res = find_near_duplicates({"bench": Path(tmp) / "bench"}, texts) if name.startswith("ours") else None
            t3 = time.perf_counter()
        found = {int(a[1][:-1]) for a, b in cands if a[1][:-1] == b[1][:-1]}
        stray = sum(1 for a, b in cands if a[1][:-1] != b[1][:-1])
        dropped = {int(k[1][:-1]) for k in res.dropped} if res else found
        per = {}
        for target in LEVELS:
            idx = [i for i, (t, _, _) in enumerate(pairs) if t == target]
            js = [true_j[i] for i in idx]
            per[target] = dict(
                j=sum(js) / len(js),
                lsh=sum(i in found for i in idx) / len(idx),
                theory=sum(candidate_probability(j, spec.buckets, spec.hashes_per_bucket) for j in js) / len(js),
                drop=sum(i in dropped for i in idx) / len(idx),
                should=sum(j >= THRESHOLD for j in js) / len(js))
        rows[name] = per
        extra = f", cluster+check {t3 - t2:.1f}s" if res else ""
        print(f"{name}: signatures {t1 - t0:.1f}s, buckets {t2 - t1:.1f}s{extra}; "
              f"{len(cands)} candidate pairs, {stray} between unrelated docs")

    ours, base = rows["ours 32x8"], rows["datatrove default 14x8"]
    print()
    print("  J     | 32x8 LSH  theory  ratio | 32x8 dropped (checked) | 14x8 LSH  theory  ratio "
          "| 14x8 dropped (no check) | should drop")
    for t in LEVELS:
        o, b = ours[t], base[t]
        print(f"  {o['j']:.3f} | {o['lsh']:7.3f}  {o['theory']:6.3f}  {_ratio(o['lsh'], o['theory']):5} "
              f"| {o['drop']:22.3f} | {b['lsh']:7.3f}  {b['theory']:6.3f}  {_ratio(b['lsh'], b['theory']):5} "
              f"| {b['drop']:23.3f} | {o['should']:.2f}")
    above = [t for t in LEVELS if ours[t]["j"] >= THRESHOLD]
    below = [t for t in LEVELS if ours[t]["j"] < THRESHOLD]

    def mean(key: str, geo: dict, levels: list[float]) -> float:
        return sum(geo[t][key] for t in levels) / len(levels)

    print()
    print(f"recall on pairs with J >= {THRESHOLD}: ours {mean('drop', ours, above):.3f}, "
          f"datatrove 14x8 {mean('drop', base, above):.3f} "
          f"(ratio {_ratio(mean('drop', ours, above), mean('drop', base, above))})")
    print(f"wrongly dropped pairs with J < {THRESHOLD}: ours {mean('drop', ours, below):.3f}, "
          f"datatrove 14x8 {mean('drop', base, below):.3f}")


def speed(n_docs: int) -> None:
    import numpy as np
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import MinhashDedupSignature

    from surrogate_dagster.curation import minhash_numpy as mnp
    from surrogate_dagster.curation.minhash import DEFAULT_SPEC, RegexWordTokenizer, shingle_hashes

    rng = random.Random(0)
    vocab = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 8))) for _ in range(5000)]
    docs = [(str(i), "\n".join(f"{rng.choice(vocab)} = {rng.choice(vocab)}({', '.join(rng.choices(vocab, k=3))})"
                               for _ in range(60))) for i in range(n_docs)]
    mb = sum(len(t) for _, t in docs) / 1e6
    compute_signatures(docs[:5], Path(tempfile.mkdtemp()) / "warm")  # numba compile/load outside the clock
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.process_time()
        compute_signatures(docs, Path(tmp) / "ours")
        cpu["kernels (package)"] = time.process_time() - t
        block = MinhashDedupSignature(output_folder=str(Path(tmp) / "dt"), config=DEFAULT_SPEC.config(),
                                      language=RegexWordTokenizer())
        t = time.process_time()
        block.run((Document(text=x, id=i) for i, x in docs), rank=0, world_size=1)
        cpu["datatrove MinhashDedupSignature"] = time.process_time() - t
        a, b = mnp.permutation_params(DEFAULT_SPEC.seed, DEFAULT_SPEC.num_hashes)
        t = time.process_time()
        with np.errstate(over="ignore"):
            for _, x in docs:
                sh = shingle_hashes(x)
                for s0 in range(0, sh.size, 512):  # 512 x 256 blocks: datatrove's expression
                    np.min((sh[s0:s0 + 512, None] * a + b) % mnp.MERSENNE, axis=0)
        cpu["plain numpy arithmetic"] = time.process_time() - t
    print(f"signature stage, {n_docs} code docs ({mb:.1f} MB), CPU seconds (shared box: +-20%):")
    base = cpu["kernels (package)"]
    for name, v in cpu.items():
        print(f"  {name:34s} {v:7.2f}s  {v / base:6.1f}x the kernels")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=300, help="pairs per Jaccard level")
    ap.add_argument("--shingles", type=int, default=200, help="5-gram shingles per document")
    ap.add_argument("--speed", action="store_true", help="time the signature stage instead")
    ap.add_argument("--docs", type=int, default=2000, help="documents for --speed")
    args = ap.parse_args()
    logger.disable("datatrove")  # its per-bucket INFO lines would bury the table
    if args.speed:
        speed(args.docs)
    else:
        run(args.pairs, args.shingles)
