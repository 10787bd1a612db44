"""Step outputs read back against what their pointers and markers record: a short table is refused, marker
rows are checked against the parts, a recorded tree without a trailing slash is present while it has
objects (the output checks on materialized assets: tests/integration/test_output_checks.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surrogate_dagster.curation import stage_io
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.markers import IncompleteData, iter_marker_rows
from surrogate_dagster.storage.parquet_io import rows_to_parquet_bytes


# ---- stage_io pointer row count ---------------------------------------------------------------
def test_step_read_refuses_a_table_shorter_than_its_pointer(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    rows = [{"id": i, "text": f"row {i}"} for i in range(5)]
    key = stage_io.write_step(store, "filtered", "src", "v1", rows)
    assert stage_io.read_step(store, "filtered", "src")[1] == rows
    store.put_bytes(key, rows_to_parquet_bytes(rows[:3]))  # valid Parquet, two rows short
    with pytest.raises(IncompleteData, match="curation/filtered/src/v1/rows.parquet") as exc:
        stage_io.read_step(store, "filtered", "src")
    assert "5 rows" in str(exc.value) and "3 rows" in str(exc.value)


# ---- _SUCCESS.json markers --------------------------------------------------------------------
def _table(store: LocalObjectStore, parts: list[list[dict]]) -> str:
    keys = []
    for i, rows in enumerate(parts):
        keys.append(f"raw/s/rev/part-{i:05d}.parquet")
        store.put_bytes(keys[-1], rows_to_parquet_bytes(rows))
    marker = "raw/s/rev/_SUCCESS.json"
    store.put_bytes(marker, json.dumps({"parts": keys, "rows": sum(map(len, parts))}).encode())
    return marker


def test_marker_rows_checked_against_parts(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    parts = [[{"i": i} for i in range(4)], [{"i": i} for i in range(4, 7)]]
    marker = _table(store, parts)
    assert [r["i"] for r in iter_marker_rows(store, marker)] == list(range(7))

    # A part dropped from the marker's list: fewer rows than the marker counts.
    doc = json.loads(store.get_bytes(marker))
    store.put_bytes(marker, json.dumps({**doc, "parts": doc["parts"][:1]}).encode())
    with pytest.raises(IncompleteData, match="_SUCCESS.json.*7 rows"):
        list(iter_marker_rows(store, marker))

    # A valid but shorter part.
    store.put_bytes(marker, json.dumps(doc).encode())
    store.put_bytes(doc["parts"][1], rows_to_parquet_bytes(parts[1][:1]))
    with pytest.raises(IncompleteData, match="raw/s/rev/_SUCCESS.json"):
        list(iter_marker_rows(store, marker))

    # A listed part that is gone.
    store.delete(doc["parts"][1])
    with pytest.raises(IncompleteData, match="1 missing"):
        list(iter_marker_rows(store, marker))


def test_a_recorded_tree_without_trailing_slash_is_present_while_it_has_objects(tmp_path: Path) -> None:
    """Checkpoints record their adapter/ and merged/ trees as URIs without a trailing '/'."""
    from surrogate_dagster.storage.markers import missing_outputs

    store = LocalObjectStore(tmp_path / "store", fsync=False)
    store.put_bytes("training/stage1/abc/merged/config.json", b"{}")
    assert missing_outputs(store, ["training/stage1/abc/merged"]) == []
    assert missing_outputs(store, ["training/stage1/abc/adapter"]) == ["training/stage1/abc/adapter"]
    store.delete("training/stage1/abc/merged/config.json")
    assert missing_outputs(store, ["training/stage1/abc/merged"]) == ["training/stage1/abc/merged"]
