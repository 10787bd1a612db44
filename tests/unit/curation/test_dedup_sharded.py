"""Bounded-memory cross-source dedup decides exactly what the in-memory implementation decides."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from surrogate_dagster.curation.dedup_sharded import cross_source_dedup, exact_from_shards, write_digest_shards
from surrogate_dagster.curation.exact_dedup import ExactDeduper, digest_texts
from surrogate_dagster.curation.minhash import compute_signatures, find_near_duplicates
from surrogate_dagster.paths import FIXTURES_DIR


def _fixture_corpus() -> dict[str, list[tuple[str, str]]]:
    """One source per shipped fixture dataset (its rows' JSON as text), plus planted exact and
    near copies across sources (an edit every ~15 tokens: Jaccard ~0.7-0.9)."""
    rng = random.Random(7)
    corpus: dict[str, list[tuple[str, str]]] = {}
    for path in sorted((FIXTURES_DIR / "hub" / "datasets").glob("*/*/*/*.jsonl"))[:12]:
        name = f"{path.parts[-4]}__{path.parts[-3]}"
        rows = corpus.setdefault(name, [])
        for line in path.read_text().splitlines()[:20]:
            if line.strip():
                rows.append((f"{path.stem}-{len(rows)}", json.dumps(json.loads(line), sort_keys=True)))
    names = sorted(corpus)
    planted = 0
    for k, name in enumerate(names):
        donor = corpus[names[(k + 1) % len(names)]]
        for j, (_, text) in enumerate(donor[:4]):
            if j % 2 == 0:
                copy = "  " + text.replace(" ", "\n ", 3)  # whitespace-only change: exact duplicate
            else:
                words = text.split(" ")
                for w in range(0, len(words), 15):
                    words[w] = rng.choice(["alpha", "beta", "gamma"])
                copy = " ".join(words)
            corpus[name].append((f"planted-{j}", copy))
            planted += 1
    assert planted >= 20
    return corpus


def _in_memory_decisions(corpus, sig_dirs, priority) -> dict[str, dict]:
    """The former dedup_decisions algorithm: one dict of every text, one global exact pass."""
    texts = {(s, i): t for s in priority for i, t in corpus[s]}
    keys = list(texts)
    digests = digest_texts([texts[k] for k in keys])
    exact = ExactDeduper(source_priority=priority).find_duplicates_digests(
        (s, i, d) for (s, i), d in zip(keys, digests))
    decisions = {f"{s}\t{i}": {"reason": "exact_duplicate", "kept": [d.kept_source, d.kept_id]}
                 for (s, i), d in exact.items()}
    near = find_near_duplicates(sig_dirs, texts, priority=priority)
    for (s, i), nd in near.dropped.items():
        if f"{s}\t{i}" not in decisions:
            decisions[f"{s}\t{i}"] = {"reason": "near_duplicate", "kept": [nd.kept_partition, nd.kept_doc_id],
                                      "jaccard": round(nd.jaccard, 3)}
    return decisions


def test_sharded_decisions_equal_in_memory_decisions_on_fixtures(tmp_path: Path) -> None:
    corpus = _fixture_corpus()
    priority = sorted(corpus, reverse=True)  # not alphabetical: the priority must matter
    sig_dirs = {s: compute_signatures(corpus[s], tmp_path / "sigs" / s).out_dir for s in priority}
    ref = _in_memory_decisions(corpus, sig_dirs, priority)
    reads: list[str] = []

    def read_texts(source: str):
        reads.append(source)
        return iter(corpus[source])

    for shards in (1, 7):
        reads.clear()
        out = cross_source_dedup(priority, read_texts, sig_dirs, tmp_path / "work", shards=shards, batch_rows=5)
        assert out.decisions == ref
        assert {"exact_duplicate", "near_duplicate"} <= {v["reason"] for v in ref.values()}
        # each source is read once for digests, once more only if it holds a candidate doc
        assert reads[:len(priority)] == priority and len(reads) <= 2 * len(priority)
        assert out.stats["near"]["candidate_docs"] < out.stats["docs"]
    assert not list((tmp_path / "work").glob("dedup-shards*"))  # scratch removed


def test_two_runs_at_once_keep_their_own_scratch(tmp_path: Path) -> None:
    """A second dedup starting while the first is between writing and reading its shards neither
    deletes the first one's shards nor changes its decisions."""
    from surrogate_dagster.curation import dedup_sharded

    corpus = _fixture_corpus()
    priority = sorted(corpus)
    sig_dirs = {s: compute_signatures(corpus[s], tmp_path / "sigs" / s).out_dir for s in priority}
    alone = cross_source_dedup(priority, lambda s: iter(corpus[s]), sig_dirs, tmp_path / "work", shards=3).decisions
    real_exact = dedup_sharded.exact_from_shards
    inner = {}

    def exact_with_a_second_run_in_between(scratch, sources, shards):
        if "out" in inner:  # the second run itself
            return real_exact(scratch, sources, shards)
        inner["out"] = {}
        inner["out"] = cross_source_dedup(priority, lambda s: iter(corpus[s]), sig_dirs, tmp_path / "work",
                                          shards=3).decisions
        return real_exact(scratch, sources, shards)

    dedup_sharded.exact_from_shards = exact_with_a_second_run_in_between
    try:
        outer = cross_source_dedup(priority, lambda s: iter(corpus[s]), sig_dirs, tmp_path / "work", shards=3).decisions
    finally:
        dedup_sharded.exact_from_shards = real_exact
    assert outer == inner["out"] == alone


def test_calls_on_threads_sharing_a_work_dir_decide_as_one_alone(tmp_path: Path) -> None:
    """Four dedups on threads, one work dir, each source read slowly so their passes interleave:
    every one decides what the in-memory reference decides, and only their own scratch is removed."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    corpus = _fixture_corpus()
    priority = sorted(corpus)
    sig_dirs = {s: compute_signatures(corpus[s], tmp_path / "sigs" / s).out_dir for s in priority}
    ref = _in_memory_decisions(corpus, sig_dirs, priority)
    work = tmp_path / "work"
    work.mkdir()
    (work / "someone-else").mkdir()  # not this function's: must survive
    start = threading.Barrier(4)

    def slow(source: str):
        for pair in corpus[source]:
            time.sleep(0.0005)
            yield pair

    def one(_: int) -> dict:
        start.wait()
        return cross_source_dedup(priority, slow, sig_dirs, work, shards=3, batch_rows=4).decisions

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(one, range(4)))
    assert all(out == ref for out in outs)
    assert [p.name for p in work.iterdir()] == ["someone-else"]


def test_digest_shards_hold_each_digest_once_and_reject_repeated_ids(tmp_path: Path) -> None:
    corpus = {"a": [("1", "x y"), ("2", "same text")], "b": [("1", "same   text"), ("2", "other")]}
    write_digest_shards(["b", "a"], lambda s: corpus[s], tmp_path / "d", shards=4)
    lines = [json.loads(x) for f in sorted((tmp_path / "d").glob("*.jsonl")) for x in f.read_text().splitlines()]
    assert len(lines) == 4
    for d, _, _ in lines:  # every copy of a digest sits in one shard
        assert sum(d in f.read_text() for f in (tmp_path / "d").glob("*.jsonl")) == 1
    dropped = exact_from_shards(tmp_path / "d", ["b", "a"], shards=4)
    assert list(dropped) == [("a", "2")] and dropped[("a", "2")].kept_source == "b"
    with pytest.raises(ValueError, match="unique per source"):
        write_digest_shards(["a"], lambda s: [("1", "p"), ("1", "q")], tmp_path / "e")


def test_missing_signatures_and_texts_are_errors(tmp_path: Path) -> None:
    docs = [("1", "one two three four five six"), ("2", "one two three four five six")]
    sig = compute_signatures(docs, tmp_path / "s").out_dir
    with pytest.raises(ValueError, match="no signature folder"):
        cross_source_dedup(["s", "t"], lambda s: docs, {"s": sig}, tmp_path / "w")
    # candidate docs a reader no longer yields (stale signatures) are named, not skipped
    calls = iter([docs, [("1", docs[0][1])]])
    with pytest.raises(KeyError, match="no text for candidate docs"):
        cross_source_dedup(["s"], lambda s: next(calls), {"s": sig}, tmp_path / "w")
