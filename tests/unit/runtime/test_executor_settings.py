"""Block executor settings: the kinds and their keys, the profiles' choices, and the profile's setting as the
curation resource sees it (the executors run: tests/integration/test_executor_seam.py)."""

from __future__ import annotations


import pytest

from surrogate_dagster.catalog import load_profile
from surrogate_dagster.runtime.executors import executor_settings, make_executor, validate_settings


def test_settings_kinds_and_profiles() -> None:
    validate_settings({"kind": "in_process"})
    validate_settings({"kind": "pool", "workers": 2, "chunk_rows": 8})
    with pytest.raises(ValueError, match="unknown keys"):
        validate_settings({"kind": "in_process", "workers": 2})
    with pytest.raises(ValueError, match="runs without datatrove"):
        make_executor([], {"kind": "pool"}, "/tmp/unused")
    assert executor_settings(load_profile("local"))["kind"] in ("in_process", "pool", "local")
    assert executor_settings(load_profile("production"))["kind"] == "local"  # datatrove on the host's cores
    prod = executor_settings(load_profile("cluster"))
    assert prod["kind"] == "ray" and prod["io_root"].startswith("s3://")


def test_profile_setting_reaches_the_curation_resource() -> None:
    from surrogate_dagster.curation.resource import curation_resources

    for name in ("local", "production", "cluster"):
        profile = load_profile(name)
        assert curation_resources(profile)["curation"].datatrove_executor == executor_settings(profile)
