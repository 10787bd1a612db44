"""LocalObjectStore, the manifest protocol, key validation, and lossless Parquet I/O."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import pytest

from surrogate_dagster.storage import (
    IntegrityError,
    LocalObjectStore,
    MissingObject,
    ObjectInfo,
    make_object_store,
)
from surrogate_dagster.storage.object_store import MANIFEST_SUFFIX, TMP_PREFIX
from surrogate_dagster.storage.parquet_io import (
    parquet_bytes_to_rows,
    parquet_schema_summary,
    rows_to_parquet_bytes,
)


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    return LocalObjectStore(tmp_path / "store")


def _all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_write_read_and_manifest(store: LocalObjectStore) -> None:
    data = b"hello \x00 world" * 1000
    info = store.put_bytes("runs/r1/data.bin", data, content_type="application/octet-stream")
    assert info == ObjectInfo("runs/r1/data.bin", hashlib.sha256(data).hexdigest(), len(data))
    assert store.get_bytes("runs/r1/data.bin") == data
    assert store.exists("runs/r1/data.bin") and not store.exists("runs/r1/other")
    manifest = json.loads((store.root / "runs/r1/data.bin.sha256.json").read_text())
    assert manifest == {
        "key": "runs/r1/data.bin", "sha256": info.sha256, "size": len(data),
        "content_type": "application/octet-stream",
    }
    assert store.info("runs/r1/data.bin") == info
    assert store.uri("runs/r1/data.bin") == (store.root / "runs/r1/data.bin").as_uri()


def test_list_prefix_and_delete(store: LocalObjectStore) -> None:
    for key in ["a/x.txt", "a/y.txt", "ab/z.txt", "b.txt"]:
        store.put_bytes(key, key.encode())
    assert store.list() == ["a/x.txt", "a/y.txt", "ab/z.txt", "b.txt"]
    assert store.list("a/") == ["a/x.txt", "a/y.txt"]
    assert store.list("a") == ["a/x.txt", "a/y.txt", "ab/z.txt"]
    assert store.list("a/x") == ["a/x.txt"]
    assert store.list("nope/") == []
    store.delete("a/x.txt")
    store.delete("a/x.txt")  # idempotent
    assert store.list("a/") == ["a/y.txt"]
    with pytest.raises(MissingObject):
        store.get_bytes("a/x.txt")
    assert not (store.root / "a/x.txt").exists() and not (store.root / f"a/x.txt{MANIFEST_SUFFIX}").exists()


@pytest.mark.parametrize("bad", ["", "/abs/key", "a/../b", "..", "a//b", "a/", "./a", "a\\b",
                                 f"a/{TMP_PREFIX}x", "x.sha256.json"])
def test_bad_keys_rejected(store: LocalObjectStore, bad: str) -> None:
    with pytest.raises(ValueError):
        store.put_bytes(bad, b"x")
    with pytest.raises(ValueError):
        store.get_bytes(bad)


def test_corrupted_object_detected(store: LocalObjectStore) -> None:
    info = store.put_bytes("m/model.bin", bytes(range(256)) * 64)
    path = store.root / "m/model.bin"
    raw = bytearray(path.read_bytes())
    raw[1000] ^= 0x01  # flip one bit on disk
    path.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError) as exc:
        store.get_bytes("m/model.bin")
    assert exc.value.key == "m/model.bin" and exc.value.expected == info.sha256
    assert exc.value.actual == hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(IntegrityError):
        store.get_file("m/model.bin", store.root.parent / "out.bin")
    assert not (store.root.parent / "out.bin").exists()  # unverified download never appears


def test_corrupted_or_missing_manifest(store: LocalObjectStore) -> None:
    store.put_bytes("k", b"abc")
    (store.root / f"k{MANIFEST_SUFFIX}").write_text("{not json")
    with pytest.raises(IntegrityError):
        store.get_bytes("k")
    (store.root / f"k{MANIFEST_SUFFIX}").unlink()
    with pytest.raises(MissingObject, match="manifest is missing"):
        store.get_bytes("k")
    assert store.list() == [] and not store.exists("k")


def test_interrupted_write_leaves_nothing(store: LocalObjectStore) -> None:
    def chunks():
        yield b"a" * 1_000_000
        raise RuntimeError("connection lost mid-write")

    with pytest.raises(RuntimeError, match="mid-write"):
        store.put_chunks("big/object.bin", chunks())
    assert not (store.root / "big/object.bin").exists()
    assert store.list() == [] and not store.exists("big/object.bin")
    assert _all_files(store.root) == []  # the temp file was removed as well


def test_interrupted_rename_keeps_old_version_readable(store: LocalObjectStore, monkeypatch) -> None:
    store.put_bytes("k.bin", b"old")
    real_replace = os.replace

    def boom(src, dst):
        if Path(dst).name == "k.bin":
            raise OSError("simulated crash before rename")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="simulated crash"):
        store.put_bytes("k.bin", b"new")
    monkeypatch.undo()
    # The new bytes never appeared under the key; the sidecar already names the new version but
    # keeps the old one as `previous`, so the old object still reads, verified.
    assert (store.root / "k.bin").read_bytes() == b"old"
    assert store.list() == ["k.bin"] and store.get_bytes("k.bin") == b"old"
    assert json.loads((store.root / f"k.bin{MANIFEST_SUFFIX}").read_text())["previous"]["size"] == 3
    assert [f for f in _all_files(store.root) if TMP_PREFIX in f] == []
    # The next write resolves which version is on disk and commits cleanly.
    store.put_bytes("k.bin", b"newer")
    assert store.get_bytes("k.bin") == b"newer"
    assert "previous" not in json.loads((store.root / f"k.bin{MANIFEST_SUFFIX}").read_text())


def test_temp_names_never_listed(store: LocalObjectStore) -> None:
    store.put_bytes("d/real.txt", b"1")
    (store.root / "d" / f"{TMP_PREFIX}deadbeef").write_bytes(b"partial")
    (store.root / "d" / f"{TMP_PREFIX}deadbeef{MANIFEST_SUFFIX}").write_bytes(b"{}")
    assert store.list() == ["d/real.txt"]


def test_put_file_get_file_streaming(store: LocalObjectStore, tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    info = store.put_file("ckpt/adapter.safetensors", src)
    assert info.sha256 == hashlib.sha256(src.read_bytes()).hexdigest()
    dst = tmp_path / "out" / "adapter.safetensors"
    assert store.get_file("ckpt/adapter.safetensors", dst) == info
    assert dst.read_bytes() == src.read_bytes()
    assert not any(p.name.startswith(TMP_PREFIX) for p in dst.parent.iterdir())


def test_make_object_store_local_and_errors(tmp_path: Path) -> None:
    st = make_object_store({"kind": "local", "root": str(tmp_path / "s")})
    assert isinstance(st, LocalObjectStore)
    with pytest.raises(ValueError, match="kind"):
        make_object_store({"kind": "gcs"})
    with pytest.raises(ValueError, match="unknown"):
        make_object_store({"kind": "local", "root": "x", "rot": "y"})
    with pytest.raises(ValueError, match="secret") as exc:
        make_object_store({"kind": "s3", "bucket": "b", "secret_key": "hunter2"})
    assert "hunter2" not in str(exc.value)


# ---- parquet_io ---------------------------------------------------------------------------------
HETERO_ROWS = [
    {"id": "r1", "kind": "sft", "messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "yo", "name": "bot"}],
     "meta": {"license": "mit", "stars": 3}, "score": 1, "tags": ["a"]},
    {"id": "r2", "kind": "pref", "chosen": "x", "rejected": "y",
     "meta": {"license": "apache-2.0", "nested": {"deep": [1, {"k": None}]}}, "score": 2.5, "tags": []},
    {"id": "r3", "kind": "sft", "messages": [], "meta": {}, "score": None, "tags": None,
     "tools": [{"name": "f", "parameters": {"type": "object", "properties": {}}}], "flag": True},
    {"id": "r4", "kind": "sft", "meta": {"stars": 3, "license": "mit"}, "score": -0.0, "tags": ["b", "c"],
     "flag": False, "big": 2**70, "weird": float("nan"), "unicode": "héllo ✓"},
]


def _strict_equal(a, b) -> bool:
    """Equality that also checks types (1 vs 1.0, True vs 1), key order of nested dicts and -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_strict_equal, a, b))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


def test_parquet_round_trip_heterogeneous_is_exact() -> None:
    back = parquet_bytes_to_rows(rows_to_parquet_bytes(HETERO_ROWS))
    assert len(back) == len(HETERO_ROWS)
    for orig, got in zip(HETERO_ROWS, back):
        assert set(orig) == set(got), "no keys added or lost at the top level"
        assert all(_strict_equal(orig[k], got[k]) for k in orig)


def test_parquet_json_columns_recorded_and_typed_columns_kept() -> None:
    data = rows_to_parquet_bytes(HETERO_ROWS)
    summary = parquet_schema_summary(data)
    assert summary["id"] == "string" and summary["kind"] == "string"
    # meta dicts have differing key sets (struct unification would add nulls); score mixes int
    # and float (Arrow would turn 1 into 1.0); messages is missing in some rows.
    assert summary["meta"] == summary["score"] == summary["messages"] == "json"


def test_parquet_homogeneous_stays_native() -> None:
    rows = [{"id": str(i), "messages": [{"role": "user", "content": str(i)}], "n": i} for i in range(50)]
    data = rows_to_parquet_bytes(rows)
    summary = parquet_schema_summary(data)
    assert "json" not in summary.values()
    assert summary["messages"].startswith("list<") and summary["n"] == "int64"
    assert parquet_bytes_to_rows(data) == rows


def test_parquet_edge_cases_and_bad_input() -> None:
    assert parquet_bytes_to_rows(rows_to_parquet_bytes([])) == []
    assert parquet_bytes_to_rows(rows_to_parquet_bytes([{}, {}])) == [{}, {}]
    rows = [{"e": {}}, {"e": {"a": {}}}, {"b": b"\x00\xff"}]
    with pytest.raises(ValueError, match="bytes"):
        rows_to_parquet_bytes(rows)  # bytes in a column that must go to JSON: refused, not mangled
    assert parquet_bytes_to_rows(rows_to_parquet_bytes(rows[:2])) == rows[:2]
    typed_bytes = [{"b": b"\x00"}, {"b": None}]
    assert parquet_bytes_to_rows(rows_to_parquet_bytes(typed_bytes)) == typed_bytes
    with pytest.raises(ValueError, match="tuple"):
        rows_to_parquet_bytes([{"t": (1, 2)}])
    with pytest.raises(ValueError, match="not a dict"):
        rows_to_parquet_bytes([["not", "a", "dict"]])
