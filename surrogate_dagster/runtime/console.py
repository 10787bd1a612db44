"""What `make run` shows on the terminal, and where everything else it produces goes.

:class:`RunConsole` keeps the terminal for the CLI's own lines (one per run, its counts, the gate
results, a failed step's error in full) and points file descriptors 1 and 2 of the process at the
run's log file, so whatever else writes there lands in that file: Dagster's console logger,
Python warnings and logging, progress bars, and every subprocess that inherits them (the trainer
under Pipes, the inference and LLM stand-in servers, the graders). Inside each Dagster run the
compute log manager captures the same streams into that run's stdout/stderr logs (the UI's raw
compute logs), and mirrors them on to the log file.

:func:`counts_line` and :func:`failure_text` turn an in-process run's result into terminal text.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

# Metadata entries shown per asset on a run's line, in this order, at most MAX_COUNTS of them: row
# counts through the curation chain, documents, items and score of an eval report, the trainer's
# steps and final loss, the size of the tiny base model, gate counts of the release. The entries of
# HIDE_ZERO are left out when they are 0 (nothing quarantined, changed, found or dropped).
COUNT_KEYS = (
    "rows_in", "rows_out", "rows_kept", "rows", "quarantined", "rows_changed", "findings", "docs",
    "dropped", "tasks", "scenarios", "kept", "rejected", "prompts", "pairs", "canaries", "items",
    "score", "steps", "final_loss", "parameters", "vocab", "reports", "gates", "failed_gates",
    "promoted",
)
HIDE_ZERO = frozenset({"quarantined", "rows_changed", "findings", "dropped", "rejected"})
MAX_COUNTS = 4


def _short(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def asset_counts(metadata: dict[str, Any]) -> list[str]:
    """``key=value`` for the first :data:`MAX_COUNTS` scalar entries of COUNT_KEYS in ``metadata``
    (a HIDE_ZERO entry only when it is not 0)."""
    out = []
    for key in COUNT_KEYS:
        value = metadata.get(key)
        value = getattr(value, "value", value)  # a MetadataValue or the raw value
        if isinstance(value, (int, float, bool)) and not (key in HIDE_ZERO and value == 0):
            out.append(f"{key}={_short(value)}")
        if len(out) == MAX_COUNTS:
            break
    return out


def counts_line(result) -> str:
    """The counts of every asset a run materialized: ``asset k=v k=v | asset k=v``."""
    parts = []
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        counts = asset_counts(dict(mat.metadata))
        parts.append(" ".join([mat.asset_key.to_user_string(), *counts]))
    return " | ".join(parts)


def failure_text(result, gate_error: str = "DagsterAssetCheckFailedError") -> list[str]:
    """Every failed step of a run with its error in full (message, stack, causes); a step stopped
    by a failed blocking gate is left out (the gate lines report it)."""
    lines: list[str] = []
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        error = getattr(event.event_specific_data, "error", None)
        if error is None:
            lines.append(f"step {event.step_key} failed: {event.message}")
            continue
        if error.cls_name == gate_error:
            continue
        lines.append(f"step {event.step_key} failed:")
        lines.extend("    " + line for line in error.to_string().rstrip().splitlines())
    return lines


class RunConsole:
    """The terminal for the CLI's lines; fds 1 and 2 of the process go to ``log_path`` meanwhile.

    ``say`` writes a line to the terminal (the original stdout) and the same line to the log, so
    the log reads in order. ``sys.stdout``/``sys.stderr`` are text streams on descriptors 1 and 2
    meanwhile (whatever they were before, e.g. a test's capture), which Dagster's compute log capture
    redirects per run. On exit the original descriptors and streams come back.
    """

    def __init__(self, log_path: Path) -> None:
        self.log_path = Path(log_path)
        self._saved: list[int] = []
        self._streams: tuple[TextIO, TextIO] | None = None
        self._log: TextIO | None = None
        self._term: TextIO | None = None

    def __enter__(self) -> "RunConsole":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        self._log = open(self.log_path, "a", buffering=1, encoding="utf-8")
        self._saved = [os.dup(1), os.dup(2)]
        self._term = os.fdopen(os.dup(self._saved[0]), "w", buffering=1, encoding="utf-8", errors="replace")
        os.dup2(self._log.fileno(), 1)
        os.dup2(self._log.fileno(), 2)
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        self._log.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} make run, pid {os.getpid()}\n")
        return self

    def say(self, line: str = "") -> None:
        assert self._term is not None and self._log is not None, "RunConsole used outside its with block"
        sys.stdout.flush()
        sys.stderr.flush()
        self._term.write(line + "\n")
        self._term.flush()
        self._log.write(line + "\n")

    def __exit__(self, *exc) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._streams is not None:
            sys.stdout, sys.stderr = self._streams
            self._streams = None
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []
        if self._term is not None:
            self._term.close()
        if self._log is not None:
            self._log.close()
