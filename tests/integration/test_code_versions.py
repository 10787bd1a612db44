"""Code versions follow the code: editing one module's source changes the code version of exactly
the assets computed by it (checked on a copy of the package, imported in a subprocess)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surrogate_dagster.catalog.code_version import (
    CODE_MODULES,
    PACKAGE_DIR,
    asset_code_version,
    build_info,
    changed_modules,
    module_hash,
    modules_for,
    parse_code_version,
)

REPO = PACKAGE_DIR.parent
_DUMP = """
import json
from surrogate_dagster.definitions import defs
g = defs.resolve_asset_graph()
print(json.dumps({k.to_user_string(): g.get(k).code_version for k in g.materializable_asset_keys}))
"""


def _code_versions(root: Path) -> dict[str, str | None]:
    out = subprocess.run([sys.executable, "-c", _DUMP], cwd=root, capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "SURROGATE_PROFILE": "local",
                              "SURROGATE_GIT_COMMIT": "test"})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkg")
    shutil.copytree(PACKAGE_DIR, root / PACKAGE_DIR.name, ignore=shutil.ignore_patterns("__pycache__"))
    for d in ("assets", "resources", "fixtures"):  # the catalog beside the package (paths.py)
        (root / d).symlink_to(REPO / d)
    return root


def _stale_after(root: Path, rel: str, edit) -> list[str]:
    before = _code_versions(root)
    path = root / PACKAGE_DIR.name / rel
    original = path.read_text(encoding="utf-8")
    path.write_text(edit(original), encoding="utf-8")
    try:
        after = _code_versions(root)
    finally:
        path.write_text(original, encoding="utf-8")
    assert set(before) == set(after)
    return sorted(k for k in before if before[k] != after[k])


def test_one_module_edit_marks_exactly_its_assets(package_copy):
    stale = _stale_after(package_copy, "sanitize/engine.py",
                         lambda s: s + "\n\ndef _planted_rule(text):\n    return text.replace('a', 'b')\n")
    print("stale after editing sanitize/engine.py:", stale)
    assert stale == ["curated_exec_graded_pairs", "curated_orchestrator_traces", "sanitized_rows"]


def test_decontam_edit_reaches_the_index_and_curated_rows(package_copy):
    stale = _stale_after(package_copy, "curation/decontam.py", lambda s: s + "\nDECONTAM_PLANTED = 1\n")
    print("stale after editing curation/decontam.py:", stale)
    assert stale == ["benchmark_ngram_index", "curated_exec_graded_pairs", "curated_orchestrator_traces",
                     "curated_rows"]


def test_comment_only_edit_changes_nothing(package_copy):
    assert _stale_after(package_copy, "curation/quality/heuristics.py", lambda s: s + "\n# a comment\n") == []


def test_registry_names_real_modules():
    for asset, modules in CODE_MODULES.items():
        for m in modules:
            assert len(module_hash(m)) == 10, (asset, m)
    assert modules_for("code_sft_mixture") == CODE_MODULES["mixture"]
    assert modules_for("stage2_checkpoint") == CODE_MODULES["checkpoint"]
    assert modules_for("stage2_eval_report") == CODE_MODULES["eval"]
    assert modules_for("synth_scenarios") == ()


def test_versions_are_self_describing():
    a = asset_code_version("sanitized_rows", "0123456789abcdef")
    parts = parse_code_version(a)
    assert parts["cfg"] == "0123456789" and set(parts) == {"cfg", "sanitize", "curation.stage_io"}
    b = a.replace(f"sanitize={parts['sanitize']}", "sanitize=ffffffffff")
    assert changed_modules(a, b) == ["sanitize"]
    assert changed_modules("deadbeef", b) == []  # an older plain hash names nothing


def test_build_info_never_fails(monkeypatch):
    build_info.cache_clear()
    monkeypatch.setenv("SURROGATE_GIT_COMMIT", "abc123")
    try:
        info = build_info()
        assert info["git_commit"] == "abc123" and info["package_version"]
        build_info.cache_clear()
        monkeypatch.delenv("SURROGATE_GIT_COMMIT")
        monkeypatch.setenv("PATH", "/nonexistent")  # no git binary
        assert build_info()["git_commit"] == "unknown"
    finally:
        build_info.cache_clear()


# ------------------------------------------------------------------ per-source versions

_DUMP_SOURCES = """
import json
from surrogate_dagster.definitions import defs
g = defs.resolve_asset_graph()
out = {"code": {k.to_user_string(): g.get(k).code_version for k in g.materializable_asset_keys}}
for name in ("source_rows", "normalized_rows"):
    out[name] = g.get(__import__("dagster").AssetKey(name)).metadata["partition_versions"].value
print(json.dumps(out))
"""


def _source_versions(root: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _DUMP_SOURCES], cwd=root, capture_output=True, text=True,
                         timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root),
                                           "SURROGATE_PROFILE": "local", "SURROGATE_GIT_COMMIT": "test"})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_source_cap_edit_moves_that_partition_only(tmp_path):
    import yaml

    root = tmp_path / "pkg"
    shutil.copytree(PACKAGE_DIR, root / PACKAGE_DIR.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "assets", root / "assets")  # a copy: this test edits the catalog
    for d in ("resources", "fixtures"):
        (root / d).symlink_to(REPO / d)
    before = _source_versions(root)
    catalog = root / "assets" / "sources.yaml"
    text = catalog.read_text(encoding="utf-8")
    edited = next(s for s in yaml.safe_load(text)["sources"] if s.get("cap"))
    old_cap = f"cap: {edited['cap']}"
    assert old_cap in text
    # the first `cap:` line of the file is the first capped source's
    catalog.write_text(text.replace(old_cap, f"cap: {edited['cap'] + 1}", 1), encoding="utf-8")
    after = _source_versions(root)
    assert after["code"] == before["code"]  # no asset's code version moves: nothing stales everywhere
    for name in ("source_rows", "normalized_rows"):
        moved = sorted(p for p in before[name] if before[name][p] != after[name][p])
        print(f"{name}: partitions whose version moved after editing {edited['name']}'s cap: {moved} "
              f"(of {len(before[name])})")
        assert moved == [edited["name"]], name
        assert len(before[name]) == len(after[name]) >= 20


def test_stale_plan_follows_partition_versions(tmp_path):
    from dagster import DagsterInstance, Definitions, MetadataValue, map_asset_specs, materialize

    from surrogate_dagster.runtime.planning import stale_plan
    from surrogate_dagster.sources.revisions import hf_revisions, record_revision_observations
    from surrogate_dagster.sources.assets import SOURCE_VERSIONS, helper_rows, normalized_rows, source_rows
    from tests.support.ops_support import TOOL_SOURCES, hub_copy, make_resources

    resources = make_resources(tmp_path, hub_copy(tmp_path))
    assets = [hf_revisions, source_rows, helper_rows, normalized_rows]
    instance = DagsterInstance.ephemeral()
    record_revision_observations(instance, resources["hub"].get_client())
    for s in TOOL_SOURCES:
        assert materialize(assets, selection=[source_rows.key, normalized_rows.key], partition_key=s,
                           resources=resources, instance=instance).success
    store = resources["object_store"].get_store()

    def stale(defs_assets):
        graph = Definitions(assets=defs_assets, resources=resources).resolve_asset_graph()
        plan = stale_plan(graph, instance, [source_rows.key, normalized_rows.key], store=store)
        return {k.to_user_string(): sorted(set(v) & set(TOOL_SOURCES)) for k, v in plan.items()
                if set(v) & set(TOOL_SOURCES)}

    assert stale(assets) == {}
    # what the definitions hold after one source's catalog entry is edited
    edited = {**SOURCE_VERSIONS, TOOL_SOURCES[1]: "0" * 16}
    meta = {"partition_versions": MetadataValue.json(edited)}
    moved = map_asset_specs(lambda s: s.merge_attributes(metadata=meta)
                            if s.key in (source_rows.key, normalized_rows.key) else s, assets)
    assert stale(moved) == {"normalized_rows": [TOOL_SOURCES[1]], "source_rows": [TOOL_SOURCES[1]]}


def test_digest_cache_gives_the_parsed_digest_and_survives_a_corrupt_file(tmp_path):
    from surrogate_dagster.catalog import code_version as cv

    src = tmp_path / "m.py"
    src.write_text("def f():\n    return 1\n")
    cache: dict[str, str] = {}
    first = cv._source_digest(src, cache)
    assert first == cv._source_digest(src) and len(cache) == 1  # cached value == a fresh parse
    cache[next(iter(cache))] = "planted"
    assert cv._source_digest(src, cache) == "planted"  # the key is the raw bytes' hash ...
    src.write_text("def f():\n    return 2\n")
    assert cv._source_digest(src, cache) not in ("planted", first)  # ... so an edit misses it
    bad = tmp_path / "digests.json"
    bad.write_text("{not json")
    assert cv._digest_cache.__wrapped__(bad) == {}
    cv._save_digest_cache({"k": "v"}, bad)
    assert cv._digest_cache.__wrapped__(bad) == {"k": "v"}
