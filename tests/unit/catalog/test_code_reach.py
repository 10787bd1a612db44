"""The reach of a definition, on a small package written here: which definitions a function's
body reaches, what it does not follow, and which config attributes it reads."""

from pathlib import Path

import pytest

from surrogate_dagster.catalog import code_reach
from surrogate_dagster.catalog.code_reach import reach


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    code_reach.index_module.cache_clear()
    return root / "pkg"


@pytest.fixture
def pkg(tmp_path):
    return _package(tmp_path, {
        "__init__.py": "",
        "phase/__init__.py": "from .engine import Engine\n",
        "phase/engine.py": "from ..util import helper\n\nclass Engine:\n    def run(self, x):\n        return helper(x)\n",
        "phase/assets.py": (
            "from . import Engine\n"
            "from .config import CONFIG\n"
            "from ..storage.io import write\n"
            "from typing import Any\n\n"
            "LIMIT = 3\n\n"
            "def _unused():\n    return 0\n\n"
            "def _prepare(x):\n    return x[:LIMIT]\n\n"
            "def deco(f):\n    return f\n\n"
            "@deco\n"
            "def my_asset(ctx: Any, store: 'Engine') -> Any:\n"
            "    from ..late import late_fn\n"
            "    write(CONFIG.sanitize.names)\n"
            "    return late_fn(Engine().run(_prepare(CONFIG.quality)))\n\n"
            "def whole_asset():\n    return dict(CONFIG)\n"),
        "phase/config.py": "CONFIG = object()\n",
        "util.py": "def helper(x):\n    return x\n\ndef other():\n    return 1\n",
        "late.py": "def late_fn(x):\n    return x\n",
        "storage/__init__.py": "",
        "storage/io.py": "def write(x):\n    return x\n",
    })


def test_reach_follows_names_through_modules_and_re_exports(pkg):
    r = reach(pkg, "pkg", "phase.assets", "my_asset")
    assert set(r.nodes) == {
        ("phase.assets", "my_asset"), ("phase.assets", "_prepare"), ("phase.assets", "LIMIT"),
        ("phase.engine", "Engine"), ("util", "helper"), ("late", "late_fn"), ("phase.config", "CONFIG")}
    # not reached: an unused helper, another function of a reached module, the decorator, the
    # annotation's name, an opaque layer (storage), names from outside the package
    assert ("phase.assets", "_unused") not in r.nodes and ("util", "other") not in r.nodes
    assert ("phase.assets", "deco") not in r.nodes
    assert not any(m.startswith("storage") for m, _ in r.nodes)


def test_config_attribute_reads_and_whole_use(pkg):
    cfg = frozenset({("phase.config", "CONFIG")})
    assert reach(pkg, "pkg", "phase.assets", "my_asset", cfg).config_reads == {("phase.config", "CONFIG"): {"sanitize", "quality"}}
    assert reach(pkg, "pkg", "phase.assets", "whole_asset", cfg).config_reads == {("phase.config", "CONFIG"): None}


def test_digests_ignore_comments_and_follow_code(pkg):
    before = reach(pkg, "pkg", "phase.assets", "my_asset").module_digests()
    util = pkg / "util.py"
    util.write_text("# a comment\n" + util.read_text().replace("return x\n", "return x  # same\n", 1))
    code_reach.index_module.cache_clear()
    assert reach(pkg, "pkg", "phase.assets", "my_asset").module_digests() == before
    util.write_text(util.read_text().replace("return 1", "return 2"))  # `other` is not reached
    code_reach.index_module.cache_clear()
    assert reach(pkg, "pkg", "phase.assets", "my_asset").module_digests() == before
    util.write_text(util.read_text().replace("return x  # same", "return [x]"))
    code_reach.index_module.cache_clear()
    after = reach(pkg, "pkg", "phase.assets", "my_asset").module_digests()
    assert {m for m in before if before[m] != after[m]} == {"util"}


def test_a_module_imported_by_name_is_reached_whole(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "", "a/__init__.py": "",
        "a/rules.py": "def r1():\n    return 1\n\ndef r2():\n    return 2\n",
        "a/assets.py": "from . import rules\n\ndef asset():\n    return rules.r1()\n"})
    r = reach(pkg, "pkg", "a.assets", "asset")
    assert {("a.rules", "r1"), ("a.rules", "r2")} <= set(r.nodes)


def test_a_sibling_script_run_by_path_is_reached_whole(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "", "evals/__init__.py": "",
        "evals/grader_runner.py": "import sys\n\ndef main():\n    return 1\n\nif __name__ == '__main__':\n    main()\n",
        "evals/unrelated.py": "def f():\n    return 0\n",
        "evals/grader.py": ("from pathlib import Path\n\nRUNNER = Path(__file__).with_name('grader_runner.py')\n"
                            "OTHER = Path(__file__).with_name('data.json')\n\n"
                            "def run():\n    return [str(RUNNER), str(OTHER)]\n")})
    r = reach(pkg, "pkg", "evals.grader", "run")
    assert ("evals.grader_runner", "main") in r.nodes
    assert not any(m == "evals.unrelated" for m, _ in r.nodes)
    before = r.module_digests()
    runner = pkg / "evals/grader_runner.py"
    runner.write_text(runner.read_text().replace("return 1", "return 2"))  # the script the grader runs changed
    code_reach.index_module.cache_clear()
    after = reach(pkg, "pkg", "evals.grader", "run").module_digests()
    assert {m for m in before if before[m] != after[m]} == {"evals.grader_runner"}
