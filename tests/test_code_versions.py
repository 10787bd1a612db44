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
    stale = _stale_after(package_copy, "curation/sanitize/engine.py",
                         lambda s: s + "\n\ndef _planted_rule(text):\n    return text.replace('a', 'b')\n")
    print("stale after editing curation/sanitize/engine.py:", stale)
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
    assert parts["cfg"] == "0123456789" and set(parts) == {"cfg", "curation.sanitize", "curation.stage_io"}
    b = a.replace(f"curation.sanitize={parts['curation.sanitize']}", "curation.sanitize=ffffffffff")
    assert changed_modules(a, b) == ["curation.sanitize"]
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
