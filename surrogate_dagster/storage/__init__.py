"""Object storage (local filesystem or S3/Wasabi) with SHA-256 manifests, and lossless Parquet I/O.

No Dagster imports here: assets and IO managers wrap these classes.
"""

from .factory import make_object_store
from .local_store import LocalObjectStore
from .object_store import (
    MANIFEST_SUFFIX,
    IntegrityError,
    MissingObject,
    ObjectInfo,
    ObjectStore,
    validate_key,
)


def __getattr__(name: str):  # lazy: importing boto3 costs ~0.3 s and local-only users skip it
    if name in ("S3ObjectStore", "MissingCredentials"):
        from . import s3_store

        return getattr(s3_store, name)
    raise AttributeError(name)


__all__ = [
    "MANIFEST_SUFFIX",
    "IntegrityError",
    "LocalObjectStore",
    "MissingCredentials",
    "MissingObject",
    "ObjectInfo",
    "ObjectStore",
    "S3ObjectStore",
    "make_object_store",
    "validate_key",
]
