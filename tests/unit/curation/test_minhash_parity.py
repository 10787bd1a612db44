"""The package's one MinHash (compiled kernels) against datatrove's MinHash blocks, the reference:
same signature files byte for byte, same candidate pairs, same duplicate clusters."""

from __future__ import annotations

import os
import random
import string
from pathlib import Path

import numpy as np
import pytest
from datatrove.data import Document
from datatrove.pipeline.dedup.minhash import SENTINEL, MinhashDedupBuckets, MinhashDedupSignature
from datatrove.utils.binaryio import read_tuples_from_file
from loguru import logger

from surrogate_dagster.curation import minhash_numpy as mnp
from surrogate_dagster.curation.minhash import (
    DEFAULT_SPEC,
    MinhashSpec,
    RegexWordTokenizer,
    candidate_pairs,
    compute_signatures,
    find_near_duplicates,
    shingle_hashes,
)

logger.disable("datatrove")


def _words(rng: random.Random, k: int) -> list[str]:
    return ["".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(k)]


def _code_doc(rng: random.Random, lines: int = 40) -> str:
    out = [f"    {a} = {b}({c}, x) + {rng.choice(['1', 'n', c])}" for a, b, c in (_words(rng, 3) for _ in range(lines))]
    return "def " + _words(rng, 1)[0] + "(x, y):\n" + "\n".join(out)


def _edit(rng: random.Random, text: str, frac: float) -> str:
    lines = text.split("\n")
    for i in rng.sample(range(1, len(lines)), int(frac * len(lines))):
        lines[i] = "    " + " ".join(_words(rng, 4))
    return "\n".join(lines)


def _corpus() -> list[tuple[str, str]]:
    rng = random.Random(5)
    docs = [(f"c{i}", _code_doc(rng, lines=rng.randint(1, 30))) for i in range(40)]
    docs += [("empty", ""), ("short", "x = 1"), ("spaces", " \t\n "), ("num", "v = 3.14 + 2,5 + ٣٤ x y z w"),
             ("uni", "Ça coûte 3,50 € — naïve café déjà vu, n'est-ce pas? x = f(a, b) + 1"),
             ("ws", "a\u00a0b\u2000c\td\n\ne\u3000f g h i j k"), ("long", _code_doc(rng, lines=400))]
    docs += [("dup1", docs[0][1]), ("dup2", docs[0][1]), ("dup3", _edit(rng, docs[1][1], 0.05))]
    return docs


def _datatrove_block(folder: Path) -> MinhashDedupSignature:
    return MinhashDedupSignature(output_folder=str(folder), config=DEFAULT_SPEC.config(),
                                 language=RegexWordTokenizer())


def _datatrove_pairs(dirs: dict[str, Path], order: list[str], scratch: Path) -> set:
    """datatrove's bucket stage over the partitions' own files (partition k = file k), as
    ((partition, doc_id), (partition, doc_id)) pairs."""
    import json

    for b in range(DEFAULT_SPEC.buckets):
        bucket = scratch / "sigs" / f"bucket_{b:03d}"
        bucket.mkdir(parents=True)
        for k, name in enumerate(order):
            os.symlink(dirs[name].resolve() / f"bucket_{b:03d}" / mnp.SIG_FILE, bucket / f"{k:05d}.minhash.sig")
    for b in range(DEFAULT_SPEC.buckets):
        MinhashDedupBuckets(input_folder=str(scratch / "sigs"), output_folder=str(scratch / "dups"),
                            config=DEFAULT_SPEC.config()).run(rank=b, world_size=DEFAULT_SPEC.buckets)
    ids = {k: json.loads((dirs[n] / "manifest.json").read_text())["doc_ids"] for k, n in enumerate(order)}
    pairs = set()
    for dup_file in sorted((scratch / "dups").glob("*.dups")):
        with open(dup_file, "rb") as fh:
            for f1, d1, f2, d2 in read_tuples_from_file(fh, "4I", lines_to_buffer=4096):
                if f1 != SENTINEL:
                    pairs.add(tuple(sorted(((order[f1], ids[f1][d1]), (order[f2], ids[f2][d2])))))
    return pairs


def test_signature_files_equal_datatrove_bytes(tmp_path: Path) -> None:
    docs = _corpus()
    ref = tmp_path / "dt"
    _datatrove_block(ref).run((Document(text=t, id=i) for i, t in docs), rank=0, world_size=1)
    got = compute_signatures(docs, tmp_path / "ours")
    threaded = compute_signatures(docs, tmp_path / "threads", workers=2)
    assert got.n_without_shingles == threaded.n_without_shingles == 3
    files = sorted(p.relative_to(ref) for p in ref.rglob("*.sig"))
    assert len(files) == 32
    for rel in files:
        assert (tmp_path / "ours" / rel).read_bytes() == (ref / rel).read_bytes(), rel
        assert (tmp_path / "threads" / rel).read_bytes() == (ref / rel).read_bytes(), rel


def test_shingles_and_parameters_equal_datatrove_block(tmp_path: Path) -> None:
    block = _datatrove_block(tmp_path)
    a, b = mnp.permutation_params(DEFAULT_SPEC.seed, DEFAULT_SPEC.num_hashes)
    assert (a == block.parameters[0].ravel()).all() and (b == block.parameters[1].ravel()).all()
    for _, text in _corpus():
        assert (shingle_hashes(text) == block.get_shingles(text).ravel()).all()
        assert (shingle_hashes(text, compiled=False) == block.get_shingles(text).ravel()).all()


def test_candidate_pairs_and_clusters_equal_datatrove(tmp_path: Path) -> None:
    rng = random.Random(8)
    bases = [_code_doc(rng) for _ in range(10)]
    parts: dict[str, list[tuple[str, str]]] = {"alpha": [], "beta": [], "gamma": []}
    for i, base in enumerate(bases):
        parts["alpha"].append((f"b{i}", base))
        parts["beta" if i % 2 else "gamma"].append((f"n{i}", _edit(rng, base, 0.05)))
        parts["gamma"].append((f"u{i}", _code_doc(rng)))
    same = _code_doc(rng)
    for k, name in enumerate(parts):  # one text in every partition, twice in one: chains of pairs
        parts[name] += [(f"same{k}", same), (f"near{k}", _edit(rng, same, 0.05))]
    parts["alpha"].append(("same_again", same))
    dirs = {name: Path(compute_signatures(docs, tmp_path / name).out_dir) for name, docs in parts.items()}
    order = ["beta", "alpha", "gamma"]
    ours = candidate_pairs(dirs, priority=order)
    assert ours == _datatrove_pairs(dirs, order, tmp_path / "scratch") and len(ours) >= 12
    # the same clusters as datatrove's pairs give, each verified by its true Jaccard
    texts = {(p, d): t for p, docs in parts.items() for d, t in docs}
    res = find_near_duplicates(dirs, texts, priority=order)
    assert {k for k in res.dropped} >= {("gamma", "same2"), ("alpha", "same0"), ("alpha", "same_again")}


def test_the_kernel_minhash_is_datatrove_arithmetic_including_the_rare_reduction() -> None:
    rng = np.random.default_rng(0)
    a, b = mnp.permutation_params(1, 256)
    sh = rng.integers(0, np.iinfo(np.uint64).max, 2000, dtype=np.uint64, endpoint=True)
    with np.errstate(over="ignore"):
        ref = np.min((sh[:, None] * a + b) % mnp.MERSENNE, axis=0)  # datatrove's expression
    assert (mnp.minhash(sh, a, b) == ref).all()
    # x = 2^62 - 1: (x & p) + (x >> 61) = p + 1 >= p, the case the fast reduction must fix
    edge = np.array([(1 << 62) - 1], dtype=np.uint64)
    assert mnp.minhash(edge, np.ones(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64))[0] == 1


def test_only_the_kernels_sign_and_unsupported_specs_are_refused(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(ValueError, match="remove_punctuation"):
        MinhashSpec(remove_punctuation=True)
    monkeypatch.setattr(mnp, "_KERNELS", False)  # numba disabled: no silent slower path
    with pytest.raises(RuntimeError, match="compiled kernels"):
        compute_signatures([("a", "one two three four five six")], tmp_path / "x")
