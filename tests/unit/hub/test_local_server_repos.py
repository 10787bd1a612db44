"""The local Hub's repo store and its pure helpers, without a server: which commit ``main`` is for
each root, the generated dataset card, LFS classification and digests, commits that keep older
trees resolvable, tree listings, byte ranges, and the JSON Lines reader OnlineHub shares with the
offline mirror."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from surrogate_dagster.hub.client import _split_lines, jsonl_rows
from surrogate_dagster.hub.local_repos import (LFS_THRESHOLD, RepoStore, bytes_blob, dataset_card, is_lfs,
                                               tree_sha)
from surrogate_dagster.hub.local_api import parse_range, tree_entries


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())


@pytest.fixture
def store(tmp_path) -> RepoStore:
    _write(tmp_path / "mirror" / "datasets" / "org" / "ds", {
        "revision.txt": "a" * 40 + "\n", "default/train.jsonl": '{"x": 1}\n', "default/train.raw.jsonl": "{}\n",
        "other/test.jsonl": "{}\n", "PROVENANCE.md": "p\n", f"@{'b' * 40}/default/train.jsonl": '{"x": 0}\n'})
    _write(tmp_path / "models" / "org" / "m", {"revision.txt": "c" * 40 + "\n", "config.json": "{}",
                                               f"@{'d' * 40}/config.json": '{"old": 1}'})
    _write(tmp_path / "models" / "org" / "bare", {"config.json": "{}"})
    return RepoStore(tmp_path / "mirror", tmp_path / "models", tmp_path / "push")


def test_lfs_is_by_pattern_or_size():
    assert is_lfs("a/model.safetensors", 10) and is_lfs("x/train.jsonl", 1) and is_lfs("w.bin", 0)
    assert not is_lfs("config.json", 100) and not is_lfs("README.md", 100)
    assert is_lfs("config.json", LFS_THRESHOLD)


def test_blob_digests_are_git_and_lfs_ones():
    data = b"hello\n"
    plain = bytes_blob("a.txt", data)
    assert plain.git_oid == hashlib.sha1(b"blob 6\0hello\n").hexdigest() == plain.oid == plain.etag
    lfs = bytes_blob("a.bin", data)
    assert lfs.etag == hashlib.sha256(data).hexdigest()
    assert lfs.pointer == f"version https://git-lfs.github.com/spec/v1\noid sha256:{lfs.etag}\nsize 6\n".encode()
    assert lfs.oid == hashlib.sha1(b"blob %d\0" % len(lfs.pointer) + lfs.pointer).hexdigest()
    assert b"".join(lfs.read(1, 4)) == b"ell"


def test_dataset_card_lists_each_config_and_split():
    card = dataset_card(["default/train.jsonl", "default/train.raw.jsonl", "other/test.parquet", "PROVENANCE.md",
                         "deep/er/x.jsonl"]).decode()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta == {"configs": [
        {"config_name": "default", "data_files": [{"split": "train", "path": "default/train.jsonl"},
                                                  {"split": "train.raw", "path": "default/train.raw.jsonl"}]},
        {"config_name": "other", "data_files": [{"split": "test", "path": "other/test.parquet"}]}]}


def test_mirror_main_is_the_content_hash_not_the_offline_pin(store):
    repo = store.get("dataset", "org/ds")
    assert repo is not None and repo.kind == "mirror" and repo.main != "a" * 40
    rev = store.resolve(repo, "main")
    assert rev.sha == repo.main == tree_sha(rev.files)
    assert {"README.md", ".gitattributes", "default/train.jsonl", "PROVENANCE.md"} <= set(rev.files)
    assert "revision.txt" not in rev.files and not any(f.startswith("@") for f in rev.files)
    assert store.resolve(repo, "a" * 40) is None  # the offline pin is no Hub commit
    old = store.resolve(repo, "b" * 40)
    assert b"".join(old.files["default/train.jsonl"].read()) == b'{"x": 0}\n'
    assert "README.md" in old.files  # an older tree gets its own card


def test_models_main_is_revision_txt_else_the_content_hash(store):
    m = store.get("model", "org/m")
    assert m.main == "c" * 40 and m.older == ["d" * 40] and not m.writable
    assert b"".join(store.resolve(m, "d" * 40).files["config.json"].read()) == b'{"old": 1}'
    bare = store.get("model", "org/bare")
    assert bare.main == tree_sha(store.resolve(bare, "main").files)
    assert store.get("dataset", "org/m") is None and store.get("model", "org/ds") is None
    assert store.get("model", "org/../org/m") is None and store.get("model", "nested/too/deep") is None
    assert store.list_ids("model") == ["org/bare", "org/m"] and store.list_ids("dataset") == ["org/ds"]


def test_commits_move_main_and_keep_older_trees(store, tmp_path):
    assert store.create("model", "me/pushed", private=True)
    assert not store.create("model", "me/pushed", private=False)
    repo = store.get("model", "me/pushed")
    assert repo.private and repo.writable and set(store.resolve(repo, "main").files) == {".gitattributes"}
    first = store.commit(repo, {"a.txt": b"1", "dir/b.txt": b"b"}, [], [], "first")
    repo = store.get("model", "me/pushed")
    assert repo.main == first
    src = tmp_path / "big.bin"
    src.write_bytes(b"x" * 100)
    second = store.commit(repo, {"a.txt": b"2", "big.bin": src}, [], ["dir"], "second")
    repo = store.get("model", "me/pushed")
    assert second != first and repo.main == second and first in repo.older
    now, then = store.resolve(repo, second), store.resolve(repo, first)
    assert set(now.files) == {".gitattributes", "a.txt", "big.bin"}
    assert set(then.files) == {".gitattributes", "a.txt", "dir/b.txt"}
    assert b"".join(now.files["a.txt"].read()) == b"2" and b"".join(then.files["a.txt"].read()) == b"1"
    same = store.commit(store.get("model", "me/pushed"), {"a.txt": b"2"}, [], [], "again")
    assert same != second  # every commit is a new sha, even with an unchanged tree


def test_lfs_objects_are_kept_only_when_their_sha256_matches(store):
    data = b"payload" * 10
    oid = hashlib.sha256(data).hexdigest()
    assert not store.store_lfs_object(oid, [b"tampered"])
    assert not store.has_lfs_object(oid, len(data))
    assert store.store_lfs_object(oid, [data[:5], data[5:]])
    assert store.has_lfs_object(oid, len(data)) and not store.has_lfs_object(oid, len(data) + 1)


def test_tree_lists_one_level_or_everything(store):
    rev = store.resolve(store.get("dataset", "org/ds"), "main")
    top = [(e["type"], e["path"]) for e in tree_entries(rev, "", recursive=False)]
    assert top[:2] == [("directory", "default"), ("directory", "other")]
    assert ("file", "README.md") in top and ("file", "default/train.jsonl") not in top
    deep = {e["path"] for e in tree_entries(rev, "", recursive=True)}
    assert {"default", "default/train.jsonl", "other/test.jsonl"} <= deep
    assert [e["path"] for e in tree_entries(rev, "other", recursive=False)] == ["other/test.jsonl"]
    assert tree_entries(rev, "missing", recursive=True) is None
    entry = next(e for e in tree_entries(rev, "default", recursive=False) if e["path"] == "default/train.jsonl")
    assert entry["lfs"]["oid"] == hashlib.sha256(b'{"x": 1}\n').hexdigest() and entry["size"] == 9


@pytest.mark.parametrize("header,want", [("bytes=0-9", (0, 10)), ("bytes=5-", (5, 100)), ("bytes=-10", (90, 100)),
                                         ("bytes=90-500", (90, 100)), ("bytes=100-", None), ("bytes=-0", None),
                                         ("bytes=-", None), ("lines=1-2", None), ("bytes=9-3", None)])
def test_byte_ranges(header, want):
    assert parse_range(header, 100) == want


def test_jsonl_rows_quarantine_bad_lines_and_keep_the_rest():
    raw = b'{"a": 1}\nnope\n[1]\n\n{"a": "\xff"}\n{"a": 2, "b": 3}'
    rows = list(jsonl_rows(_split_lines([raw[:7], raw[7:19], raw[19:]]), "f.jsonl", ["a"]))
    assert rows[0] == {"a": 1} and rows[-1] == {"a": 2}
    assert [r["__unreadable__"].split(":")[1] for r in rows[1:-1]] == ["2", "3", "5"]
    assert "a row must be a JSON object" in rows[2]["__unreadable__"] and "not UTF-8" in rows[3]["__unreadable__"]
    assert rows[1]["__line__"] == "nope\n"
    assert list(_split_lines([b"a\nb", b"c\n", b"", b"d"])) == [b"a\n", b"bc\n", b"d"]
