"""S3 (and S3-compatible: Wasabi, MinIO, moto) ObjectStore over boto3.

Checksums: boto3 >= 1.36 adds CRC32 checksum headers to every upload by default, which Wasabi
rejects ("Checksum Type mismatch", EnterpriseDB/barman#1064, treeverse/dvc#10695). The client
therefore runs with ``request_checksum_calculation="when_required"`` and
``response_checksum_validation="when_required"``; integrity comes from the SHA-256 manifest
(verified on every read) plus Content-MD5 on single-part PUTs.
Operations that *require* a checksum (DeleteObjects) are avoided on purpose.

Credentials are read only from the environment variables NAMED by the config and are never
logged or kept in repr().
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from .object_store import (
    ObjectInfo,
    MissingObject,
    ObjectStore,
    sha256_file,
    validate_key,
    validate_raw_key,
)

MiB = 1024 * 1024
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


class _IterReader(io.RawIOBase):
    """Non-seekable file-like view of a chunk iterator, for s3transfer's upload_fileobj."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._it: Iterator[bytes] = iter(chunks)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            nxt = next(self._it, None)
            if nxt is None:
                return 0
            self._buf = nxt
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


class S3ObjectStore(ObjectStore):
    """Objects live at ``s3://bucket/prefix/key``.

    Uploads above ``multipart_threshold`` go through s3transfer's multipart upload, which aborts
    the upload on failure, so nothing appears under the final key; single-part PUTs are atomic.
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
    def _put_raw_bytes(self, key: str, data: bytes, content_type: str | None) -> None:
        if len(data) >= self.transfer_config.multipart_threshold:
            self._put_raw_stream(key, [data], content_type)
            return
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        self.client.put_object(
            Bucket=self.bucket, Key=self._full(key), Body=data, ContentMD5=md5, **self._extra(content_type)
        )

    def _put_raw_stream(self, key: str, chunks: Iterable[bytes], content_type: str | None) -> None:
        # s3transfer reads up to multipart_threshold first: below it this is one atomic PUT,
        # above it a multipart upload that s3transfer aborts if the source or a part fails.
        # BufferedReader makes read(n) return n bytes unless at EOF: s3transfer takes a short
        # first read as "small object" and would then buffer the whole stream for one PUT.
        self.client.upload_fileobj(
            io.BufferedReader(_IterReader(chunks), buffer_size=1024 * 1024),
            self.bucket,
            self._full(key),
            ExtraArgs=self._extra(content_type) or None,
            Config=self.transfer_config,
        )

    def _open_raw(self, key: str) -> BinaryIO:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._full(key))["Body"]
        except ClientError as exc:
            if self._is_not_found(exc):
                raise MissingObject(key) from None
            raise

    def _download_raw(self, key: str, dest: Path) -> str | None:
        # s3transfer does ranged, parallel, retried GETs: better than one stream for checkpoints.
        try:
            self.client.download_file(self.bucket, self._full(key), str(dest), Config=self.transfer_config)
        except ClientError as exc:
            if self._is_not_found(exc):
                raise MissingObject(key) from None
            raise
        return None

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
    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None) -> ObjectInfo:
        """Hash the file, then upload it with s3transfer (parallel multipart for big files)."""
        validate_key(key)
        sha, size = sha256_file(path)
        self._uncommit(key)
        self.client.upload_file(
            str(path), self.bucket, self._full(key), ExtraArgs=self._extra(content_type) or None,
            Config=self.transfer_config,
        )
        return self._commit(ObjectInfo(key, sha, size), content_type)
