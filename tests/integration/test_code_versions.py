"""Code versions follow the code: editing one module's source changes the code version of exactly
the assets computed by it (checked on a copy of the package, imported in a subprocess)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surrogate_dagster.catalog import code_reach
from surrogate_dagster.catalog.code_version import (
    PACKAGE_DIR,
    _reach_digests,
    build_info,
    changed_modules,
    function_code_version,
    parse_code_version,
    reached_modules,
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


def test_one_definition_edit_marks_exactly_the_assets_that_reach_it(package_copy):
    stale = _stale_after(package_copy, "sanitize/engine.py",
                         lambda s: s.replace("class Sanitizer:", "class Sanitizer:\n    _planted_edit = 1", 1))
    print("stale after editing sanitize/engine.py:", stale)
    assert {"sanitized_rows", "curated_exec_graded_pairs", "curated_orchestrator_traces"} <= set(stale)
    assert not {"filtered_rows", "minhash_signatures", "dedup_decisions", "source_rows"} & set(stale)


def test_decontam_edit_reaches_the_index_and_curated_rows(package_copy):
    # `normalize` is what both the index builder and the matcher run on every text
    stale = _stale_after(package_copy, "curation/decontam.py",
                         lambda s: s.replace("def normalize(text: str) -> str:\n",
                                             "def normalize(text: str) -> str:\n    _planted_edit = 1\n", 1))
    print("stale after editing curation/decontam.py:", stale)
    assert {"benchmark_ngram_index", "curated_rows", "curated_exec_graded_pairs", "curated_orchestrator_traces"} <= set(stale)
    assert not {"sanitized_rows", "filtered_rows", "minhash_signatures"} & set(stale)


def test_comment_only_edit_changes_nothing(package_copy):
    assert _stale_after(package_copy, "curation/quality/heuristics.py", lambda s: s + "\n# a comment\n") == []


def test_a_curation_section_edit_stales_only_the_steps_that_read_it(tmp_path):
    """Changing MinHash bands moves the signature and dedup steps, not sanitize or filter."""
    root = tmp_path / "pkg"
    shutil.copytree(PACKAGE_DIR, root / PACKAGE_DIR.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "assets", root / "assets")
    for d in ("resources", "fixtures"):
        (root / d).symlink_to(REPO / d)
    before = _code_versions(root)
    cfg = root / "assets" / "curation.yaml"
    text = cfg.read_text(encoding="utf-8")
    assert "buckets: 32" in text
    cfg.write_text(text.replace("buckets: 32", "buckets: 16", 1), encoding="utf-8")
    after = _code_versions(root)
    moved = sorted(k for k in before if before[k] != after[k])
    print("stale after editing minhash.buckets:", moved)
    assert {"minhash_signatures", "dedup_decisions"} <= set(moved)
    assert not {"sanitized_rows", "filtered_rows", "benchmark_ngram_index"} & set(moved)


def _entries():
    """(asset, module, top-level function) of every asset whose version is derived."""
    from surrogate_dagster.definitions import defs

    graph = defs.resolve_asset_graph()
    out = []
    for key in graph.materializable_asset_keys:
        version = graph.get(key).code_version or ""
        if not version.startswith("cfg="):
            continue
        fn = defs.get_assets_def(key).op.compute_fn.decorated_fn
        out.append((key.to_user_string(), fn.__module__, fn.__qualname__.split(".")[0], version))
    return out


def test_every_derived_version_is_the_reach_of_the_assets_own_function():
    entries = _entries()
    assert len(entries) >= 40
    for asset, module, top, version in entries:
        parts = {k: v for k, v in parse_code_version(version).items() if k != "cfg"}
        assert parts == reached_modules(module, top), asset


def _planted_edit(original: str, name: str, node) -> str:
    """`original` with the reached definition `name` changed: a new first statement in the body of
    a function or class, an assignment's value wrapped in a conditional that keeps it."""
    lines = original.splitlines(keepends=True)
    if hasattr(node, "body"):
        first = node.body[0]
        lines.insert(first.lineno - 1, " " * first.col_offset + "_planted_edit = 1\n")
    else:
        value = node.value
        i, col = value.end_lineno - 1, value.end_col_offset
        line = lines[i].encode()
        lines[i] = (line[:col] + b" if True else None" + line[col:]).decode()
        j, start = value.lineno - 1, value.col_offset
        line = lines[j].encode()
        lines[j] = (line[:start] + b"(" + line[start:]).decode()
        i_line = lines[i].encode()
        k = col + len(b" if True else None") + (1 if i == j else 0)
        lines[i] = (i_line[:k] + b")" + i_line[k:]).decode()
    return "".join(lines)


@pytest.mark.parametrize("asset", ["sanitized_rows", "filtered_rows", "curated_rows", "benchmark_ngram_index"])
def test_editing_any_module_an_asset_reaches_moves_its_version(asset, tmp_path):
    """Every module in the asset's reach, edited in a copy of the package (one reached definition
    changed), moves that module's part of the version and no other part."""
    module, top = next((m, t) for a, m, t, _ in _entries() if a == asset)
    root = tmp_path / PACKAGE_DIR.name
    shutil.copytree(PACKAGE_DIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    rel = module.removeprefix("surrogate_dagster.")
    base = reached_modules(module, top, root=root)
    r = code_reach.reach(root, "surrogate_dagster", rel, top)
    assert set(base) == {m for m, _ in r.nodes}
    for mod in sorted(base):
        name, node = min(((n, node) for (m, n), node in r.nodes.items() if m == mod), key=lambda x: x[0])
        path = code_reach._module_file(root, mod)
        original = path.read_text(encoding="utf-8")
        path.write_text(_planted_edit(original, name, node), encoding="utf-8")
        code_reach.index_module.cache_clear()
        _reach_digests.cache_clear()
        try:
            after = reached_modules(module, top, root=root)
        finally:
            path.write_text(original, encoding="utf-8")
            code_reach.index_module.cache_clear()
            _reach_digests.cache_clear()
        assert {m for m in base if after.get(m) != base[m]} == {mod}, (asset, mod, name)
    print(f"{asset}: each of {len(base)} reached modules, edited, moved its version: {sorted(base)}")


def test_versions_are_self_describing():
    a = function_code_version("surrogate_dagster.curation.assets", "sanitized_rows", config="0123456789abcdef")
    parts = parse_code_version(a)
    assert parts["cfg"] == "0123456789" and {"sanitize.engine", "curation.text", "curation.sanitize_stage"} <= set(parts)
    b = a.replace(f"sanitize.engine={parts['sanitize.engine']}", "sanitize.engine=ffffffffff")
    assert changed_modules(a, b) == ["sanitize.engine"]
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


def test_reach_cache_is_used_and_survives_a_corrupt_file(tmp_path, monkeypatch):
    from surrogate_dagster.catalog import code_version as cv

    bad = tmp_path / "reach.json"
    bad.write_text("{not json")
    assert cv._load_reach_cache.__wrapped__(bad) == {}
    cv._save_reach_cache(bad, {"package": "p", "entries": {}})
    assert cv._load_reach_cache.__wrapped__(bad) == {"package": "p", "entries": {}}
