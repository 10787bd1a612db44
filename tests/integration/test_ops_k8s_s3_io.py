"""An s3:// io_root for the datatrove executors, against moto: datatrove's `local` kind reads and
writes the run folders in the bucket with the endpoint and keys the settings name (the profile's
object store), the block seam gives the same decisions as in-process, and a missing key variable
fails naming it. The runs that fork ranks run in a fresh interpreter (as on a curation worker):
forked from a test process that has loaded the code location, ranks can hang on the AWS SDK."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from surrogate_dagster.catalog.models import Profile
from surrogate_dagster.curation.executor import apply_blocks
from surrogate_dagster.runtime.executors import (ArrowS3FileSystem, curation_pipeline, executor_settings,
                                                 io_filesystems, make_executor)
from tests.support.s3_server import REGION, TEST_ACCESS_KEY_ENV, TEST_SECRET_KEY_ENV, moto_s3, s3_bucket  # noqa: F401


def _settings(moto, bucket: str, **extra) -> dict:
    return {"kind": "local", "tasks": 2, "workers": 2, "io_root": f"s3://{bucket}/block-runs",
            "io_storage": {"endpoint_url": moto.endpoint_url, "region": REGION,
                           "access_key_env": TEST_ACCESS_KEY_ENV, "secret_key_env": TEST_SECRET_KEY_ENV}, **extra}


def _keys(moto, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in moto.raw_client().list_objects_v2(Bucket=bucket).get("Contents", []))


def even_only(row: dict) -> str | None:
    return None if row["n"] % 2 == 0 else "odd"


REPO = Path(__file__).resolve().parents[2]


def _fresh(test: str, endpoint: str, bucket: str) -> None:
    """Run ``_<test>(endpoint, bucket)`` of this module in a new interpreter (moto stays here)."""
    code = (f"import tests.integration.test_ops_k8s_s3_io as t, sys; "
            f"t._{test}(type('M', (), {{'endpoint_url': sys.argv[1]}})(), sys.argv[2])")
    res = subprocess.run([sys.executable, "-c", code, endpoint, bucket], cwd=REPO, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]


def test_datatrove_local_reads_and_writes_an_s3_io_root(moto_s3, s3_bucket):
    _fresh("direct_run", moto_s3.endpoint_url, s3_bucket)
    keys = _keys(moto_s3, s3_bucket)
    out = [k for k in keys if k.startswith("block-runs/direct/out/") and k.endswith(".jsonl")]
    excl = [k for k in keys if k.startswith("block-runs/direct/excluded/00/") and k.endswith(".jsonl")]
    assert len(out) == 2 and len(excl) == 2, keys  # one file per rank, both ranks ran against the bucket
    kept = [json.loads(line) for k in out for line in
            moto_s3.raw_client().get_object(Bucket=s3_bucket, Key=k)["Body"].read().decode().splitlines()]
    assert sorted(r["n"] for r in kept) == [0, 0, 2, 2, 4, 4]
    assert any(k.startswith("block-runs/direct/logs/completions/") for k in keys)


def _direct_run(moto_s3, s3_bucket):
    cfg = _settings(moto_s3, s3_bucket)
    root = f"s3://{s3_bucket}/block-runs/direct"
    with io_filesystems(cfg):
        from datatrove.io import get_datafolder

        inp = get_datafolder(f"{root}/in")
        assert isinstance(inp.fs, ArrowS3FileSystem)
        for k in range(2):
            with inp.open(f"{k:05d}.jsonl", "w") as fh:
                fh.writelines(json.dumps({"id": f"{k}-{i}", "n": i}) + "\n" for i in range(6))
        pipe = curation_pipeline(f"{root}/in", f"{root}/out", [even_only], f"{root}/excluded")
        make_executor(pipe, cfg, f"{root}/logs").run()


def test_block_seam_on_an_s3_io_root_matches_in_process(moto_s3, s3_bucket, tmp_path):
    _fresh("seam_run", moto_s3.endpoint_url, s3_bucket)
    # the run folder was in the bucket and is removed after a good run
    assert not [k for k in _keys(moto_s3, s3_bucket) if k.endswith(".jsonl")]


def _seam_run(moto_s3, s3_bucket):
    import tempfile

    tmp_path = Path(tempfile.mkdtemp())
    rows = [{"id": f"r{i}", "n": i} for i in range(20)]
    here = apply_blocks(rows, [even_only], {"kind": "in_process"}, tmp_path)
    away = apply_blocks(rows, [even_only], _settings(moto_s3, s3_bucket), tmp_path / "unused")
    assert away.kind == "local" and away.reasons == here.reasons
    assert away.stats.of("even_only").dropped["odd"] == 10
    assert not (tmp_path / "unused").exists()  # nothing reached the local work dir


def test_the_profile_s3_store_gives_the_io_root_its_endpoint_and_key_names(moto_s3, s3_bucket):
    prof = Profile.model_validate({
        "name": "t", "hub": {"mode": "offline", "org": "t", "mirror_dir": "fixtures/hub", "push_dir": "var/hub_pushes"},
        "object_store": {k: v for k, v in moto_s3.store_config(s3_bucket).items() if k != "addressing_style"},
        "phases": {"ops": {"datatrove_executor": {"kind": "local", "tasks": 2, "io_root": f"s3://{s3_bucket}/runs"}}}})
    cfg = executor_settings(prof)
    assert cfg["io_storage"] == {"endpoint_url": moto_s3.endpoint_url, "region": REGION,
                                 "access_key_env": TEST_ACCESS_KEY_ENV, "secret_key_env": TEST_SECRET_KEY_ENV}
    assert "testing-" not in json.dumps(cfg)  # names only: the settings are resource config, shown in the UI


def test_a_pickled_folder_keeps_endpoint_and_keys(moto_s3, s3_bucket):
    # Ray ships the pipeline pickled: the worker's filesystem must reach the same endpoint
    cfg = _settings(moto_s3, s3_bucket)
    with io_filesystems(cfg):
        from datatrove.io import get_datafolder

        folder = get_datafolder(f"s3://{s3_bucket}/p")
    clone = pickle.loads(pickle.dumps(folder))
    with clone.open("x.txt", "w") as fh:
        fh.write("hello")
    assert "p/x.txt" in _keys(moto_s3, s3_bucket)


def test_a_missing_key_variable_fails_naming_it(moto_s3, s3_bucket, monkeypatch):
    monkeypatch.delenv(TEST_SECRET_KEY_ENV)
    with pytest.raises(RuntimeError, match=rf"\${TEST_SECRET_KEY_ENV} is not set"):
        apply_blocks([{"id": "a", "n": 1}], [even_only], _settings(moto_s3, s3_bucket), "unused")
