"""Incomplete multipart uploads: lifecycle rule (merged, Wasabi-safe) and the stale-upload sweep."""

from __future__ import annotations

from datetime import timedelta

from surrogate_dagster.storage import make_object_store
from surrogate_dagster.storage.s3_maintenance import (
    RULE_ID,
    abort_stale_uploads,
    ensure_abort_incomplete_rule,
    main,
)

from tests.support.s3_server import moto_s3, s3_bucket, wasabi_proxy

__all__ = ["moto_s3", "s3_bucket", "wasabi_proxy"]  # fixtures used by name below


def _rules(raw, bucket: str) -> list[dict]:
    return raw.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]


def test_store_setup_applies_rule_and_keeps_other_rules(moto_s3, s3_bucket) -> None:
    raw = moto_s3.raw_client()
    other = {"ID": "expire-scratch", "Status": "Enabled", "Filter": {"Prefix": "scratch/"},
             "Expiration": {"Days": 7}}
    raw.put_bucket_lifecycle_configuration(Bucket=s3_bucket, LifecycleConfiguration={"Rules": [other]})
    make_object_store(moto_s3.store_config(s3_bucket, prefix="runs"))
    rules = {r["ID"]: r for r in _rules(raw, s3_bucket)}
    assert set(rules) == {"expire-scratch", RULE_ID}
    assert rules[RULE_ID]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rules[RULE_ID]["Filter"] == {"Prefix": "runs/"}
    assert rules["expire-scratch"]["Expiration"] == {"Days": 7}
    # Applying again changes nothing.
    store = make_object_store(moto_s3.store_config(s3_bucket, prefix="runs"), prepare=False)
    assert ensure_abort_incomplete_rule(store.client, s3_bucket, "runs/") is False


def test_rule_goes_through_wasabi_like_proxy(moto_s3, s3_bucket, wasabi_proxy) -> None:
    before = len(wasabi_proxy.rejected)
    store = make_object_store(moto_s3.store_config(s3_bucket, endpoint_url=wasabi_proxy.endpoint_url),
                              prepare=False)
    assert ensure_abort_incomplete_rule(store.client, s3_bucket) is True
    assert wasabi_proxy.rejected[before:] == []  # Content-MD5, no x-amz-checksum-* header
    assert [r["ID"] for r in _rules(moto_s3.raw_client(), s3_bucket)] == [RULE_ID]


def test_sweep_aborts_stale_uploads_under_prefix_only(moto_s3, s3_bucket) -> None:
    raw = moto_s3.raw_client()
    mine = raw.create_multipart_upload(Bucket=s3_bucket, Key="runs/big.bin")["UploadId"]
    raw.upload_part(Bucket=s3_bucket, Key="runs/big.bin", UploadId=mine, PartNumber=1, Body=b"x" * 1024)
    raw.create_multipart_upload(Bucket=s3_bucket, Key="elsewhere/big.bin")
    store = make_object_store(moto_s3.store_config(s3_bucket, prefix="runs"), prepare=False)
    # A young upload may belong to a live writer: kept. (moto reports every upload as initiated
    # in 2010, so "young" here is anything under a century.)
    assert abort_stale_uploads(store.client, s3_bucket, "runs/", older_than=timedelta(days=36500)) == []
    assert abort_stale_uploads(store.client, s3_bucket, "runs/", older_than=timedelta(0)) == ["runs/big.bin"]
    left = [u["Key"] for u in raw.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])]
    assert left == ["elsewhere/big.bin"]


def test_cli_applies_rule_for_profile(moto_s3, s3_bucket, tmp_path, capsys) -> None:
    import yaml

    from surrogate_dagster.catalog.loader import PROFILES_DIR

    doc = yaml.safe_load((PROFILES_DIR / "local.yaml").read_text())
    doc["object_store"] = {"kind": "s3", "bucket": s3_bucket, "endpoint_url": moto_s3.endpoint_url,
                           "access_key_env": moto_s3.access_key_env, "secret_key_env": moto_s3.secret_key_env}
    profile = tmp_path / "p.yaml"
    profile.write_text(yaml.safe_dump(doc))
    assert main(["--profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert "applied" in out and "aborted 0" in out
    assert [r["ID"] for r in _rules(moto_s3.raw_client(), s3_bucket)] == [RULE_ID]
