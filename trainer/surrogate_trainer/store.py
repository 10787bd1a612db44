"""The object store as the trainer sees it: files and directories in, files and directories out.

It speaks the pipeline's manifest protocol (surrogate_dagster/storage/object_store.py) without
importing the pipeline: every object ``K`` has a sidecar ``K.sha256.json`` = {key, sha256, size,
content_type}, and reads verify the bytes against it. Nothing is deleted before a write: when ``K``
already holds other bytes, the sidecar first names the new version with the one on disk as
``previous``; then the bytes are replaced atomically (a temp file renamed over the object, or one
S3 upload that also carries the sha256 as ``x-amz-meta-sha256``); then the sidecar is rewritten
without ``previous``. A read accepts either version, or, on S3, bytes matching the object's own
sha256 metadata (what the pipeline's store leaves when it is killed before its sidecar), so a
writer killed at any point leaves the old or the new object whole. ``exists`` answers from the
sidecar; ``list`` returns the keys whose object and sidecar are both present.
tests/integration/test_trainer_store_overwrite.py kills overwrites through this client at random
moments, locally and on S3, and reads a pipeline object left mid-overwrite.

Two backends: a local directory (the local profile, a shared volume) and S3/Wasabi (boto3 with the
checksum settings Wasabi needs, PITFALLS "Storage"). Credentials come from the environment
variables the config names; values never appear in a config or a message.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

MANIFEST_SUFFIX = ".sha256.json"
SHA256_META = "sha256"  # S3 user metadata (x-amz-meta-sha256): the pipeline's store reads it too
TMP_PREFIX = ".~tmp-"
CHUNK = 8 * 1024 * 1024


class StoreError(RuntimeError):
    """A missing or corrupt object (the message names the key, never a credential)."""


def _sha256_file(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


class TrainerStore:
    """put/get of files, directory trees and small JSON documents, with SHA-256 manifests."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.kind = config.get("kind")
        if self.kind == "local":
            self.root = Path(config["root"]).resolve()
            self.root.mkdir(parents=True, exist_ok=True)
        elif self.kind == "s3":
            import boto3
            from boto3.s3.transfer import TransferConfig
            from botocore.config import Config

            def env(name: str | None) -> str | None:
                if not name:
                    return None
                value = os.environ.get(name)
                if not value:
                    raise StoreError(f"environment variable {name!r} named by the store config is not set")
                return value

            self.bucket = config["bucket"]
            self.prefix = (config.get("prefix") or "").strip("/")
            self.client = boto3.session.Session(
                aws_access_key_id=env(config.get("access_key_env")),
                aws_secret_access_key=env(config.get("secret_key_env")),
                region_name=config.get("region"),
            ).client("s3", endpoint_url=config.get("endpoint_url"), config=Config(
                retries={"mode": "standard", "total_max_attempts": int(config.get("max_attempts", 8))},
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ))
            self.transfer = TransferConfig(multipart_threshold=64 << 20, multipart_chunksize=64 << 20)
        else:
            raise StoreError(f"store kind must be 'local' or 's3', got {self.kind!r}")

    # ---- raw primitives --------------------------------------------------------------------
    def _full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.kind == "s3" and self.prefix else key

    def _local(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def _raw_put_file(self, key: str, src: Path, sha: str | None = None) -> None:
        if self.kind == "local":
            dest = self._local(key)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
            try:
                with open(src, "rb") as fin, open(tmp, "xb") as fout:
                    while chunk := fin.read(CHUNK):
                        fout.write(chunk)
                    fout.flush()
                    os.fsync(fout.fileno())
                os.replace(tmp, dest)
            finally:
                tmp.unlink(missing_ok=True)
        else:
            extra = {"Metadata": {SHA256_META: sha}} if sha else None
            self.client.upload_file(str(src), self.bucket, self._full(key), Config=self.transfer,
                                    ExtraArgs=extra)

    def _raw_put_bytes(self, key: str, data: bytes, sha: str | None = None) -> None:
        if self.kind == "local":
            dest = self._local(key)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        else:
            extra = {"Metadata": {SHA256_META: sha}} if sha else {}
            self.client.put_object(Bucket=self.bucket, Key=self._full(key), Body=data, **extra)

    def _raw_sha_claim(self, key: str) -> str | None:
        """The sha256 an S3 object carries in its own metadata (written in the same PUT as its
        bytes, so it always describes them); None for local objects or objects without one."""
        if self.kind == "local":
            return None
        try:
            return self.client.head_object(Bucket=self.bucket, Key=self._full(key)).get("Metadata", {}).get(SHA256_META)
        except self.client.exceptions.ClientError:
            return None

    def _raw_get_bytes(self, key: str) -> bytes | None:
        if self.kind == "local":
            path = self._local(key)
            return path.read_bytes() if path.is_file() else None
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._full(key))["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def _raw_get_file(self, key: str, dest: Path) -> None:
        if self.kind == "local":
            src = self._local(key)
            if not src.is_file():
                raise StoreError(f"object {key!r} has a manifest but no bytes")
            with open(src, "rb") as fin, open(dest, "wb") as fout:
                while chunk := fin.read(CHUNK):
                    fout.write(chunk)
        else:
            self.client.download_file(self.bucket, self._full(key), str(dest), Config=self.transfer)

    def _raw_delete(self, key: str) -> None:
        if self.kind == "local":
            self._local(key).unlink(missing_ok=True)
        else:
            self.client.delete_object(Bucket=self.bucket, Key=self._full(key))

    def _raw_list(self, prefix: str) -> list[str]:
        if self.kind == "local":
            base = self._local(prefix.rstrip("/")) if prefix else self.root
            if not base.is_dir():
                return []
            out = []
            for p in base.rglob("*"):
                rel = p.relative_to(self.root).as_posix()
                if p.is_file() and TMP_PREFIX not in rel:
                    out.append(rel)
            return out
        root = f"{self.prefix}/" if self.prefix else ""
        keys: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=root + prefix):
            keys += [o["Key"][len(root):] for o in page.get("Contents", [])]
        return keys

    # ---- manifest protocol -----------------------------------------------------------------
    # An overwrite never leaves the key unreadable: the sidecar first names the new version with
    # the current one as ``previous``, then the bytes are replaced (atomically: rename or one S3
    # PUT), then the sidecar drops ``previous``. A reader accepts bytes matching either version,
    # so a writer killed at any point leaves the old or the new object, whole. The pipeline's
    # object store writes the same sidecar format.
    def _commit(self, key: str, sha: str, size: int, content_type: str | None,
                previous: dict | None = None) -> None:
        doc = {"key": key, "sha256": sha, "size": size, "content_type": content_type}
        if previous is not None:
            doc["previous"] = previous
        self._raw_put_bytes(key + MANIFEST_SUFFIX, json.dumps(doc).encode())

    def _on_disk(self, key: str, man: dict) -> tuple[str, int] | None:
        """The version the object's bytes are now. A committed sidecar says so itself; one left
        by an interrupted write (it still lists ``previous``) may name bytes that never landed,
        so the bytes are identified: hashed locally, by their own metadata on S3."""
        if not man.get("previous"):
            return man["sha256"], man["size"]
        if self.kind == "local":
            path = self._local(key)
            return _sha256_file(path) if path.is_file() else None
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._full(key))
        except self.client.exceptions.ClientError:
            return None
        claimed = head.get("Metadata", {}).get(SHA256_META)
        return (claimed, head["ContentLength"]) if claimed else None

    def _begin(self, key: str, sha: str, size: int, content_type: str | None) -> None:
        """Announce the new version before its bytes land, keeping the one on disk acceptable."""
        current = self._manifest(key)
        if current is None:
            return
        on_disk = self._on_disk(key, current)
        if on_disk is not None and on_disk != (sha, size):
            self._commit(key, sha, size, content_type, previous={"sha256": on_disk[0], "size": on_disk[1]})

    @staticmethod
    def _accepted(man: dict) -> list[tuple[str, int]]:
        out = [(man["sha256"], man["size"])]
        if man.get("previous"):
            out.append((man["previous"]["sha256"], man["previous"]["size"]))
        return out

    def _verify(self, key: str, man: dict, sha: str, size: int) -> None:
        if (sha, size) in self._accepted(man) or self._raw_sha_claim(key) == sha:
            return
        raise StoreError(f"object {key!r}: sha256 {sha} does not match its manifest {man['sha256']}")

    def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None) -> dict:
        """Upload one file under ``key``; returns its manifest entry."""
        sha, size = _sha256_file(Path(path))
        self._begin(key, sha, size, content_type)
        self._raw_put_file(key, Path(path), sha)
        self._commit(key, sha, size, content_type)
        return {"key": key, "sha256": sha, "size": size}

    def put_json(self, key: str, doc: Any) -> None:
        data = json.dumps(doc, indent=1, sort_keys=True).encode()
        sha = hashlib.sha256(data).hexdigest()
        self._begin(key, sha, len(data), "application/json")
        self._raw_put_bytes(key, data, sha)
        self._commit(key, sha, len(data), "application/json")

    def _manifest(self, key: str) -> dict | None:
        raw = self._raw_get_bytes(key + MANIFEST_SUFFIX)
        return json.loads(raw) if raw is not None else None

    def exists(self, key: str) -> bool:
        return self._manifest(key) is not None

    def get_json(self, key: str) -> Any:
        man = self._manifest(key)
        if man is None:
            raise StoreError(f"no object under key {key!r}")
        data = self._raw_get_bytes(key)
        if data is None:
            raise StoreError(f"object {key!r} has a manifest but no bytes")
        self._verify(key, man, hashlib.sha256(data).hexdigest(), len(data))
        return json.loads(data)

    def get_file(self, key: str, dest: str | os.PathLike[str]) -> None:
        """Download ``key`` to ``dest``, verified against its manifest (``dest`` appears only if valid)."""
        man = self._manifest(key)
        if man is None:
            raise StoreError(f"no object under key {key!r}")
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        try:
            self._raw_get_file(key, tmp)
            self._verify(key, man, *_sha256_file(tmp))
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)

    def list(self, prefix: str) -> list[str]:
        """Committed keys (object and manifest both present) starting with ``prefix``."""
        raw = set(self._raw_list(prefix))
        return sorted(k for k in raw if not k.endswith(MANIFEST_SUFFIX) and k + MANIFEST_SUFFIX in raw)

    def delete(self, key: str) -> None:
        self._raw_delete(key + MANIFEST_SUFFIX)
        self._raw_delete(key)

    # ---- trees -----------------------------------------------------------------------------
    def put_tree(self, prefix: str, directory: str | os.PathLike[str], skip: tuple[str, ...] = ()) -> list[dict]:
        """Upload every file under ``directory`` to ``prefix/<relative path>``; returns the manifest entries."""
        directory = Path(directory)
        entries = []
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            rel = path.relative_to(directory).as_posix()
            if any(rel == s or rel.startswith(s.rstrip("/") + "/") for s in skip):
                continue
            entry = self.put_file(f"{prefix}/{rel}", path)
            entries.append({**entry, "path": rel})
        return entries

    def get_tree(self, prefix: str, directory: str | os.PathLike[str]) -> list[str]:
        """Download every object under ``prefix/`` into ``directory``; returns the relative paths."""
        prefix = prefix.rstrip("/") + "/"
        rels = []
        for key in self.list(prefix):
            rel = key[len(prefix):]
            self.get_file(key, Path(directory) / rel)
            rels.append(rel)
        if not rels:
            raise StoreError(f"nothing stored under {prefix!r}")
        return rels

    def delete_tree(self, prefix: str) -> None:
        for key in self.list(prefix.rstrip("/") + "/"):
            self.delete(key)
