"""Scratch folders owned by one step of one run: ``<root>/<run_id>/<step>/``.

Two runs (two CLIs, the CLI and the UI) may execute the same step at once on one machine. A
folder named by the run id and the step is never written, read or deleted by any other run, so
neither deletes the other's files nor reads them. The owner removes its folder when the step
ends, whatever the outcome; a retry of the step in the same run (attempts run one after the
other) clears what its earlier attempt left. A run killed before it could clean up leaves its
folder behind: :func:`sweep_ended_runs` removes the folders of runs the caller reports as ended
(a run's status is the orchestrator's to know, so it comes as a callback). No Dagster imports.
"""

from __future__ import annotations

import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

# Dagster run ids are UUIDs; direct invocation and tests use short names. Anything else could
# climb out of the root ("..") or name a shared folder.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _checked(kind: str, name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise ValueError(f"{kind} {name!r} cannot name a scratch folder (letters, digits, '_', '-', '.')")
    return name


@contextmanager
def step_scratch(root: Path | str, run_id: str, step: str) -> Iterator[Path]:
    """An empty folder of this run's step, removed when the block exits."""
    run_dir = Path(root) / _checked("run id", run_id)
    folder = run_dir / _checked("step", step)
    shutil.rmtree(folder, ignore_errors=True)  # an earlier attempt of this same step, in this run
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        try:
            run_dir.rmdir()  # only when no other step of the run still works in it
        except OSError:
            pass


def sweep_ended_runs(root: Path | str, has_ended: Callable[[str], bool]) -> list[str]:
    """Remove the scratch of every run under ``root`` for which ``has_ended(run_id)`` is true;
    returns the run ids removed. A run the callback does not know is left alone."""
    removed = []
    base = Path(root)
    if not base.is_dir():
        return removed
    for run_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        if _NAME.match(run_dir.name) and has_ended(run_dir.name):
            shutil.rmtree(run_dir, ignore_errors=True)
            removed.append(run_dir.name)
    return removed
