"""What the pipeline sends the trainer (Pipes extras) and what the trainer sends back (custom messages).

Stdlib only: the pipeline's tests read these names without importing axolotl.

Trainer -> pipeline, in order (``report_custom_message`` payloads, each with a ``type``):

    started     once, before any model is loaded: pid, device, resumed_from_step
    reference   DPO stages only: the model used as reference and a log-prob probe of it
    progress    every logging step: step, max_steps, loss, learning_rate, tokens, tokens_per_s
    checkpoint  after each checkpoint is in the object store: step, prefix
    artifact    once, last: where the adapter (and merged policy) are, steps, final loss

and then one ``report_asset_materialization``. The pipeline treats a run without ``artifact`` and
the materialization as failed, whatever the exit code (a process killed before Pipes started can
otherwise look like success: dagster-io/dagster#17868).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

STARTED, REFERENCE, PROGRESS, CHECKPOINT, ARTIFACT = "started", "reference", "progress", "checkpoint", "artifact"
MESSAGE_TYPES = (STARTED, REFERENCE, PROGRESS, CHECKPOINT, ARTIFACT)
WORK_PLACEHOLDER = "{work}"  # in the rendered config: the trainer's local working directory


@dataclass(frozen=True)
class RunSpec:
    """Everything one trainer run needs, passed as Pipes extras (JSON)."""

    stage: str
    fingerprint: str  # hash of rendered config + input data versions: names the run's store prefix
    work_dir: str
    store: dict[str, Any]  # {"kind": "local", "root"} or {"kind": "s3", "bucket", ...env var names}
    axolotl_config: dict[str, Any]  # rendered; paths may contain WORK_PLACEHOLDER
    inputs: list[dict[str, str]]  # [{"key": k, "dest": rel} | {"prefix": p, "dest": rel}]
    checkpoint_prefix: str
    output_prefix: str
    merge: bool = False
    keep_checkpoints: int = 2
    expected_reference: str | None = None  # DPO: the base_model path that must serve as reference
    extra_env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_extras(cls, extras: dict[str, Any]) -> "RunSpec":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(extras) - names)
        if unknown:
            raise ValueError(f"unknown run spec keys {unknown}")
        missing = [f.name for f in fields(cls) if f.name not in extras
                   and f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise ValueError(f"run spec lacks {missing}")
        return cls(**extras)

    def to_extras(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def expand_work(value: Any, work_dir: str) -> Any:
    """Replace WORK_PLACEHOLDER in every string of a nested config."""
    if isinstance(value, str):
        return value.replace(WORK_PLACEHOLDER, work_dir)
    if isinstance(value, list):
        return [expand_work(v, work_dir) for v in value]
    if isinstance(value, dict):
        return {k: expand_work(v, work_dir) for k, v in value.items()}
    return value
