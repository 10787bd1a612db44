"""Where things live: the repo root, the catalog and profile folders, and ../shared."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS_DIR = REPO_ROOT / "assets"  # the declarative catalog (YAML)
PROFILES_DIR = REPO_ROOT / "resources"  # deployment profiles (YAML)
FIXTURES_DIR = REPO_ROOT / "fixtures"


def shared_dir() -> Path:
    """The shared data folder (runbook, benchmarks, samples); SURROGATE_SHARED_DIR overrides."""
    env = os.environ.get("SURROGATE_SHARED_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared"


def resolve_repo_path(path: str | Path) -> Path:
    """Profile paths are relative to the repo root unless absolute; `{shared}` expands."""
    text = str(path).replace("{shared}", str(shared_dir()))
    p = Path(text).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p
