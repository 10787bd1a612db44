"""Clean-up of incomplete S3 multipart uploads that a killed writer leaves behind.

A process killed mid-upload never sends AbortMultipartUpload, and the uploaded parts are billed
until something aborts them. Two mechanisms, both applied when an S3 store is set up
(``prepare_bucket``, once per bucket and process) and from the command line
(``python -m surrogate_dagster.storage.s3_maintenance``):

- a bucket lifecycle rule with ``AbortIncompleteMultipartUpload`` (AWS S3, MinIO, moto), merged
  into the bucket's existing rules by its ID;
- a sweep that aborts uploads under the store's prefix initiated more than a grace period ago,
  for providers that refuse that lifecycle action (Wasabi aborts after a fixed 30 days instead).

Both are best effort at set-up: missing permissions are logged, never fatal to the store.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import logging
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

LOG = logging.getLogger(__name__)
RULE_ID = "surrogate-abort-incomplete-multipart"
DEFAULT_DAYS = 1
# An upload older than this has no live writer: the largest checkpoint uploads in minutes.
DEFAULT_SWEEP_AGE = timedelta(days=1)
_PREPARED: set[tuple[str | None, str, str]] = set()


def _md5_instead_of_crc32(request: Any, **_: Any) -> None:
    """PutBucketLifecycleConfiguration requires a checksum; botocore would send a CRC32 header,
    which Wasabi rejects. Content-MD5 satisfies the requirement everywhere."""
    for name in [h for h in request.headers if h.lower().startswith("x-amz-checksum-")]:
        del request.headers[name]
    for name in [h for h in request.headers if h.lower() == "x-amz-sdk-checksum-algorithm"]:
        del request.headers[name]
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode()
    request.headers["Content-MD5"] = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()


def abort_incomplete_rule(prefix: str = "", days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """The lifecycle rule: abort multipart uploads under ``prefix`` ``days`` after initiation."""
    return {"ID": RULE_ID, "Status": "Enabled", "Filter": {"Prefix": prefix},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": days}}


def ensure_abort_incomplete_rule(client: Any, bucket: str, prefix: str = "", days: int = DEFAULT_DAYS) -> bool:
    """Put the abort-incomplete-multipart rule on ``bucket``, keeping its other rules.

    PutBucketLifecycleConfiguration replaces the whole configuration, so the current rules are
    read first and only the rule with this module's ID is replaced. Returns True when the
    configuration was written, False when the rule was already in place.
    """
    try:
        rules = client.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchLifecycleConfiguration":
            raise
        rules = []
    wanted = abort_incomplete_rule(prefix, days)
    if any(r.get("ID") == RULE_ID and r == wanted for r in rules):
        return False
    rules = [r for r in rules if r.get("ID") != RULE_ID] + [wanted]
    event = "before-sign.s3.PutBucketLifecycleConfiguration"
    client.meta.events.register(event, _md5_instead_of_crc32)
    try:
        client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    finally:
        client.meta.events.unregister(event, _md5_instead_of_crc32)
    return True


def abort_stale_uploads(client: Any, bucket: str, prefix: str = "",
                        older_than: timedelta = DEFAULT_SWEEP_AGE) -> list[str]:
    """Abort multipart uploads under ``prefix`` initiated more than ``older_than`` ago.

    Returns the keys whose uploads were aborted. Younger uploads may belong to a live writer.
    """
    cutoff = datetime.now(timezone.utc) - older_than
    aborted: list[str] = []
    paginator = client.get_paginator("list_multipart_uploads")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for up in page.get("Uploads", []):
            if up["Initiated"] <= cutoff:
                client.abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
                aborted.append(up["Key"])
    return aborted


def prepare_bucket(store: Any, days: int = DEFAULT_DAYS, older_than: timedelta = DEFAULT_SWEEP_AGE) -> None:
    """Rule + sweep for an S3ObjectStore's bucket and prefix, once per process; logs refusals."""
    marker = (store.endpoint_url, store.bucket, store.prefix)
    if marker in _PREPARED:
        return
    _PREPARED.add(marker)
    prefix = f"{store.prefix}/" if store.prefix else ""
    try:
        ensure_abort_incomplete_rule(store.client, store.bucket, prefix, days)
    except (ClientError, BotoCoreError) as exc:
        LOG.warning("bucket %s: abort-incomplete-multipart lifecycle rule not applied (%s); "
                    "stale uploads are aborted by the sweep instead", store.bucket, exc)
    try:
        aborted = abort_stale_uploads(store.client, store.bucket, prefix, older_than)
        if aborted:
            LOG.info("bucket %s: aborted %d stale multipart upload(s)", store.bucket, len(aborted))
    except (ClientError, BotoCoreError) as exc:
        LOG.warning("bucket %s: stale multipart uploads not swept (%s)", store.bucket, exc)


def main(argv: list[str] | None = None) -> int:
    """Apply the rule and sweep the bucket of a profile's object store (default: the active one)."""
    ap = argparse.ArgumentParser(prog="python -m surrogate_dagster.storage.s3_maintenance", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", help="profile name or YAML path (default: SURROGATE_PROFILE or local)")
    ap.add_argument("--days", type=int, default=DEFAULT_DAYS, help="DaysAfterInitiation of the rule")
    ap.add_argument("--older-than-hours", type=float, default=DEFAULT_SWEEP_AGE.total_seconds() / 3600,
                    help="abort uploads initiated more than this long ago")
    args = ap.parse_args(argv)
    from ..catalog.loader import load_profile
    from .s3_store import S3ObjectStore

    cfg = {k: v for k, v in load_profile(args.profile).object_store.model_dump().items() if v is not None}
    if cfg.get("kind") != "s3":
        print("the profile's object store is not S3: nothing to do")
        return 0
    store = S3ObjectStore(**{k: v for k, v in cfg.items() if k != "kind"})  # validated by the profile
    prefix = f"{store.prefix}/" if store.prefix else ""
    try:
        changed = ensure_abort_incomplete_rule(store.client, store.bucket, prefix, args.days)
        print(f"lifecycle rule {RULE_ID}: {'applied' if changed else 'already in place'}")
    except ClientError as exc:
        print(f"lifecycle rule {RULE_ID} refused by the provider: {exc}", file=sys.stderr)
    aborted = abort_stale_uploads(store.client, store.bucket, prefix, timedelta(hours=args.older_than_hours))
    print(f"aborted {len(aborted)} stale multipart upload(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
