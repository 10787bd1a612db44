"""Overwrites never lose the old object: SIGKILLed writers, concurrent writers, leftover cleanup.

A forked child overwrites one key in a loop and the parent SIGKILLs it at a random moment; the
key must then read as one complete version (checked by content hash), locally and on S3 (moto).
Concurrent writers to one key must leave exactly one writer's content, readable.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

from surrogate_dagster.storage import LocalObjectStore, make_object_store
from surrogate_dagster.storage.object_store import TMP_PREFIX
from surrogate_dagster.storage.s3_maintenance import abort_stale_uploads

from tests.support.s3_server import moto_s3, s3_bucket

__all__ = ["moto_s3", "s3_bucket"]  # fixtures used by name below
MiB = 1024 * 1024
KILLS = 40
ROUNDS = 10
WRITERS = 4
# fork: the child starts in milliseconds (a spawned interpreter would need ~0.5 s per kill).
_CTX = multiprocessing.get_context("fork")


def content(version: int, size: int) -> bytes:
    """Version ``version`` of the object: a header naming it, then filler derived from it."""
    header = f"v{version:08d}\n".encode()
    block = hashlib.sha256(header).digest() * 1024
    body = (block * (size // len(block) + 1))[: size - len(header)]
    return header + body


def version_of(data: bytes, size: int) -> int | None:
    """The version ``data`` is, if it is one complete version, else None."""
    try:
        version = int(data[1:9])
    except ValueError:
        return None
    expected = content(version, size)
    return version if hashlib.sha256(data).digest() == hashlib.sha256(expected).digest() else None


def _overwrite_forever(store, key: str, size: int, ready) -> None:
    ready.set()
    version = 1
    while True:
        store.put_bytes(key, content(version, size))
        version += 1


def kill_rounds(config: dict, key: str, size: int, kills: int, max_delay_s: float, seed: int) -> dict:
    """SIGKILL an overwriting child ``kills`` times; count reads that were not one whole version."""
    store = make_object_store(config)
    store.put_bytes(key, content(0, size))
    rng = random.Random(seed)
    # Built here and never used here: each forked child inherits a client with no open connection
    # (building one per child would cost more than the writes).
    writer = make_object_store(config)
    lost, versions = 0, []
    for _ in range(kills):
        ready = _CTX.Event()
        child = _CTX.Process(target=_overwrite_forever, args=(writer, key, size, ready), daemon=True)
        child.start()
        assert ready.wait(30), "writer did not start"
        time.sleep(rng.uniform(0.0, max_delay_s))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        try:
            v = version_of(store.get_bytes(key), size)
        except Exception:  # noqa: BLE001 - any failure to read back is a lost object
            v = None
        if v is None:
            lost += 1
            store.put_bytes(key, content(0, size))  # start the next round from a readable key
        versions.append(v)
    return {"lost": lost, "versions": versions}


def _write_n(store, key: str, size: int, writer: int, go, times: int) -> None:
    data = content(1000 + writer, size)
    go.wait(30)
    for _ in range(times):
        store.put_bytes(key, data)


def concurrent_rounds(config: dict, key: str, size: int, rounds: int, writers: int) -> dict:
    """``writers`` processes write different content to one key at once, ``rounds`` times."""
    store = make_object_store(config)
    writer_stores = [make_object_store(config) for _ in range(writers)]  # unused here, as above
    bad = 0
    winners = []
    for _ in range(rounds):
        go = _CTX.Event()
        procs = [_CTX.Process(target=_write_n, args=(writer_stores[w], key, size, w, go, 3))
                 for w in range(writers)]
        for p in procs:
            p.start()
        time.sleep(0.05)
        go.set()
        for p in procs:
            p.join(60)
        assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
        try:
            v = version_of(store.get_bytes(key), size)
        except Exception:  # noqa: BLE001 - unreadable counts as a failed round
            v = None
        if v is None or not 1000 <= v < 1000 + writers:
            bad += 1
        winners.append(v)
    return {"bad_rounds": bad, "winners": winners}


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"{TMP_PREFIX}*") if p.is_file()]


# ---- local store ------------------------------------------------------------------------------
def test_local_sigkill_during_overwrite_never_loses(tmp_path: Path) -> None:
    config = {"kind": "local", "root": str(tmp_path / "store")}
    result = kill_rounds(config, "runs/big.bin", 4 * MiB, KILLS, max_delay_s=0.15, seed=7)
    print(f"local: lost {result['lost']} of {KILLS}; versions read {result['versions']}")
    assert result["lost"] == 0, result
    # Killed writers leave temp files; a store opened later sweeps those past the grace period.
    root = tmp_path / "store"
    print(f"local: {len(_temp_files(root))} temp file(s) left by the kills")
    for p in _temp_files(root):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    LocalObjectStore(root).sweep_temp_files(older_than_s=3600)
    assert _temp_files(root) == []
    assert version_of(LocalObjectStore(root).get_bytes("runs/big.bin"), 4 * MiB) is not None


def test_local_concurrent_writers_last_one_wins_whole(tmp_path: Path) -> None:
    config = {"kind": "local", "root": str(tmp_path / "store")}
    result = concurrent_rounds(config, "shared/key.bin", 1 * MiB, ROUNDS, WRITERS)
    print(f"local: {result['bad_rounds']} of {ROUNDS} rounds unreadable; winners {result['winners']}")
    assert result["bad_rounds"] == 0, result


# ---- S3 (moto) --------------------------------------------------------------------------------
def test_s3_sigkill_during_overwrite_never_loses(moto_s3, s3_bucket) -> None:
    # 6 MiB over a 5 MiB threshold: kills land in multipart uploads as well as in manifest PUTs.
    config = moto_s3.store_config(s3_bucket, prefix="p", multipart_threshold=5 * MiB,
                                  multipart_chunksize=5 * MiB, max_concurrency=2)
    result = kill_rounds(config, "runs/big.bin", 6 * MiB, KILLS, max_delay_s=0.3, seed=11)
    raw = moto_s3.raw_client()
    open_uploads = raw.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
    print(f"s3: lost {result['lost']} of {KILLS}; {len(open_uploads)} open multipart upload(s) left; "
          f"versions read {result['versions']}")
    assert result["lost"] == 0, result
    # Killed multipart uploads stay open until swept (or the lifecycle rule aborts them).
    store = make_object_store(config, prepare=False)
    abort_stale_uploads(store.client, s3_bucket, "p/", older_than=timedelta(0))
    assert raw.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


def test_s3_concurrent_writers_last_one_wins_whole(moto_s3, s3_bucket) -> None:
    # moto's server answers some concurrent PUTs to one key with a 500: retried, as on real S3.
    config = moto_s3.store_config(s3_bucket, prefix="p", max_attempts=5)
    result = concurrent_rounds(config, "shared/key.bin", 1 * MiB, ROUNDS, WRITERS)
    print(f"s3: {result['bad_rounds']} of {ROUNDS} rounds unreadable; winners {result['winners']}")
    assert result["bad_rounds"] == 0, result
