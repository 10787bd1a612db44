"""The rehearsal profile is production with only its endpoints, credentials and the documented host and
size differences swapped (operations/rehearsal.DIFFERENCES), and a profile may extend another."""

import pytest

import fnmatch

from surrogate_dagster.catalog import CatalogError, load_profile
from surrogate_dagster.catalog.loader import merge_overlay
from surrogate_dagster.operations.rehearsal import DIFFERENCES, flatten, profile_differences, render_differences

def test_rehearsal_differs_from_production_only_where_documented():
    diffs = profile_differences()
    undocumented = [d.path for d in diffs if d.reason is None]
    assert not undocumented, undocumented
    paths = {d.path for d in diffs}
    # endpoints and credentials are swapped, to local servers only
    assert {"object_store.endpoint_url", "hub.endpoint", "phases.llm.base_url"} <= paths
    reh = flatten(load_profile("rehearsal").model_dump(mode="json"))
    for key in ("object_store.endpoint_url", "hub.endpoint", "phases.llm.base_url"):
        assert str(reh[key]).startswith("http://127.0.0.1:"), key
    # no stale entry: every documented pattern names a real difference
    for why, patterns in DIFFERENCES.items():
        for pat in patterns:
            assert any(fnmatch.fnmatchcase(p, pat) for p in paths), f"{pat!r} ({why}) differs nowhere"
    # what production decides stays production's: bucket, hub org, models, prices, budgets, stage recipes
    prod = flatten(load_profile("production").model_dump(mode="json"))
    for key in ("object_store.bucket", "hub.org", "hub.mode", "phases.llm.models.planner", "phases.llm.budget_usd",
                "phases.ops.budget.monthly_usd", "phases.curation.ner_model", "phases.curation.edu_scorer",
                "phases.training.base_model", "phases.serving.backend", "phases.synth.backend"):
        assert reh[key] == prod[key], key


def test_an_undocumented_difference_is_reported(tmp_path, monkeypatch):
    (tmp_path / "r.yaml").write_text("extends: rehearsal\nhub: {org: someone-else}\n")
    diffs = profile_differences("production", str(tmp_path / "r.yaml"))
    assert [d.path for d in diffs if d.reason is None] == ["hub.org"]
    assert "UNDOCUMENTED" in render_differences(diffs)


def test_rehearsal_builds_every_resource_production_does():
    from surrogate_dagster.definitions import build_resources

    assert sorted(build_resources(load_profile("rehearsal"))) == sorted(build_resources(load_profile("production")))


def test_overlay_merges_mappings_and_replaces_the_rest(tmp_path):
    assert merge_overlay({"a": {"b": 1, "c": [1]}, "d": 1}, {"a": {"c": [2]}, "e": 3}) == \
        {"a": {"b": 1, "c": [2]}, "d": 1, "e": 3}
    assert merge_overlay({"a": {"b": 1, "c": 2}}, {"a": {"b": None}}) == {"a": {"c": 2}}  # null removes
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(CatalogError, match="loop"):
        load_profile(str(tmp_path / "a.yaml"))
    (tmp_path / "c.yaml").write_text("extends: local\nname: c\nhub: {org: other}\n")
    prof = load_profile(str(tmp_path / "c.yaml"))
    assert prof.name == "c" and prof.hub.org == "other" and prof.hub.mode == load_profile("local").hub.mode
