"""The rehearsal profile is production with only endpoints and credentials swapped, and a profile
may extend another."""

import pytest

from surrogate_dagster.catalog import CatalogError, load_profile
from surrogate_dagster.catalog.loader import merge_overlay

# Every path where rehearsal may differ from production, and why.
ALLOWED = {
    "name": "the profile's own name",
    "description": "the profile's own description",
    "object_store.endpoint_url": "moto S3 on 127.0.0.1 instead of Wasabi",
    "object_store.access_key_env": "rehearsal credentials",
    "object_store.secret_key_env": "rehearsal credentials",
    "hub.endpoint": "the local Hub server instead of huggingface.co",
    "hub.token_env": "rehearsal credentials",
    "phases.llm.base_url": "the local Messages API instead of api.anthropic.com",
    "phases.llm.api_key_env": "rehearsal credentials",
}


def _flat(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): value}


def test_rehearsal_differs_from_production_only_in_endpoints_and_credentials():
    prod = _flat(load_profile("production").model_dump(mode="json"))
    reh = _flat(load_profile("rehearsal").model_dump(mode="json"))
    differ = {k for k in set(prod) | set(reh) if prod.get(k) != reh.get(k)}
    assert differ <= set(ALLOWED), sorted(differ - set(ALLOWED))
    assert {"object_store.endpoint_url", "hub.endpoint", "phases.llm.base_url"} <= differ
    assert all(str(reh[k]).startswith("http://127.0.0.1:") for k in ("object_store.endpoint_url", "hub.endpoint",
                                                                    "phases.llm.base_url"))


def test_rehearsal_builds_every_resource_production_does():
    from surrogate_dagster.definitions import build_resources

    assert sorted(build_resources(load_profile("rehearsal"))) == sorted(build_resources(load_profile("production")))


def test_overlay_merges_mappings_and_replaces_the_rest(tmp_path):
    assert merge_overlay({"a": {"b": 1, "c": [1]}, "d": 1}, {"a": {"c": [2]}, "e": 3}) == \
        {"a": {"b": 1, "c": [2]}, "d": 1, "e": 3}
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(CatalogError, match="loop"):
        load_profile(str(tmp_path / "a.yaml"))
    (tmp_path / "c.yaml").write_text("extends: local\nname: c\nhub: {org: other}\n")
    prof = load_profile(str(tmp_path / "c.yaml"))
    assert prof.name == "c" and prof.hub.org == "other" and prof.hub.mode == load_profile("local").hub.mode
