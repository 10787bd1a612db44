"""Build an ObjectStore from a plain config dict (e.g. a section of a YAML run config)."""

from __future__ import annotations

from typing import Any

from .local_store import LocalObjectStore
from .object_store import ObjectStore

_LOCAL_KEYS = {"kind", "root", "fsync"}
_S3_KEYS = {
    "kind", "bucket", "prefix", "endpoint_url", "region", "access_key_env", "secret_key_env",
    "session_token_env", "max_attempts", "multipart_threshold", "multipart_chunksize",
    "max_concurrency", "addressing_style", "connect_timeout", "read_timeout",
}
# Config keys that would hold a secret VALUE: refused so secrets never sit in config files.
_SECRET_KEYS = {
    "access_key", "secret_key", "session_token", "aws_access_key_id", "aws_secret_access_key",
    "aws_session_token", "access_key_id", "secret_access_key",
}


def make_object_store(config: dict[str, Any], *, prepare: bool = True) -> ObjectStore:
    """Return a LocalObjectStore (``kind: local``, needs ``root``) or S3ObjectStore (``kind: s3``).

    Unknown keys are an error (typos otherwise silently fall back to defaults). Error messages
    name keys only, never values. With ``prepare`` an S3 bucket gets, once per process, the
    abort-incomplete-multipart lifecycle rule and a sweep of stale uploads (s3_maintenance.py);
    a local store sweeps stale temp files when it is opened.
    """
    if not isinstance(config, dict):
        raise ValueError(f"object store config must be a dict, got {type(config).__name__}")
    secret = sorted(set(config) & _SECRET_KEYS)
    if secret:
        raise ValueError(
            f"object store config contains secret value key(s) {secret}; put secrets in environment "
            "variables and name them with access_key_env / secret_key_env / session_token_env"
        )
    kind = config.get("kind")
    if kind == "local":
        allowed = _LOCAL_KEYS
    elif kind == "s3":
        allowed = _S3_KEYS
    else:
        raise ValueError(f"object store config 'kind' must be 'local' or 's3', got {kind!r}")
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ValueError(f"unknown {kind} object store config key(s) {unknown}; allowed: {sorted(allowed)}")
    params = {k: v for k, v in config.items() if k != "kind"}
    if kind == "local":
        if not params.get("root"):
            raise ValueError("local object store config needs 'root'")
        return LocalObjectStore(**params)
    if not params.get("bucket"):
        raise ValueError("s3 object store config needs 'bucket'")
    from .s3_store import S3ObjectStore  # boto3 import only when S3 is actually used

    store = S3ObjectStore(**params)
    if prepare:
        from .s3_maintenance import prepare_bucket

        prepare_bucket(store)
    return store


def store_from_profile_section(section: dict[str, Any]) -> ObjectStore:
    """The object store a profile's ``object_store`` section names; a local root is resolved
    against the repository (``var/object_store`` in the local profile)."""
    from ..paths import resolve_repo_path

    cfg = {k: v for k, v in section.items() if v is not None}
    if cfg.get("kind") == "local":
        if not cfg.get("root"):
            raise ValueError("object_store: kind local needs a root directory")
        return make_object_store({"kind": "local", "root": str(resolve_repo_path(cfg["root"]))})
    cfg.pop("root", None)
    return make_object_store(cfg)
