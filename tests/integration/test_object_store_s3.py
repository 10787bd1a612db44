"""S3ObjectStore against moto on 127.0.0.1 (started by the test) and a Wasabi-like proxy."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from surrogate_dagster.storage import IntegrityError, MissingObject, make_object_store
from surrogate_dagster.storage.s3_store import MissingCredentials, S3ObjectStore

from tests.support.s3_server import TEST_ACCESS_KEY_ENV, TEST_SECRET_KEY_ENV, moto_s3, s3_bucket, wasabi_proxy

__all__ = ["moto_s3", "s3_bucket", "wasabi_proxy"]  # fixtures used by name below
MiB = 1024 * 1024


def _calls(store: S3ObjectStore) -> list[str]:
    """Record the S3 operation names the store's client makes."""
    seen: list[str] = []
    store.client.meta.events.register("before-call.s3", lambda model, **kw: seen.append(model.name))
    return seen


def test_write_manifest_read_verify(moto_s3, s3_bucket) -> None:
    store = make_object_store(moto_s3.store_config(s3_bucket, prefix="runs/r1"))
    data = os.urandom(100_000)
    info = store.put_bytes("shards/000.parquet", data, content_type="application/vnd.apache.parquet")
    assert info.sha256 == hashlib.sha256(data).hexdigest() and info.size == len(data)
    assert store.get_bytes("shards/000.parquet") == data
    assert store.list() == ["shards/000.parquet"] and store.list("shards/0") == ["shards/000.parquet"]
    assert store.uri("shards/000.parquet") == f"s3://{s3_bucket}/runs/r1/shards/000.parquet"
    raw = moto_s3.raw_client()
    mkey = "runs/r1/shards/000.parquet.sha256.json"
    manifest = json.loads(raw.get_object(Bucket=s3_bucket, Key=mkey)["Body"].read())
    assert manifest["sha256"] == info.sha256 and manifest["size"] == len(data)
    head = raw.head_object(Bucket=s3_bucket, Key="runs/r1/shards/000.parquet")
    assert head["ContentType"] == "application/vnd.apache.parquet"
    store.delete("shards/000.parquet")
    assert store.list() == [] and not store.exists("shards/000.parquet")
    assert raw.list_objects_v2(Bucket=s3_bucket).get("KeyCount") == 0


def test_client_config_is_wasabi_safe(moto_s3, s3_bucket) -> None:
    store = make_object_store(moto_s3.store_config(s3_bucket, max_attempts=7))
    cfg = store.client.meta.config
    assert cfg.request_checksum_calculation == "when_required"
    assert cfg.response_checksum_validation == "when_required"
    assert cfg.retries == {"mode": "standard", "total_max_attempts": 7}  # 7 requests in all


def test_corruption_detected(moto_s3, s3_bucket, tmp_path: Path) -> None:
    store = make_object_store(moto_s3.store_config(s3_bucket, prefix="p"))
    info = store.put_bytes("model.bin", b"A" * 4096)
    moto_s3.raw_client().put_object(Bucket=s3_bucket, Key="p/model.bin", Body=b"A" * 4095 + b"B")
    with pytest.raises(IntegrityError) as exc:
        store.get_bytes("model.bin")
    assert exc.value.expected == info.sha256
    assert exc.value.actual == hashlib.sha256(b"A" * 4095 + b"B").hexdigest()
    with pytest.raises(IntegrityError):
        store.get_file("model.bin", tmp_path / "model.bin")
    assert not (tmp_path / "model.bin").exists()
    with pytest.raises(MissingObject):
        store.get_bytes("absent.bin")


def test_multipart_round_trip(moto_s3, s3_bucket, tmp_path: Path) -> None:
    store = make_object_store(moto_s3.store_config(
        s3_bucket, multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=2))
    calls = _calls(store)
    src = tmp_path / "ckpt.safetensors"
    src.write_bytes(os.urandom(11 * MiB + 3))
    info = store.put_file("ckpt/adapter.safetensors", src)
    assert "CompleteMultipartUpload" in calls
    etag = moto_s3.raw_client().head_object(Bucket=s3_bucket, Key="ckpt/adapter.safetensors")["ETag"]
    assert "-" in etag  # a multipart ETag, i.e. not an MD5: why the SHA-256 manifest exists
    out = tmp_path / "dl" / "adapter.safetensors"
    assert store.get_file("ckpt/adapter.safetensors", out) == info
    assert out.read_bytes() == src.read_bytes()


def test_interrupted_multipart_keeps_old_version(moto_s3, s3_bucket, tmp_path: Path) -> None:
    store = make_object_store(moto_s3.store_config(
        s3_bucket, multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB, max_concurrency=2))
    old = store.put_bytes("big/shard.bin", b"old version")
    calls = _calls(store)

    def chunks():
        for _ in range(3):
            yield os.urandom(4 * MiB)
        raise ConnectionError("source died mid-stream")

    # A failing source stops before anything is sent (the stream is hashed first).
    with pytest.raises(ConnectionError, match="mid-stream"):
        store.put_chunks("big/shard.bin", chunks())
    assert calls == []

    # A part that fails mid-upload: s3transfer aborts the upload; the old object stays.
    def fail_second_part(params, **kw):
        if params.get("PartNumber") == 2:
            raise ConnectionError("part upload died")

    store.client.meta.events.register("before-parameter-build.s3.UploadPart", fail_second_part)
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(12 * MiB))
    with pytest.raises(ConnectionError, match="part upload died"):
        store.put_file("big/shard.bin", src)
    assert "CreateMultipartUpload" in calls and "AbortMultipartUpload" in calls
    assert "CompleteMultipartUpload" not in calls
    raw = moto_s3.raw_client()
    assert raw.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    assert store.get_bytes("big/shard.bin") == b"old version" and store.info("big/shard.bin") == old
    assert store.list() == ["big/shard.bin"]


def test_wasabi_like_proxy_works_with_store_config(moto_s3, s3_bucket, wasabi_proxy, tmp_path: Path) -> None:
    before = len(wasabi_proxy.rejected)
    store = make_object_store(moto_s3.store_config(
        s3_bucket, endpoint_url=wasabi_proxy.endpoint_url, multipart_threshold=5 * MiB,
        multipart_chunksize=5 * MiB, max_concurrency=2))
    store.put_bytes("small.json", b'{"a": 1}', content_type="application/json")
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(6 * MiB))
    store.put_file("big.bin", src)  # multipart: UploadPart is where Wasabi broke
    assert store.get_bytes("small.json") == b'{"a": 1}'
    store.get_file("big.bin", tmp_path / "big.out")
    assert (tmp_path / "big.out").read_bytes() == src.read_bytes()
    assert store.list() == ["big.bin", "small.json"] and store.exists("big.bin")
    store.delete("small.json")
    assert store.list() == ["big.bin"]
    assert wasabi_proxy.rejected[before:] == []
    assert wasabi_proxy.forwarded > 0


def test_default_checksum_client_is_rejected_by_proxy(
    moto_s3, s3_bucket, wasabi_proxy, monkeypatch, tmp_path
) -> None:
    """Control: boto3's own defaults send checksum headers, which the Wasabi-like proxy refuses."""
    for var in ("AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    client = moto_s3.raw_client(endpoint_url=wasabi_proxy.endpoint_url,
                                request_checksum_calculation=None, response_checksum_validation=None)
    assert client.meta.config.request_checksum_calculation == "when_supported"
    before = len(wasabi_proxy.rejected)
    with pytest.raises(ClientError) as exc:
        client.put_object(Bucket=s3_bucket, Key="control.txt", Body=b"x")
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    method, _, headers = wasabi_proxy.rejected[before]
    assert method == "PUT" and any(h.startswith("x-amz-checksum-") for h in headers)


def test_missing_credentials_env_var_named(moto_s3, s3_bucket, monkeypatch) -> None:
    monkeypatch.delenv(TEST_SECRET_KEY_ENV)
    with pytest.raises(MissingCredentials, match=TEST_SECRET_KEY_ENV):
        make_object_store(moto_s3.store_config(s3_bucket))
    monkeypatch.setenv(TEST_SECRET_KEY_ENV, "")
    with pytest.raises(MissingCredentials, match="not set or empty"):
        make_object_store(moto_s3.store_config(s3_bucket))
    access_value = os.environ[TEST_ACCESS_KEY_ENV]
    monkeypatch.setenv(TEST_SECRET_KEY_ENV, "s3cr3t-value")
    store = make_object_store(moto_s3.store_config(s3_bucket))
    assert "s3cr3t-value" not in repr(store) and access_value not in repr(store)
