"""The shipped SWE-bench-shaped fixture instance (``fixtures/swebench/mini_stats``) as a git repository.

Where the official harness cannot run (no Docker), the agent scaffold still runs, on this one
instance: a small repository with one bug, its issue text, and a test patch whose ``FAIL_TO_PASS``
test fails before the fix and passes after it. :func:`build_fixture_repo` makes the repository at
run time (one commit with a fixed author and date, so the base commit's id is the same on every
machine) and returns the instance in SWE-bench's row shape plus ``repo_source``, where the scaffold
clones it from.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from ...paths import FIXTURES_DIR

FIXTURE_DIR = FIXTURES_DIR / "swebench" / "mini_stats"
# fixed identity and dates: the base commit's sha depends on nothing but the shipped files
_GIT_ENV = {"GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
            "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}


def _git(repo: Path, *args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("the SWE-bench fixture needs git on PATH")
    r = subprocess.run([git, "-C", str(repo), *args], capture_output=True, text=True, env=_GIT_ENV)
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {repo} failed: {r.stderr.strip()[-300:]}")
    return r.stdout


def fixture_missing(fixture_dir: Path | None = None) -> str | None:
    """Why the fixture instance cannot be built here (None: its files are present)."""
    fixture_dir = fixture_dir or FIXTURE_DIR
    absent = [n for n in ("instance.json", "repo") if not (fixture_dir / n).exists()]
    if absent:
        return f"the shipped fixture instance {fixture_dir} lacks {absent} (fixtures/swebench is not in this copy)"
    return None


def load_fixture_instance(fixture_dir: Path = FIXTURE_DIR) -> dict:
    """The instance row (``instance_id``, ``repo``, ``problem_statement``, ``test_patch``,
    ``FAIL_TO_PASS``, ``PASS_TO_PASS``), without its base commit."""
    meta = json.loads((fixture_dir / "instance.json").read_text())
    row = {k: v for k, v in meta.items() if not k.endswith("_file")}
    row["problem_statement"] = (fixture_dir / meta["problem_statement_file"]).read_text()
    row["test_patch"] = (fixture_dir / meta["test_patch_file"]).read_text()
    for key in ("instance_id", "repo", "FAIL_TO_PASS", "PASS_TO_PASS"):
        if not row.get(key) and key != "PASS_TO_PASS":
            raise ValueError(f"{fixture_dir / 'instance.json'}: {key} missing")
    return row


def build_fixture_repo(dest: Path, fixture_dir: Path = FIXTURE_DIR) -> dict:
    """``fixture_dir/repo`` as a one-commit git repository at ``dest`` (replaced if present); the
    instance row with ``base_commit`` and ``repo_source`` (``dest``)."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(fixture_dir / "repo", dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "ministats at the issue's base commit")
    row = load_fixture_instance(fixture_dir)
    row["base_commit"] = _git(dest, "rev-parse", "HEAD").strip()
    row["repo_source"] = str(dest)
    return row
