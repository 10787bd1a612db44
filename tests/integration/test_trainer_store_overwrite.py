"""The trainer's own store client never loses an object it overwrites, and reads what the
pipeline's store writes mid-overwrite.

A forked child overwrites one key through ``TrainerStore`` in a loop; the parent SIGKILLs it at a
random moment and reads the key back: it must be one complete version (checked by content hash),
locally and on S3 (moto).
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trainer"))

from surrogate_trainer.store import TrainerStore  # noqa: E402

from tests.integration.test_object_store_overwrite import _CTX, MiB, content, version_of
from tests.support.s3_server import moto_s3, s3_bucket

__all__ = ["moto_s3", "s3_bucket"]
KILLS = 40


def _overwrite_forever(store: TrainerStore, key: str, size: int, scratch: Path, ready) -> None:
    ready.set()
    version = 1
    while True:
        src = scratch / f"v{version}"
        src.write_bytes(content(version, size))
        store.put_file(key, src)
        src.unlink()
        version += 1


def _read(store: TrainerStore, key: str, dest: Path, size: int) -> int | None:
    try:
        store.get_file(key, dest)
    except Exception:  # noqa: BLE001 - any failure to read back is a lost object
        return None
    return version_of(dest.read_bytes(), size)


def _kill_rounds(config: dict, tmp: Path, size: int, max_delay_s: float, seed: int) -> dict:
    key = "runs/stage/checkpoint.bin"
    store = TrainerStore(config)
    (tmp / "v0").write_bytes(content(0, size))
    store.put_file(key, tmp / "v0")
    writer = TrainerStore(config)
    rng = random.Random(seed)
    lost, versions = 0, []
    for i in range(KILLS):
        scratch = tmp / f"scratch{i}"
        scratch.mkdir()
        ready = _CTX.Event()
        child = _CTX.Process(target=_overwrite_forever, args=(writer, key, size, scratch, ready), daemon=True)
        child.start()
        assert ready.wait(30)
        time.sleep(rng.uniform(0.0, max_delay_s))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        v = _read(store, key, tmp / "read.bin", size)
        if v is None:
            lost += 1
            store.put_file(key, tmp / "v0")
        versions.append(v)
    return {"lost": lost, "versions": versions}


def test_trainer_store_local_sigkill_during_overwrite_never_loses(tmp_path: Path) -> None:
    result = _kill_rounds({"kind": "local", "root": str(tmp_path / "store")}, tmp_path, 2 * MiB, 0.1, seed=3)
    print(f"trainer store, local: lost {result['lost']} of {KILLS}; versions {result['versions']}")
    assert result["lost"] == 0, result
    assert any(v not in (None, 0) for v in result["versions"])  # the kills did land mid-loop


def test_trainer_store_s3_sigkill_during_overwrite_never_loses(moto_s3, s3_bucket, tmp_path: Path) -> None:
    config = moto_s3.store_config(s3_bucket, prefix="t")
    result = _kill_rounds(config, tmp_path, 1 * MiB, 0.2, seed=5)
    print(f"trainer store, s3: lost {result['lost']} of {KILLS}; versions {result['versions']}")
    assert result["lost"] == 0, result


def test_trainer_store_reads_a_pipeline_object_killed_before_its_sidecar(moto_s3, s3_bucket, tmp_path) -> None:
    """The pipeline's S3 store writes the object (with its sha256 in metadata) before the sidecar;
    a kill between the two leaves a new object beside the old sidecar. Both clients accept it."""
    from surrogate_dagster.storage import make_object_store

    config = moto_s3.store_config(s3_bucket, prefix="t")
    pipeline = make_object_store(config)
    pipeline.put_bytes("mixtures/x/train.jsonl", content(0, 4096))
    raw = moto_s3.raw_client()
    new = content(1, 4096)
    import hashlib

    raw.put_object(Bucket=s3_bucket, Key="t/mixtures/x/train.jsonl", Body=new,
                   Metadata={"sha256": hashlib.sha256(new).hexdigest()})  # the sidecar write never came
    assert _read(TrainerStore(config), "mixtures/x/train.jsonl", tmp_path / "x", 4096) == 1
