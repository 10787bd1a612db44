"""Read a finished trainer run from its Pipes messages, and refuse one that did not finish.

The message names mirror trainer/surrogate_trainer/protocol.py (a test keeps them equal; the
pipeline does not import the trainer package, which lives in another environment).

A run counts as finished only with: a ``started`` message first, an ``artifact`` message, and
exactly one explicitly reported materialization. Exit code 0 alone proves nothing: a trainer that
exits before Pipes is set up, or a wrapper that swallows the failure, would otherwise show as a
successful asset (dagster-io/dagster#17868), so implicit materializations are never accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

STARTED, REFERENCE, PROGRESS, CHECKPOINT, ARTIFACT = "started", "reference", "progress", "checkpoint", "artifact"
MESSAGE_TYPES = (STARTED, REFERENCE, PROGRESS, CHECKPOINT, ARTIFACT)


class TrainerProtocolError(RuntimeError):
    """The trainer ended without reporting what a finished run reports."""


@dataclass
class TrainerReport:
    started: dict[str, Any]
    artifact: dict[str, Any]
    metadata: dict[str, Any]
    progress: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    reference: dict[str, Any] | None = None


def read_run(messages: Sequence[Any], results: Sequence[Any]) -> TrainerReport:
    """Validate the message stream and the explicit results of one trainer run."""
    from dagster import MaterializeResult

    if not messages:
        raise TrainerProtocolError(
            "the trainer sent no Pipes message at all: it died before opening Pipes, or is not the trainer")
    bad = [m for m in messages if not isinstance(m, dict) or m.get("type") not in MESSAGE_TYPES]
    if bad:
        raise TrainerProtocolError(f"unknown trainer messages: {bad[:3]}")
    if messages[0]["type"] != STARTED:
        raise TrainerProtocolError(f"first trainer message must be 'started', got {messages[0]['type']!r}")
    by_type: dict[str, list[dict]] = {t: [m for m in messages if m["type"] == t] for t in MESSAGE_TYPES}
    steps_seen = [m["step"] for m in by_type[PROGRESS]]
    if not by_type[ARTIFACT]:
        last = f"last step reported: {steps_seen[-1]}" if steps_seen else "no training step reported"
        raise TrainerProtocolError(f"the trainer ended without reporting its artifact ({last}); "
                                   "re-materialize to resume from the last checkpoint")
    if len(by_type[ARTIFACT]) > 1 or len(by_type[STARTED]) > 1:
        raise TrainerProtocolError("a run reports 'started' and 'artifact' exactly once")
    if messages[-1]["type"] != ARTIFACT:
        raise TrainerProtocolError("'artifact' must be the trainer's last message")
    mats = [r for r in results if isinstance(r, MaterializeResult)]
    if len(mats) != 1:
        raise TrainerProtocolError(f"expected one explicit materialization from the trainer, got {len(mats)}")
    if steps_seen != sorted(steps_seen):
        raise TrainerProtocolError(f"progress steps go backwards: {steps_seen}")
    meta = {k: getattr(v, "value", v) for k, v in (mats[0].metadata or {}).items()}
    return TrainerReport(started=by_type[STARTED][0], artifact=by_type[ARTIFACT][0], metadata=meta,
                         progress=by_type[PROGRESS], checkpoints=by_type[CHECKPOINT],
                         reference=by_type[REFERENCE][0] if by_type[REFERENCE] else None)


def loss_curve_png(progress: Sequence[dict], title: str) -> str | None:
    """A Markdown-embedded PNG of loss (and tokens/s) per step; None if no loss was logged."""
    points = [(p["step"], p["loss"]) for p in progress if p.get("loss") is not None]
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..metadata import png_markdown

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([s for s, _ in points], [v for _, v in points], marker="o", ms=3)
    ax.set_xlabel("step")
    ax.set_ylabel("train loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    try:
        return png_markdown(fig)
    finally:
        plt.close(fig)
