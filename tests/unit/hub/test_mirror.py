"""Mirroring: filters with coercion, caps across configs, quarantine, shortfall, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surrogate_dagster.catalog.models import RowFilter, SourceSpec
from surrogate_dagster.hub import OfflineHub, RevisionNotFound
from surrogate_dagster.sources.filters import Uncoercible, passes
from surrogate_dagster.sources.mirror import mirror_source, read_latest
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows

REV = "a" * 40


def _mirror(tmp_path: Path, files: dict[str, list], rev: str = REV) -> OfflineHub:
    repo = tmp_path / "hub" / "datasets" / "org" / "ds"
    for rel, rows in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    (repo / "revision.txt").write_text(rev + "\n")
    return OfflineHub(tmp_path / "hub", tmp_path / "pushes", "org")


@pytest.mark.parametrize("value,kept", [("1", True), (0.9, True), ("0.7", True), (0.5, False), ("0.69", False)])
def test_float_coercion_filter(value, kept):
    rule = RowFilter(column="average_test_score", op=">=", value=0.7, coerce="float")
    assert passes(rule, {"average_test_score": value}, "default") is kept


def test_uncoercible_value_raises():
    rule = RowFilter(column="average_test_score", op=">=", value=0.7, coerce="float")
    with pytest.raises(Uncoercible):
        passes(rule, {"average_test_score": "n/a"}, "default")
    with pytest.raises(Uncoercible, match="missing"):
        passes(rule, {}, "default")


def test_config_scoped_filter_only_applies_to_its_config():
    rule = RowFilter(column="is_passed", op="truthy", configs=["seed_sft"])
    assert passes(rule, {}, "synthetic_sft")
    assert not passes(rule, {"is_passed": False}, "seed_sft")
    assert passes(rule, {"is_passed": "true"}, "seed_sft")


def test_mirror_filters_caps_quarantines_and_reports(tmp_path):
    rows_a = [{"x": i, "score": s} for i, s in enumerate(["1", 0.2, "n/a", 0.8, "0.75", 1.0])]
    rows_b = [{"x": 100 + i, "score": 1.0} for i in range(5)] + ["{not json"]
    hub = _mirror(tmp_path, {"a/train.jsonl": rows_a, "b/train.jsonl": rows_b})
    spec = SourceSpec(name="s", family="code_sft", hf_id="org/ds", configs=["a", "b"], cap=6,
                      adapter="x", filters=[RowFilter(column="score", op=">=", value=0.7, coerce="float")])
    store = LocalObjectStore(tmp_path / "store")
    rep = mirror_source(spec, hub, store, log=lambda m: None)
    assert rep.revision == REV and rep.rows == 6 and rep.shortfall == 0
    assert rep.filtered == {"filter_score>=0.7": 1}
    assert rep.quarantined == {"filter_uncoercible_score": 1}
    rows = [r for p in rep.parts for r in parquet_bytes_to_rows(store.get_bytes(p))]
    # round-robin: both configs contribute before the cap is hit
    assert {r["_config"] for r in rows} == {"a", "b"}
    q = parquet_bytes_to_rows(store.get_bytes(rep.prefix + "quarantine.parquet"))
    assert q[0]["reason"] == "filter_uncoercible_score" and '"n/a"' in q[0]["row_json"]
    assert read_latest(store, "s")["revision"] == REV


def test_shortfall_and_unreadable_rows(tmp_path):
    hub = _mirror(tmp_path, {"default/train.jsonl": [{"x": 1}, "{broken", {"x": 2}]})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", cap=10, adapter="x")
    rep = mirror_source(spec, hub, LocalObjectStore(tmp_path / "store"), log=lambda m: None)
    assert rep.rows == 2 and rep.shortfall == 8 and rep.quarantined == {"unreadable_row": 1}


def test_remirror_same_revision_rewrites_nothing(tmp_path):
    hub = _mirror(tmp_path, {"default/train.jsonl": [{"x": i} for i in range(10)]})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", cap=5, adapter="x")
    store_dir = tmp_path / "store"
    store = LocalObjectStore(store_dir)
    first = mirror_source(spec, hub, store, log=lambda m: None)
    snapshot = {p: p.stat().st_mtime_ns for p in store_dir.rglob("*") if p.is_file()}
    again = mirror_source(spec, hub, store, log=lambda m: None)
    assert again.reused and again.rows == first.rows
    assert {p: p.stat().st_mtime_ns for p in store_dir.rglob("*") if p.is_file()} == snapshot
    # A changed catalog entry (new cap) is a different mirror: it is redone.
    bigger = spec.model_copy(update={"cap": 8})
    assert mirror_source(bigger, hub, store, log=lambda m: None).rows == 8


def test_new_upstream_revision_mirrors_to_a_new_prefix(tmp_path):
    hub = _mirror(tmp_path, {"default/train.jsonl": [{"x": 1}]})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", adapter="x")
    store = LocalObjectStore(tmp_path / "store")
    r1 = mirror_source(spec, hub, store, log=lambda m: None)
    _mirror(tmp_path, {"default/train.jsonl": [{"x": 1}, {"x": 2}]}, rev="b" * 40)
    r2 = mirror_source(spec, hub, store, log=lambda m: None)
    assert r1.prefix != r2.prefix and r2.rows == 2
    assert store.exists(r1.prefix + "_SUCCESS.json")  # the old revision stays readable


def test_pinned_revision_missing_from_mirror(tmp_path):
    hub = _mirror(tmp_path, {"default/train.jsonl": [{"x": 1}]})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", adapter="x", revision="c" * 40)
    with pytest.raises(RevisionNotFound, match="has no revision"):
        mirror_source(spec, hub, LocalObjectStore(tmp_path / "store"), log=lambda m: None)


def test_lone_surrogate_is_quarantined_not_fatal(tmp_path):
    # JSON may spell a lone UTF-16 surrogate; json.loads accepts it, Parquet (UTF-8) cannot hold it.
    lines = ['{"x": 1, "text": "ok"}', '{"x": 2, "text": "half a pair \\ud83d here"}',
             '{"x": 3, "msgs": [{"content": "nested \\udc00"}]}', '{"x": 4, "text": "caf\\u00e9 \\ud83d\\ude00"}']
    hub = _mirror(tmp_path, {"default/train.jsonl": lines})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", cap=10, adapter="x")
    store = LocalObjectStore(tmp_path / "store")
    rep = mirror_source(spec, hub, store, log=lambda m: None)
    assert rep.rows == 2 and rep.quarantined == {"unencodable_text": 2}
    rows = [r for p in rep.parts for r in parquet_bytes_to_rows(store.get_bytes(p))]
    assert sorted(r["x"] for r in rows) == [1, 4]  # a well-formed surrogate pair is an emoji, kept
    q = parquet_bytes_to_rows(store.get_bytes(rep.prefix + "quarantine.parquet"))
    assert sorted(r["detail"] for r in q) == ["msgs.0.content: lone surrogate", "text: lone surrogate"]


def test_a_mostly_unreadable_source_fails_and_publishes_nothing(tmp_path):
    hub = _mirror(tmp_path, {"default/train.jsonl": [{"x": 1}, "{broken", "[1]", "nope"]})
    spec = SourceSpec(name="s", family="dpo", hf_id="org/ds", cap=10, adapter="x")
    store = LocalObjectStore(tmp_path / "store")
    with pytest.raises(RuntimeError, match=r"3 of 4 rows quarantined (?s:.*)quarantine\.parquet"):
        mirror_source(spec, hub, store, log=lambda m: None)
    with pytest.raises(FileNotFoundError):
        read_latest(store, "s")
    assert not [k for k in store.list("") if k.endswith("_SUCCESS.json")]
