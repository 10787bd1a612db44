"""Exact dedup across sources and MinHash near dedup (geometry, planted pairs, Jaccard check,
incremental per-partition signatures)."""

from __future__ import annotations

import hashlib
import random
import string
from pathlib import Path

import numpy as np
import pytest

from surrogate_dagster.curation.exact_dedup import ExactDeduper, normalize_for_hash, sha256_text
from surrogate_dagster.curation.minhash import (
    DEFAULT_SPEC,
    MinhashSpec,
    RegexWordTokenizer,
    THRESHOLD,
    candidate_probability,
    compute_signatures,
    find_near_duplicates,
    jaccard,
    shingles,
)

# ----------------------------------------------------------------------------- exact


def test_normalize_collapses_whitespace_and_nfc() -> None:
    assert normalize_for_hash("  def f():\n\t  return 1  \n") == "def f(): return 1"
    assert sha256_text("caf\u0065\u0301") == sha256_text("caf\u00e9")  # NFD == NFC
    assert sha256_text("a  b") == sha256_text("a\nb")
    assert sha256_text("a b") != sha256_text("ab")
    assert sha256_text("x") == hashlib.sha256(b"x").hexdigest()


def test_exact_dedup_across_sources_keeps_priority_source() -> None:
    rows = [
        ("src_b", "2", "print('hello')\n"),
        ("src_a", "9", "print('hello')"),
        ("src_c", "1", "  print('hello')  "),
        ("src_b", "1", "something else"),
        ("src_c", "2", "something   else"),
        ("src_c", "3", "unique text"),
    ]
    dropped = ExactDeduper(source_priority=["src_c", "src_a"]).find_duplicates(rows)
    # src_c listed first wins; among its rows the lowest id; unlisted src_b ranks last
    assert set(dropped) == {("src_a", "9"), ("src_b", "2"), ("src_b", "1")}
    assert (dropped[("src_a", "9")].kept_source, dropped[("src_a", "9")].kept_id) == ("src_c", "1")
    assert (dropped[("src_b", "1")].kept_source, dropped[("src_b", "1")].kept_id) == ("src_c", "2")
    assert all(d.reason == "exact_duplicate" for d in dropped.values())


def test_exact_dedup_is_order_independent() -> None:
    rows = [(f"s{i % 3}", str(i), f"text {i % 5}") for i in range(30)]
    a = ExactDeduper().find_duplicates(rows)
    b = ExactDeduper().find_duplicates(list(reversed(rows)))
    assert a == b and len(a) == 25


def test_exact_dedup_rejects_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="duplicate row key"):
        ExactDeduper().find_duplicates([("s", "1", "a"), ("s", "1", "b")])


# ----------------------------------------------------------------------------- MinHash helpers

_rng = random.Random(1234)


def _words(rng: random.Random, k: int) -> list[str]:
    # letters only: datatrove's normalizer maps every digit run to "0"
    return ["".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(k)]


def _code_doc(rng: random.Random, lines: int = 40) -> str:
    out = []
    for _ in range(lines):
        a, b, c = _words(rng, 3)
        out.append(f"    {a} = {b}({c}, {rng.choice(['x', 'y', 'self.z'])}) + {rng.choice(['1', 'n', c])}")
    return "def " + _words(rng, 1)[0] + "(x, y):\n" + "\n".join(out)


def _edit(rng: random.Random, text: str, frac: float) -> str:
    """Replace a fraction of the lines (a realistic near-duplicate: a few lines changed)."""
    lines = text.split("\n")
    for i in rng.sample(range(1, len(lines)), int(frac * len(lines))):
        lines[i] = "    " + " ".join(_words(rng, 4))
    return "\n".join(lines)


def _pair_at(rng: random.Random, shared: int, unique: int) -> tuple[str, str]:
    """Two docs whose 5-gram sets have Jaccard (shared-4)/(shared-4+2*unique) exactly."""
    prefix = _words(rng, shared)
    return " ".join(prefix + _words(rng, unique)), " ".join(prefix + _words(rng, unique))


# ----------------------------------------------------------------------------- geometry


def test_geometry_multiplies_to_256_and_s_curve_at_threshold() -> None:
    b, r = DEFAULT_SPEC.buckets, DEFAULT_SPEC.hashes_per_bucket
    assert b * r == 256 and DEFAULT_SPEC.num_hashes == 256 and DEFAULT_SPEC.n_grams == 5
    assert THRESHOLD == 0.7
    assert candidate_probability(0.7, b, r) == pytest.approx(0.850, abs=0.002)
    assert candidate_probability(0.8, b, r) > 0.99
    assert candidate_probability(0.5, b, r) < 0.15
    # the chosen geometry beats datatrove's default 14x8 at the runbook's threshold
    assert candidate_probability(0.7, b, r) > candidate_probability(0.7, 14, 8) + 0.25


def test_shingles_equal_datatrove_own_normalization() -> None:
    """Our tokenizer does the diacritics step datatrove would do in simplify_text: same shingles."""
    from datatrove.pipeline.dedup.minhash import MinhashDedupSignature
    from datatrove.utils.text import TextNormConfig

    stock = DEFAULT_SPEC.config()
    stock = type(stock)(**{**stock.__dict__, "norm_config": TextNormConfig(remove_punctuation=False)})

    class PlainRegex(RegexWordTokenizer):
        def word_tokenize(self, text: str) -> list[str]:
            return self._TOKEN.findall(text)

    ref = MinhashDedupSignature("/tmp", config=stock, language=PlainRegex())
    for text in ["Ça coûte 3,50 € — naïve café déjà vu, n'est-ce pas? x = f(a, b) + 1",
                 "def f(x):\n    return x ** 2  # plain ASCII\n" * 3]:
        assert (shingles(text) == np.unique(ref.get_shingles(text).ravel())).all()
        assert shingles(text).size > 5


def test_pair_construction_has_the_intended_jaccard() -> None:
    a, b = _pair_at(_rng, 124, 40)
    assert jaccard(shingles(a), shingles(b)) == pytest.approx(0.6, abs=1e-9)


# ----------------------------------------------------------------------------- clustering


def _sign_all(tmp: Path, parts: dict[str, list[tuple[str, str]]]) -> dict[str, Path]:
    dirs = {}
    for name, docs in parts.items():
        dirs[name] = tmp / "sigs" / name
        compute_signatures(docs, dirs[name])
    return dirs


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(7)
    bases = [_code_doc(rng) for _ in range(12)]
    parts: dict[str, list[tuple[str, str]]] = {"alpha": [], "beta": [], "gamma": []}
    for i, base in enumerate(bases[:6]):  # 6 planted cross-source pairs, 5% of lines changed
        parts["alpha"].append((f"a{i}", base))
        parts["beta" if i % 2 else "gamma"].append((f"n{i}", _edit(rng, base, 0.05)))
    for i, base in enumerate(bases[6:]):  # unrelated docs
        parts[["alpha", "beta", "gamma"][i % 3]].append((f"u{i}", base))
    parts["gamma"].append(("short", "x = 1"))  # fewer than 5 tokens: never a candidate
    return parts


def test_planted_near_duplicates_found_across_sources(tmp_path: Path, corpus) -> None:
    texts = {(p, d): t for p, docs in corpus.items() for d, t in docs}
    res = find_near_duplicates(_sign_all(tmp_path, corpus), texts, priority=["alpha"])
    assert set(res.dropped) == {("beta", f"n{i}") for i in (1, 3, 5)} | {("gamma", f"n{i}") for i in (0, 2, 4)}
    for (p, d), dup in res.dropped.items():
        assert dup.reason == "near_duplicate"
        assert (dup.kept_partition, dup.kept_doc_id) == ("alpha", "a" + d[1:])
        assert dup.jaccard >= THRESHOLD
    assert res.stats["clusters"] == 6 and res.stats["rejected_by_jaccard"] == 0


def test_keep_choice_follows_priority(tmp_path: Path, corpus) -> None:
    texts = {(p, d): t for p, docs in corpus.items() for d, t in docs}
    res = find_near_duplicates(_sign_all(tmp_path, corpus), texts, priority=["beta", "gamma"])
    assert ("alpha", "a1") in res.dropped and res.dropped[("alpha", "a1")].kept_partition == "beta"
    assert ("alpha", "a0") in res.dropped and res.dropped[("alpha", "a0")].kept_partition == "gamma"


def test_true_jaccard_check_rejects_candidates_below_threshold(tmp_path: Path) -> None:
    rng = random.Random(99)
    docs = []
    for i in range(20):  # 20 pairs at J = 0.6: P(candidate) = 0.42 under 32x8
        a, b = _pair_at(rng, 124, 40)
        docs += [(f"p{i}a", a), (f"p{i}b", b)]
    dirs = _sign_all(tmp_path, {"only": docs})
    texts = {("only", d): t for d, t in docs}
    res = find_near_duplicates(dirs, texts)
    assert res.stats["candidate_pairs"] >= 3  # LSH proposes some of them...
    assert res.stats["rejected_by_jaccard"] == res.stats["candidate_pairs"]  # ...the check rejects all
    assert res.dropped == {}
    # the same candidates pass a 0.5 threshold: the check, not the LSH, made the decision
    loose = find_near_duplicates(dirs, texts, threshold=0.5)
    assert len(loose.dropped) == res.stats["candidate_pairs"]


def _fingerprint(folder: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_recomputing_one_partition_leaves_others_untouched(tmp_path: Path, corpus) -> None:
    texts = {(p, d): t for p, docs in corpus.items() for d, t in docs}
    dirs = _sign_all(tmp_path, corpus)
    before = find_near_duplicates(dirs, texts, priority=["alpha"])
    others = {p: _fingerprint(dirs[p]) for p in ("alpha", "gamma")}
    beta_before = _fingerprint(dirs["beta"])

    stats = compute_signatures(corpus["beta"], dirs["beta"])  # re-curate one source
    assert stats.n_docs == len(corpus["beta"])
    assert {p: _fingerprint(dirs[p]) for p in ("alpha", "gamma")} == others
    beta_after = _fingerprint(dirs["beta"])
    assert {k: v[1] for k, v in beta_after.items()} == {k: v[1] for k, v in beta_before.items()}
    assert any(beta_after[k][0] != beta_before[k][0] for k in beta_after)  # really rewritten
    assert find_near_duplicates(dirs, texts, priority=["alpha"]).dropped == before.dropped

    # a changed source: its duplicates disappear, the other sources' signatures stay as they were
    changed = [(d, t) if d.startswith("u") else (d, "completely new content " + d * 40) for d, t in corpus["beta"]]
    compute_signatures(changed, dirs["beta"])
    texts.update({("beta", d): t for d, t in changed})
    after = find_near_duplicates(dirs, texts, priority=["alpha"])
    assert {p: _fingerprint(dirs[p]) for p in ("alpha", "gamma")} == others
    assert set(after.dropped) == {k for k in before.dropped if k[0] != "beta"}


def test_signature_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate doc id"):
        compute_signatures([("a", "one two three four five six"), ("a", "x")], tmp_path / "p")
    assert not (tmp_path / "p").exists()  # a failed run leaves nothing half-written
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        find_near_duplicates({"p": tmp_path / "p"}, {})
    with pytest.raises(TypeError, match="text is NoneType"):
        compute_signatures([("a", None)], tmp_path / "p")
    doc = [("a", "one two three four five six seven")]
    compute_signatures(doc, tmp_path / "p32")
    compute_signatures(doc, tmp_path / "p14", MinhashSpec(buckets=14, hashes_per_bucket=8))
    with pytest.raises(ValueError, match="different MinHash specs"):
        find_near_duplicates({"a": tmp_path / "p32", "b": tmp_path / "p14"}, {})


# ----------------------------------------------------------------------------- kernels


def _engine_corpus() -> list[tuple[str, str]]:
    rng = random.Random(5)
    docs = [(f"c{i}", _code_doc(rng, lines=rng.randint(1, 30))) for i in range(40)]
    docs += [("empty", ""), ("short", "x = 1"), ("spaces", " \t\n "), ("num", "v = 3.14 + 2,5 + ٣٤ x y z w"),
             ("uni", "Ça coûte 3,50 € — naïve café déjà vu, n'est-ce pas? x = f(a, b) + 1"),
             ("ws", "a\u00a0b\u2000c\td\n\ne\u3000f g h i j k"), ("long", _code_doc(rng, lines=400))]
    docs += [("dup1", docs[0][1]), ("dup2", docs[0][1]), ("dup3", _edit(rng, docs[1][1], 0.05))]
    return docs


# ----------------------------------------------------------------------------- exact, incremental


def whitespace_texts() -> list[str]:
    """500 short texts of every kind of whitespace, combining marks and composed characters."""
    rng = random.Random(2)
    pieces = ["a", "b", " ", "\t", "\n", "\x1c", "\x85", "\u00a0", "\u2003", "\u3000", "e\u0301", "é", "\r\n"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(500)]


def test_fast_normalization_equals_the_regex_definition() -> None:
    import re
    import unicodedata

    texts = whitespace_texts()
    for t in texts:
        assert normalize_for_hash(t) == re.sub(r"\s+", " ", unicodedata.normalize("NFC", t)).strip()
    rows = [(f"s{i % 3}", str(i), t) for i, t in enumerate(texts)]
    deduper = ExactDeduper(["s1"])
    assert deduper.find_duplicates_digests((s, i, sha256_text(t)) for s, i, t in rows) == deduper.find_duplicates(rows)


def test_compiled_kernels_equal_xxhash_and_datatrove_shingles() -> None:
    from datatrove.pipeline.dedup.minhash import MinhashDedupSignature

    from surrogate_dagster.curation import minhash_numpy as mnp
    from surrogate_dagster.curation.minhash import shingle_hashes

    k = mnp.kernels()
    if k is None:
        pytest.skip("numba not installed: the Python paths are the only ones")
    import xxhash

    rng = random.Random(0)
    for length in list(range(70)) + [257]:  # every XXH64 tail path and the 32-byte stripes
        data = bytes(rng.randrange(256) for _ in range(length))
        assert k.xxh64(np.frombuffer(data, dtype=np.uint8), 0, length) == xxhash.xxh64_intdigest(data)
    block = MinhashDedupSignature("/tmp", config=DEFAULT_SPEC.config(), language=RegexWordTokenizer())
    pieces = [chr(i) for i in range(128)] + ["12", "3.4", "5,6", "7.", ".8", "1.2.3", "Hello", "x" * 40]
    for _ in range(1500):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        expected = block.get_shingles(text).ravel()
        assert shingle_hashes(text).tolist() == expected.tolist() == shingle_hashes(text, compiled=False).tolist()


def test_signature_files_sort_records_like_a_structured_sort(tmp_path: Path) -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp

    rng = np.random.default_rng(3)
    r, buckets, n = 4, 3, 400
    sigs = rng.integers(0, 2**61, size=(n, buckets * r), dtype=np.uint64)
    sigs[10:20] = sigs[0]  # whole duplicates: ties on every hash, told apart by the doc index
    sigs[30:40, 0] = sigs[1, 0]  # ties on the first hash only (and on the first two below)
    sigs[35:40, 1] = sigs[1, 1]
    sigs[50:60, :r] = 7  # small values: the whole first band equal
    idx = rng.permutation(n).astype(np.uint32)  # doc indices in any order
    mnp.write_signature_files(tmp_path, sigs, idx, buckets, r)
    dtype = mnp.record_dtype(r)
    for bi in range(buckets):
        ref = np.empty(n, dtype=dtype)
        for j in range(r):
            ref[f"field{j + 1}"] = sigs[:, bi * r + j]
        ref[f"field{r + 1}"] = idx
        ref.sort(order=dtype.names)  # datatrove's sort
        assert (tmp_path / f"bucket_{bi:03d}" / mnp.SIG_FILE).read_bytes() == ref.tobytes()
    mnp.write_signature_files(tmp_path / "empty", sigs[:0], idx[:0], buckets, r)
    assert (tmp_path / "empty" / "bucket_000" / mnp.SIG_FILE).read_bytes() == b""


def test_batched_signature_kernel_equals_per_text_path() -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp
    from surrogate_dagster.curation.minhash import _TOKENIZER

    texts = [t for _, t in _engine_corpus()] + ["é", "", "a b c d", "A B C D E", "x" * 3000 + " y z w v"]
    a, b = mnp.permutation_params(DEFAULT_SPEC.seed, DEFAULT_SPEC.num_hashes)
    sigs, idx = mnp.signature_matrix(texts, 5, _TOKENIZER.word_tokenize, a, b, regex_tokens=True)
    with np.errstate(over="ignore"):  # datatrove's expression, per text
        ref = [(i, np.min((sh[:, None] * a + b) % mnp.MERSENNE, axis=0)) for i, t in enumerate(texts)
               if (sh := mnp.shingle_hashes(t, 5, _TOKENIZER.word_tokenize)).size]
    assert idx.tolist() == [i for i, _ in ref]
    assert (sigs == np.array([s for _, s in ref])).all()


def test_compiled_xxh3_equals_xxhash() -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp

    k = mnp.kernels()
    if k is None:
        pytest.skip("numba not installed: the Python paths are the only ones")
    import xxhash

    rng = random.Random(1)
    # every XXH3 size class: 0, 1-3, 4-8, 9-16, 17-128, 129-240, and long inputs (stripes,
    # whole 1024-byte blocks, a partial last block)
    for length in list(range(300)) + [1023, 1024, 1025, 1088, 2047, 2048, 2049, 5000]:
        data = bytes(rng.randrange(256) for _ in range(length))
        pad = bytes(rng.randrange(256) for _ in range(3))
        buf = np.frombuffer(pad + data + pad, dtype=np.uint8)
        assert k.xxh3_64(buf, 3, 3 + length) == xxhash.xxh3_64_intdigest(data), length


def test_digest_kernel_equals_sha256_text() -> None:
    from surrogate_dagster.curation.exact_dedup import digest_texts

    rng = random.Random(4)
    pieces = [chr(i) for i in range(128)] + ["  ", "\t\n", "\x1c\x1f", "word", "é", "\u2003"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(800)]
    texts += ["", " ", "\x0b\x0c", "a", " a ", "a\x1db", "x" * 5000]
    assert digest_texts(texts) == [sha256_text(t) for t in texts]
    with pytest.raises(TypeError):
        digest_texts(["a", None])  # type: ignore[list-item]


def _records(rows: list[tuple[list[int], int]], r: int) -> np.ndarray:
    from surrogate_dagster.curation import minhash_numpy as mnp

    packed = np.dtype([("h", "<u8", (r,)), ("d", "<u4")])
    out = np.array([(h, d) for h, d in rows], dtype=packed)
    assert packed.itemsize == mnp.record_dtype(r).itemsize
    return out


def test_band_pairs_equal_datatrove_order_with_ties_and_key_collisions() -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp

    rng = np.random.default_rng(5)
    r = 3
    m = int(mnp._KEY_MULT)
    common = [int(x) for x in rng.integers(0, 2**61, size=3)]
    files = []
    for f in range(3):  # per file: records sorted by (hashes, doc) as the .sig files hold them
        rows = [([int(x) for x in rng.integers(0, 2**61, size=r)], d) for d in range(40)]
        rows += [([common[0], int(rng.integers(0, 5)), 9], 40 + d) for d in range(15)]  # first-hash ties
        rows += [(common, 60 + d) for d in range(f + 1)]  # whole-signature duplicates across files
        rows.sort(key=lambda x: (*x[0], x[1]))
        files.append(_records(rows, r))
    records = np.concatenate(files)
    sizes = np.array([f.size for f in files], dtype=np.int64)
    fast = mnp._band_pairs(records, sizes)
    assert sorted(fast) == sorted(mnp._band_pairs_exact(records, sizes))
    assert len(fast) >= 5
    # two different signatures with the same 64-bit key: the band falls back to the exact order
    a = [5, 7, 11]
    b = [5, 8, (11 - m) % 2**64]
    c = [5, 7, 11]
    coll = [_records(sorted([(a, 0), (b, 1)], key=lambda x: (*x[0], x[1])), r), _records([(c, 0), (b, 1)], r)]
    records = np.concatenate(coll)
    sizes = np.array([2, 2], dtype=np.int64)
    with np.errstate(over="ignore"):
        key = lambda s: ((np.uint64(s[0]) * mnp._KEY_MULT + np.uint64(s[1])) * mnp._KEY_MULT + np.uint64(s[2]))
        assert key(a) == key(b)
    assert sorted(mnp._band_pairs(records, sizes)) == sorted(mnp._band_pairs_exact(records, sizes)) \
        == [((0, 0), (1, 0)), ((0, 1), (1, 1))]


def test_threads_do_not_change_signatures_shingle_sets_or_clusters(tmp_path: Path, corpus) -> None:
    from surrogate_dagster.curation import minhash_numpy as mnp
    from surrogate_dagster.curation.minhash import _TOKENIZER

    texts = [t for _, t in _engine_corpus()] + ["é è a b c d e", "", "a b c d", "x" * 3000 + " y z w v"]
    a, b = mnp.permutation_params(DEFAULT_SPEC.seed, DEFAULT_SPEC.num_hashes)
    one = mnp.signature_matrix(texts, 5, _TOKENIZER.word_tokenize, a, b, regex_tokens=True)
    three = mnp.signature_matrix(texts, 5, _TOKENIZER.word_tokenize, a, b, regex_tokens=True, threads=3)
    assert (one[0] == three[0]).all() and (one[1] == three[1]).all()
    for threads in (1, 3):
        values, offsets = mnp.shingle_sets(texts, 5, _TOKENIZER.word_tokenize, regex_tokens=True, threads=threads)
        for i, t in enumerate(texts):
            assert (values[offsets[i]:offsets[i + 1]] == shingles(t)).all()
        pairs = [(i, j) for i in range(len(texts)) for j in range(len(texts))]
        got = mnp.set_jaccards(values, offsets, [i for i, _ in pairs], [j for _, j in pairs])
        assert got == [jaccard(shingles(texts[i]), shingles(texts[j])) for i, j in pairs]
    dirs = _sign_all(tmp_path, corpus)
    full = {(p, d): t for p, docs in corpus.items() for d, t in docs}
    res1 = find_near_duplicates(dirs, full, priority=["beta"], threads=1)
    res3 = find_near_duplicates(dirs, full, priority=["beta"], threads=3)
    assert res1.dropped == res3.dropped and res1.stats == res3.stats and res1.dropped
