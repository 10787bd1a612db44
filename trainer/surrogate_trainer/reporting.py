"""Progress and checkpoints, out of the training loop: a TrainerCallback that talks through Pipes.

The callback is added by the plugin (plugin.py), so it runs inside axolotl's own trainer. It needs
the run's Pipes context and object store, which the entrypoint (run.py) puts in ``RUNTIME`` before
training starts; under a bare ``axolotl train`` (no Pipes) it prints its messages instead and
uploads nothing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from .checkpoints import delete_checkpoint, record_checkpoint
from .protocol import CHECKPOINT, PROGRESS


@dataclass
class Runtime:
    """The state one trainer process shares between the entrypoint, the plugin and the callback."""

    pipes: Any = None  # dagster_pipes.PipesContext, or None outside Pipes
    store: Any = None  # store.TrainerStore, or None: no checkpoint upload
    checkpoint_prefix: str | None = None
    keep_checkpoints: int = 2
    expected_reference: str | None = None
    progress: list[dict] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)
    reference: dict | None = None
    final: dict = field(default_factory=dict)

    def message(self, payload: dict) -> None:
        if self.pipes is not None:
            self.pipes.report_custom_message(payload)
        else:
            print(f"[surrogate_trainer] {json.dumps(payload)}", flush=True)

    def log(self, text: str) -> None:
        if self.pipes is not None:
            self.pipes.log.info(text)
        else:
            print(f"[surrogate_trainer] {text}", flush=True)

    def warn(self, text: str) -> None:
        if self.pipes is not None:
            self.pipes.log.warning(text)
        else:
            print(f"[surrogate_trainer] WARNING: {text}", flush=True)


RUNTIME = Runtime()


def _num(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class PipesProgressCallback(TrainerCallback):
    """Reports step/loss/tokens-per-second on every log and uploads every saved checkpoint."""

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.rt = runtime or RUNTIME
        self._last_time = 0.0
        self._last_tokens = 0
        self._t0 = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self._t0 = self._last_time = time.monotonic()
        self._last_tokens = int(getattr(state, "num_input_tokens_seen", 0) or 0)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        now = time.monotonic()
        # HF counts input tokens (padding included) when include_tokens_per_second is on; TRL's
        # DPO also logs its own cumulative num_tokens: use whichever is there.
        tokens = int(getattr(state, "num_input_tokens_seen", 0) or logs.get("num_tokens") or 0)
        dt = max(now - self._last_time, 1e-9)
        point = {
            "type": PROGRESS,
            "step": int(state.global_step),
            "max_steps": int(state.max_steps),
            "epoch": _num(state.epoch),
            "loss": _num(logs.get("loss")),
            "learning_rate": _num(logs.get("learning_rate")),
            "grad_norm": _num(logs.get("grad_norm")),
            "tokens": tokens,
            "tokens_per_s": (tokens - self._last_tokens) / dt if tokens else None,
            "elapsed_s": now - self._t0,
        }
        for key in ("rewards/margins", "rewards/accuracies", "focus/middle_token_fraction"):
            if key in logs:
                point[key] = _num(logs[key])
        self._last_time, self._last_tokens = now, tokens
        self.rt.progress.append(point)
        self.rt.message(point)

    def on_train_end(self, args, state, control, **kwargs):
        summary = next((e for e in reversed(state.log_history) if "train_runtime" in e), {})
        self.rt.final = {
            "global_step": int(state.global_step),
            "train_runtime_s": _num(summary.get("train_runtime")),
            "train_loss": _num(summary.get("train_loss")),
            "tokens": int(getattr(state, "num_input_tokens_seen", 0) or 0),
        }

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        step = int(state.global_step)
        local = Path(args.output_dir) / f"checkpoint-{step}"
        if self.rt.store is None or not self.rt.checkpoint_prefix:
            self.rt.log(f"checkpoint {local} saved locally (no object store configured)")
            return
        if not local.is_dir():
            raise RuntimeError(f"Trainer reported a save at step {step} but {local} does not exist")
        prefix = f"{self.rt.checkpoint_prefix}/checkpoint-{step}"
        t0 = time.monotonic()
        entries = self.rt.store.put_tree(prefix, local)
        # The listing and the marker are written after every file of the checkpoint: a kill
        # mid-upload leaves the previous marker, pointing at a complete checkpoint.
        record_checkpoint(self.rt.store, self.rt.checkpoint_prefix, step, entries)
        self.rt.checkpoints.append(step)
        for old in self.rt.checkpoints[:-self.rt.keep_checkpoints]:
            delete_checkpoint(self.rt.store, self.rt.checkpoint_prefix, old)
        self.rt.checkpoints = self.rt.checkpoints[-self.rt.keep_checkpoints:]
        self.rt.message({"type": CHECKPOINT, "step": step, "prefix": prefix,
                         "bytes": sum(e["size"] for e in entries), "upload_s": time.monotonic() - t0})
