"""bfcl-eval's checker, out of process: find its environment, send items, read per-item verdicts.

bfcl-eval pins numpy 1.26.4, tree-sitter 0.21 and a dozen API clients, which clash with the
pipeline's environment, so it lives in its own venv (``make setup`` builds ``.venv-bfcl``) and is
driven through :mod:`.bfcl_official_runner` as a subprocess. ``SURROGATE_BFCL_PYTHON`` names another
interpreter that has bfcl-eval installed.

One runner process per interpreter serves every check of this process (``--serve``): importing
bfcl-eval costs 3-6 s of CPU, once per process instead of once per report (`make run` scores BFCL
six times in one process). It ends when this process does (its stdin closes).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import tempfile
import threading
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


REPLY = "@@bfcl-runner "  # bfcl_official_runner.REPLY: the runner's answer lines


class _Runner:
    """One ``bfcl_official_runner.py --serve`` process: a request line in, an answer line out."""

    def __init__(self, python: Path) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        # -I: isolated mode, so the runner never imports this checkout's package or user site dirs
        self.proc = subprocess.Popen([str(python), "-I", str(RUNNER), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _exited(self) -> OfficialCheckerError:
        code = self.proc.wait()
        self._stderr.seek(0)
        return OfficialCheckerError(f"bfcl-eval runner exited {code}: {self._stderr.read().strip()[-800:]}")

    def ask(self, inp: Path, out: Path, timeout_s: float) -> dict:
        try:
            self.proc.stdin.write(json.dumps({"in": str(inp), "out": str(out)}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._exited() from None
        while True:
            if not select.select([self.proc.stdout], [], [], timeout_s)[0]:
                self.close(kill=True)
                raise OfficialCheckerError(f"bfcl-eval runner gave no answer in {timeout_s:.0f}s")
            line = self.proc.stdout.readline()
            if not line:
                raise self._exited()
            if line.startswith(REPLY):  # other stdout lines (an import's print) are not answers
                meta = json.loads(line[len(REPLY):])
                if "error" in meta:
                    raise OfficialCheckerError(f"bfcl-eval runner: {meta['error']}")
                return meta

    def close(self, kill: bool = False) -> None:
        if self.alive():
            if kill:
                self.proc.kill()
            else:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._stderr.close()


_RUNNERS: dict[str, _Runner] = {}
_RUNNERS_LOCK = threading.Lock()


def _runner(python: Path) -> _Runner:
    """This process's runner for ``python``, started on first use and again if it has ended."""
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(str(python))
        if runner is None or not runner.alive():
            if runner is not None:
                runner.close()
            runner = _RUNNERS[str(python)] = _Runner(python)
        return runner


@atexit.register
def _close_runners() -> None:
    for runner in _RUNNERS.values():
        runner.close()
    _RUNNERS.clear()


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
        runner = _runner(python)
        with runner.lock:
            meta = runner.ask(inp, out, timeout_s)
        lines = out.read_text(encoding="utf-8").splitlines()
        verdicts = {v["key"]: v for v in (json.loads(line) for line in lines if line.strip())}
    missing = [k for k in keys if k not in verdicts]
    if missing or meta.get("items") != len(keys):
        raise OfficialCheckerError(f"bfcl-eval runner returned {meta.get('items')} verdicts for {len(keys)} items "
                                   f"(missing e.g. {missing[:3]})")
    return str(meta["scorer"]), verdicts
