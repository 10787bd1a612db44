"""bfcl-eval's checker, out of process: find its environment, send items, read per-item verdicts.

bfcl-eval pins numpy 1.26.4, tree-sitter 0.21 and a dozen API clients, which clash with the
pipeline's environment, so it lives in its own venv (``make setup`` builds ``.venv-bfcl``) and is
driven through :mod:`.bfcl_official_runner` as a subprocess. ``SURROGATE_BFCL_PYTHON`` names another
interpreter that has bfcl-eval installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ...paths import REPO_ROOT

RUNNER = Path(__file__).with_name("bfcl_official_runner.py")
ENV_VAR = "SURROGATE_BFCL_PYTHON"
DEFAULT_PYTHON = REPO_ROOT / ".venv-bfcl" / "bin" / "python"
PROJECT_SCORER = "project-ast (parity-tested)"


class OfficialCheckerError(RuntimeError):
    """bfcl-eval's runner failed as a whole (not a per-item verdict)."""


def official_python() -> Path | None:
    """The interpreter of the bfcl-eval environment, or None when there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env)
        if not p.exists():
            raise OfficialCheckerError(f"{ENV_VAR}={env} does not exist")
        return p
    return DEFAULT_PYTHON if DEFAULT_PYTHON.exists() else None


def to_decoded(calls: list[dict]) -> list[dict]:
    """Hermes calls ({"name", "arguments"}) in BFCL's decoded-AST form ({name: arguments})."""
    return [{c.get("name"): c.get("arguments")} for c in calls]


def make_item(key: str, category: str, functions: list[dict], ground_truth: list | None, calls: list[dict],
              decode_error: str | None) -> dict:
    """One runner input line."""
    return {"key": key, "category": category, "functions": functions, "ground_truth": ground_truth,
            "decoded": None if decode_error else to_decoded(calls), "decode_error": decode_error}


def check(items: Sequence[dict], python: Path | None = None, timeout_s: float = 600.0) -> tuple[str, dict[str, dict]]:
    """(scorer label, verdicts by key) from bfcl-eval for ``items`` (:func:`make_item` rows)."""
    python = python or official_python()
    if python is None:
        raise OfficialCheckerError(f"no bfcl-eval environment ({DEFAULT_PYTHON} absent, {ENV_VAR} unset)")
    keys = [it["key"] for it in items]
    if len(set(keys)) != len(keys):
        raise ValueError("BFCL official check: item keys must be unique")
    with tempfile.TemporaryDirectory(prefix="bfcl_official_") as tmp:
        inp, out = Path(tmp) / "items.jsonl", Path(tmp) / "verdicts.jsonl"
        inp.write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items), encoding="utf-8")
        # -I: isolated mode, so the runner never imports this checkout's package or user site dirs
        proc = subprocess.run([str(python), "-I", str(RUNNER), "--in", str(inp), "--out", str(out)],
                              capture_output=True, text=True, timeout=timeout_s, check=False)
        if proc.returncode != 0:
            raise OfficialCheckerError(f"bfcl-eval runner exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
        meta = json.loads(proc.stdout.strip().splitlines()[-1])
        lines = out.read_text(encoding="utf-8").splitlines()
        verdicts = {v["key"]: v for v in (json.loads(line) for line in lines if line.strip())}
    missing = [k for k in keys if k not in verdicts]
    if missing or meta.get("items") != len(keys):
        raise OfficialCheckerError(f"bfcl-eval runner returned {meta.get('items')} verdicts for {len(keys)} items "
                                   f"(missing e.g. {missing[:3]})")
    return str(meta["scorer"]), verdicts
