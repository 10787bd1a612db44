"""Local S3 stand-ins for tests: a moto server on 127.0.0.1 and a Wasabi-like checksum-rejecting proxy.

Use as context managers (``moto_s3_server()``, ``checksum_rejecting_proxy(url)``) or as pytest
fixtures: import ``moto_s3``, ``s3_bucket`` and ``wasabi_proxy`` into a test module.

Nothing here contacts the internet; credentials are dummy values placed in the environment
variables the store config names (TEST_ACCESS_KEY_ENV / TEST_SECRET_KEY_ENV).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.config import Config

from surrogate_dagster.storage.wasabi_standin import (ChecksumRejectingProxy, checksum_rejecting_proxy,  # noqa: F401
                                                     is_checksum_header)

TEST_ACCESS_KEY_ENV = "SURROGATE_TEST_S3_ACCESS_KEY"
TEST_SECRET_KEY_ENV = "SURROGATE_TEST_S3_SECRET_KEY"
REGION = "us-east-1"
_DUMMY = {TEST_ACCESS_KEY_ENV: "testing-access-key", TEST_SECRET_KEY_ENV: "testing-secret-key"}


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    """Set env vars for the block and restore the previous values afterwards."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _no_proxy_env() -> dict[str, str]:
    # An HTTP(S)_PROXY in the environment would route 127.0.0.1 traffic away from the stand-in.
    cur = os.environ.get("NO_PROXY", os.environ.get("no_proxy", ""))
    val = ",".join(x for x in [cur, "127.0.0.1", "localhost"] if x)
    return {"NO_PROXY": val, "no_proxy": val}


@dataclass
class MotoS3:
    """A running moto S3 server and helpers to talk to it directly (bypassing the ObjectStore)."""

    endpoint_url: str
    access_key_env: str = TEST_ACCESS_KEY_ENV
    secret_key_env: str = TEST_SECRET_KEY_ENV
    _default_client: Any = field(default=None, repr=False)

    def raw_client(self, endpoint_url: str | None = None, **config_kwargs: Any) -> Any:
        """A boto3 S3 client on the server (or on ``endpoint_url``, e.g. a proxy).

        Defaults to the Wasabi-safe checksum settings; pass request_checksum_calculation=... to
        override (e.g. "when_supported", boto3's own default) for control experiments.
        """
        if endpoint_url is None and not config_kwargs and self._default_client is not None:
            return self._default_client  # building a client costs ~0.5 s; reuse the plain one
        cfg = {
            "request_checksum_calculation": "when_required",
            "response_checksum_validation": "when_required",
            "retries": {"mode": "standard", "max_attempts": 1},
            "s3": {"addressing_style": "path"},
        }
        cfg.update(config_kwargs)
        client = boto3.session.Session(
            aws_access_key_id=_DUMMY[TEST_ACCESS_KEY_ENV],
            aws_secret_access_key=_DUMMY[TEST_SECRET_KEY_ENV],
            region_name=REGION,
        ).client("s3", endpoint_url=endpoint_url or self.endpoint_url, config=Config(**cfg))
        if endpoint_url is None and not config_kwargs:
            self._default_client = client
        return client

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"test-{uuid.uuid4().hex[:16]}"
        self.raw_client().create_bucket(Bucket=name)
        return name

    def store_config(
        self, bucket: str, prefix: str = "", endpoint_url: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """A make_object_store() config for this server (or a proxy in front of it)."""
        return {
            "kind": "s3",
            "bucket": bucket,
            "prefix": prefix,
            "endpoint_url": endpoint_url or self.endpoint_url,
            "region": REGION,
            "access_key_env": self.access_key_env,
            "secret_key_env": self.secret_key_env,
            "addressing_style": "path",
            "max_attempts": 2,
            **extra,
        }


@contextmanager
def moto_s3_server() -> Iterator[MotoS3]:
    """Start moto's S3 on 127.0.0.1 (free port), with dummy credentials in the test env vars."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        with _env({**_DUMMY, **_no_proxy_env()}):
            yield MotoS3(endpoint_url=f"http://{host}:{port}")
    finally:
        server.stop()


# ---- Wasabi-like proxy: surrogate_dagster/storage/wasabi_standin.py (make rehearse runs it too)


# ---- pytest fixtures (import them into a test module to use) ---------------------------------
@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    with moto_s3_server() as s3:
        yield s3


@pytest.fixture
def s3_bucket(moto_s3: MotoS3, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty bucket; credentials env vars are (re)set for the test's duration."""
    for k, v in _DUMMY.items():
        monkeypatch.setenv(k, v)
    return moto_s3.create_bucket()


@pytest.fixture(scope="session")
def wasabi_proxy(moto_s3: MotoS3) -> Iterator[ChecksumRejectingProxy]:
    with checksum_rejecting_proxy(moto_s3.endpoint_url) as proxy:
        yield proxy
