"""S3 (and S3-compatible: Wasabi, MinIO, moto) ObjectStore over boto3.

Checksums: boto3 >= 1.36 adds CRC32 checksum headers to every upload by default, which Wasabi
rejects ("Checksum Type mismatch", EnterpriseDB/barman#1064, treeverse/dvc#10695). The client
therefore runs with ``request_checksum_calculation="when_required"`` and
``response_checksum_validation="when_required"``; integrity comes from the SHA-256 manifest
(verified on every read) plus Content-MD5 on single-part PUTs.
Operations that *require* a checksum (DeleteObjects) are avoided on purpose.

Overwrites: a PUT, and the CompleteMultipartUpload of a multipart upload, replace an object
atomically, so the object itself is always an old or a new version, whole. Every object carries
its own sha256 as user metadata (``x-amz-meta-sha256``), stored atomically with its bytes; reads
verify the bytes against it, and fall back to the sidecar only for objects without it (written
by other tools). The sidecar is written after the object and nothing is deleted first, so a
writer killed at any moment leaves a readable key, and of concurrent writers the one whose
upload completed last wins, whole, whatever order their sidecars land in. A killed multipart
upload leaves parts behind: s3_maintenance.py aborts them (lifecycle rule or a sweep).

Credentials are read only from the environment variables NAMED by the config and are never
logged or kept in repr().
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from ..scrub import scrub_methods
from .object_store import (
    MissingObject,
    ObjectInfo,
    ObjectStore,
    manifest_bytes,
    manifest_versions,
    sha256_file,
    validate_key,
    validate_raw_key,
)

MiB = 1024 * 1024
SHA256_META = "sha256"  # user metadata key: sent as x-amz-meta-sha256
_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}


class MissingCredentials(RuntimeError):
    """An environment variable that the S3 config names as a credential source is unset/empty."""


def _env_secret(var_name: str | None, role: str) -> str:
    if not var_name:
        raise MissingCredentials(f"S3 config must name an environment variable in {role!r}")
    value = os.environ.get(var_name)
    if not value:
        # Name the variable, never a value.
        raise MissingCredentials(
            f"environment variable {var_name!r} (named by S3 config {role!r}) is not set or empty"
        )
    return value


@scrub_methods  # an endpoint that echoes a key in an error body: every exception leaves scrubbed
class S3ObjectStore(ObjectStore):
    """Objects live at ``s3://bucket/prefix/key``.

    Uploads above ``multipart_threshold`` go through s3transfer's multipart upload, which aborts
    the upload on failure, so nothing appears under the final key; single-part PUTs are atomic.
    Every object carries its sha256 as user metadata; the sidecar follows the object.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key_env: str = "AWS_ACCESS_KEY_ID",
        secret_key_env: str = "AWS_SECRET_ACCESS_KEY",
        session_token_env: str | None = None,
        *,
        max_attempts: int = 5,
        multipart_threshold: int = 64 * MiB,
        multipart_chunksize: int = 64 * MiB,
        max_concurrency: int = 4,
        addressing_style: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ValueError(f"invalid S3 bucket name {bucket!r}")
        prefix = prefix.strip("/")
        self.bucket = bucket
        self.prefix = validate_key(prefix) if prefix else ""
        self.endpoint_url = endpoint_url
        self.region = region
        session = boto3.session.Session(
            aws_access_key_id=_env_secret(access_key_env, "access_key_env"),
            aws_secret_access_key=_env_secret(secret_key_env, "secret_key_env"),
            aws_session_token=(
                _env_secret(session_token_env, "session_token_env") if session_token_env else None
            ),
            region_name=region,
        )
        config = Config(
            # total_max_attempts counts the first try (botocore's "max_attempts" counts retries
            # only, so max_attempts=5 there would mean 6 requests).
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            s3={"addressing_style": addressing_style} if addressing_style else None,
        )
        self.client = session.client("s3", endpoint_url=endpoint_url, config=config)
        self.transfer_config = TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=max_concurrency,
        )

    def __repr__(self) -> str:
        return (
            f"S3ObjectStore(bucket={self.bucket!r}, prefix={self.prefix!r}, "
            f"endpoint_url={self.endpoint_url!r})"
        )

    def _full(self, key: str) -> str:
        validate_raw_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    @staticmethod
    def _is_not_found(exc: ClientError) -> bool:
        err = exc.response.get("Error", {})
        status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        return err.get("Code") in _NOT_FOUND or status == "404"

    def _extra(self, content_type: str | None) -> dict[str, str]:
        return {"ContentType": content_type} if content_type else {}

    # ---- raw primitives ---------------------------------------------------------------------
    def _put_raw_bytes(self, key: str, data: bytes, content_type: str | None,
                       metadata: dict[str, str] | None = None) -> None:
        extra = {**self._extra(content_type), **({"Metadata": metadata} if metadata else {})}
        if len(data) >= self.transfer_config.multipart_threshold:
            self._upload_fileobj(key, io.BytesIO(data), extra)
            return
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        self.client.put_object(Bucket=self.bucket, Key=self._full(key), Body=data, ContentMD5=md5, **extra)

    def _upload_fileobj(self, key: str, fileobj: BinaryIO, extra: dict[str, Any]) -> None:
        # Below multipart_threshold one atomic PUT; above it a multipart upload that s3transfer
        # aborts if a part fails (a killed process leaves the parts: see s3_maintenance.py).
        self.client.upload_fileobj(fileobj, self.bucket, self._full(key), ExtraArgs=extra or None,
                                   Config=self.transfer_config)

    def _write_manifest(self, info: ObjectInfo, content_type: str | None) -> None:
        self._put_raw_bytes(self.manifest_key(info.key), manifest_bytes(info, content_type), "application/json")

    def _replace(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> ObjectInfo:
        # The sha256 goes into the object's metadata, which S3 takes before the first byte: the
        # stream is spooled (memory up to the multipart threshold, then a temp file) and hashed
        # first. A failing iterator therefore stops before anything is sent.
        with tempfile.SpooledTemporaryFile(max_size=self.transfer_config.multipart_threshold) as spool:
            h, size = hashlib.sha256(), 0
            for chunk in chunks:
                chunk = bytes(chunk)
                h.update(chunk)
                size += len(chunk)
                spool.write(chunk)
            info = ObjectInfo(key, h.hexdigest(), size)
            spool.seek(0)
            if size < self.transfer_config.multipart_threshold:
                self._put_raw_bytes(key, spool.read(), content_type, {SHA256_META: info.sha256})
            else:
                self._upload_fileobj(key, spool, {**self._extra(content_type),
                                                  "Metadata": {SHA256_META: info.sha256}})
        self._write_manifest(info, content_type)
        return info

    def _open_raw(self, key: str) -> BinaryIO:
        return self._open_raw_claimed(key)[0]

    def _open_raw_claimed(self, key: str) -> tuple[BinaryIO, str | None]:
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self._full(key))
        except ClientError as exc:
            if self._is_not_found(exc):
                raise MissingObject(key) from None
            raise
        return resp["Body"], resp.get("Metadata", {}).get(SHA256_META)

    def _head(self, key: str) -> dict[str, Any]:
        try:
            return self.client.head_object(Bucket=self.bucket, Key=self._full(key))
        except ClientError as exc:
            if self._is_not_found(exc):
                raise MissingObject(key) from None
            raise

    def _download_raw(self, key: str, dest: Path) -> tuple[str | None, str | None]:
        # s3transfer does ranged, parallel, retried GETs: better than one stream for checkpoints.
        # Its ranges could straddle a concurrent overwrite; the hash check then fails and the
        # read is retried (ObjectStore._read_verified).
        claimed = self._head(key).get("Metadata", {}).get(SHA256_META)
        try:
            self.client.download_file(self.bucket, self._full(key), str(dest), Config=self.transfer_config)
        except ClientError as exc:
            if self._is_not_found(exc):
                raise MissingObject(key) from None
            raise
        return None, claimed

    def _exists_raw(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._full(key))
            return True
        except ClientError as exc:
            if self._is_not_found(exc):
                return False
            raise

    def _list_raw(self, prefix: str) -> Iterator[str]:
        root = f"{self.prefix}/" if self.prefix else ""
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=root + prefix):
            for obj in page.get("Contents", []):
                yield obj["Key"][len(root):]

    def _delete_raw(self, key: str) -> None:
        # Single-key DeleteObject on purpose: DeleteObjects requires a checksum header.
        self.client.delete_object(Bucket=self.bucket, Key=self._full(key))

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._full(validate_key(key))}"

    # ---- overrides --------------------------------------------------------------------------
    def info(self, key: str) -> ObjectInfo:
        """The version under ``key`` now: the object's own sha256 when it carries one (the sidecar
        can trail it by one write), else the sidecar's entry."""
        validate_key(key)
        doc = self._manifest_doc(key)
        try:
            head = self._head(key)
        except MissingObject:
            raise MissingObject(key, "manifest present but the object is gone") from None
        claimed = head.get("Metadata", {}).get(SHA256_META)
        if claimed is not None:
            return ObjectInfo(key, claimed, int(head["ContentLength"]))
        return manifest_versions(key, doc)[0]

    def put_bytes(self, key: str, data: bytes, content_type: str | None = None) -> ObjectInfo:
        """Store ``data`` (sha256 in its metadata), then its sidecar."""
        validate_key(key)
        data = bytes(data)
        info = ObjectInfo(key, hashlib.sha256(data).hexdigest(), len(data))
        self._put_raw_bytes(key, data, content_type, {SHA256_META: info.sha256})
        self._write_manifest(info, content_type)
        return info

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None) -> ObjectInfo:
        """Hash the file, upload it with s3transfer (parallel multipart for big files), then its sidecar."""
        validate_key(key)
        sha, size = sha256_file(path)
        extra = {**self._extra(content_type), "Metadata": {SHA256_META: sha}}
        self.client.upload_file(str(path), self.bucket, self._full(key), ExtraArgs=extra,
                                Config=self.transfer_config)
        info = ObjectInfo(key, sha, size)
        self._write_manifest(info, content_type)
        return info
