"""The trainer entrypoint, run by the pipeline through Dagster Pipes: ``python -m surrogate_trainer.run``.

One run = one stage: fetch the inputs (datasets, base model or merged policy, previous adapter)
from the object store, resume from the stage's last uploaded checkpoint if there is one, train with
axolotl in this process (its Python API, so the plugin's callback shares this Pipes context), merge
the adapter into the policy when the next stage needs it, upload the artifacts, then report.

The pipeline sees the run through the messages in protocol.py and one asset materialization.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .checkpoints import ResumePlan, plan_resume, trained_steps
from .protocol import ARTIFACT, STARTED, RunSpec, expand_work
from .store import TrainerStore

# Heavy imports (transformers, axolotl) stay inside functions: `datasets` saves prepared data with a
# *spawn* pool even for num_proc=1, and each spawned worker re-imports this module as __main__.

# Written into the work dir so an operator (or a test) can find the process to stop it.
PID_FILE = "trainer.pid"


@dataclass
class RunResult:
    metadata: dict[str, Any]
    data_version: str


def fetch_inputs(store: TrainerStore, spec: RunSpec, work: Path) -> list[str]:
    """Download every input into the work dir; a finished download is marked and not repeated."""
    fetched = []
    for item in spec.inputs:
        dest = work / item["dest"]
        source = item.get("key") or item.get("prefix")
        marker = work / ".fetched" / hashlib.sha256(f"{source}->{item['dest']}".encode()).hexdigest()[:24]
        if marker.exists() and marker.read_text() == source:
            continue
        if "key" in item:
            store.get_file(item["key"], dest)
        else:
            store.get_tree(item["prefix"], dest)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(source)
        fetched.append(source)
    return fetched


def prepare_resume(store: TrainerStore, spec: RunSpec, output_dir: Path) -> ResumePlan:
    """Fetch the newest whole checkpoint the stage's run uploaded (checkpoints.py); every one
    passed over is logged as a warning and returned in the plan."""
    from .reporting import RUNTIME

    plan = plan_resume(store, spec.checkpoint_prefix, output_dir)
    for refused in plan.refused:
        RUNTIME.warn(f"not resuming from {refused['checkpoint']}: {refused['reason']}")
    if plan.refused:
        RUNTIME.warn(f"resuming from {plan.dir} instead" if plan.dir else
                     "no whole checkpoint left: training starts from step 0")
    return plan


def adapter_skips(output_dir: Path) -> tuple[str, ...]:
    """What of axolotl's output_dir is not the adapter: checkpoints, the merge, full-model weights.

    For DPO with an adapter, axolotl 0.19 also saves the whole base model next to the adapter
    (train.py: save_trained_model calls model.save_pretrained): 15 GB at 7B, not uploaded.
    """
    return tuple(p.name for p in output_dir.iterdir()
                 if p.name.startswith(("checkpoint-", "model-", "pytorch_model"))
                 or p.name in ("merged", "model.safetensors", "model.safetensors.index.json"))


def checked_steps(output_dir: Path, callback_step: int | None, max_steps: int | None) -> int:
    """The steps trained, as the final checkpoint's trainer_state.json records them; refused
    when the trainer's own count disagrees or passes ``max_steps`` (a resume that lost its step
    count trains past the end)."""
    steps = trained_steps(output_dir)
    if steps is None:
        raise RuntimeError(f"training finished but no checkpoint with a trainer_state.json is in {output_dir}")
    if callback_step is not None and callback_step != steps:
        raise RuntimeError(f"the trainer ended at step {callback_step} but its last checkpoint records {steps}")
    if max_steps and steps > int(max_steps):
        raise RuntimeError(f"trained {steps} steps, past max_steps {max_steps}")
    return steps


def device_name() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
    return f"cpu:{platform.processor() or platform.machine()} x{os.cpu_count()}"


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's reach (``gc.freeze``).

    axolotl calls ``gc.collect()`` after loading the model (three times), after each checkpoint save
    and after training; each full collection walks the ~700k objects that importing torch,
    transformers and axolotl leaves behind (0.4 s apiece on a 2-core box, for a model of any size).
    Those objects live until the process exits, so freezing them changes what is freed by nothing;
    objects made later are collected as before.
    """
    gc.collect()
    gc.freeze()


def single_process_dataset_saves() -> None:
    """``Dataset.save_to_disk(num_proc=1)`` writes in this process instead of a one-worker pool.

    datasets starts a *spawn* pool for any ``num_proc``, 1 included: a fresh interpreter that
    re-imports datasets and this module to write the one shard the caller could write itself (~2 s
    per stage on CPU). axolotl asks for num_proc=1 whenever the prepared set has under 512 rows.
    ``num_proc=None`` is datasets' in-process path: it writes the same shard files.
    """
    from datasets import Dataset

    save = Dataset.save_to_disk
    if getattr(save, "_single_process", False):
        return

    def save_to_disk(self, dataset_path, max_shard_size=None, num_shards=None, num_proc=None, **kwargs):
        return save(self, dataset_path, max_shard_size=max_shard_size, num_shards=num_shards,
                    num_proc=None if num_proc == 1 else num_proc, **kwargs)

    save_to_disk._single_process = True
    Dataset.save_to_disk = save_to_disk


def train_stage(cfg_path: Path) -> None:
    """axolotl's own train path (what `axolotl train` runs per process), in this process."""
    from axolotl.cli.args import TrainerCliArgs
    from axolotl.cli.config import load_cfg
    from axolotl.cli.train import do_train

    single_process_dataset_saves()
    cfg = load_cfg(str(cfg_path))  # imports the plugins and the model's modules too
    freeze_heap()
    do_train(cfg, TrainerCliArgs())


def merge_stage(cfg_path: Path, adapter_dir: Path, model_config: dict | None) -> Path:
    """`axolotl merge-lora`, in this process: base_model + adapter -> <output_dir>/merged.

    merge-lora copies the base's config.json, without the stage's ``model_config`` overrides. The
    policy was trained under them (YaRN scales attention at every position), so they are written
    into the merged config: the next stage and inference then load the model that was trained.
    """
    from axolotl.cli.merge_lora import do_cli
    from transformers import AutoConfig

    do_cli(config=str(cfg_path), lora_model_dir=str(adapter_dir))
    merged = adapter_dir / "merged"
    if not (merged / "config.json").is_file():
        raise RuntimeError(f"merge-lora finished but {merged} has no config.json")
    if model_config:
        config = AutoConfig.from_pretrained(merged)
        for key, value in model_config.items():
            setattr(config, key, value)  # exactly how axolotl applies model_config at load time
        config.save_pretrained(merged)
    return merged


def run(spec: RunSpec, pipes: Any = None) -> RunResult:
    """Train one stage end to end; raises on any failure (the process then exits non-zero)."""
    t_start = time.monotonic()
    os.environ.update(spec.extra_env)
    from .reporting import RUNTIME

    work = Path(spec.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / PID_FILE).write_text(str(os.getpid()))
    store = TrainerStore(spec.store)

    RUNTIME.pipes, RUNTIME.store = pipes, store
    RUNTIME.checkpoint_prefix, RUNTIME.keep_checkpoints = spec.checkpoint_prefix, spec.keep_checkpoints
    RUNTIME.expected_reference = expand_work(spec.expected_reference, str(work)) if spec.expected_reference else None

    t0 = time.monotonic()
    fetched = fetch_inputs(store, spec, work)
    fetch_s = time.monotonic() - t0
    cfg = expand_work(spec.axolotl_config, str(work))
    output_dir = Path(cfg["output_dir"])
    plan = prepare_resume(store, spec, output_dir)
    resumed = plan.step
    if resumed is not None:
        cfg["resume_from_checkpoint"] = str(output_dir / plan.dir)
        RUNTIME.checkpoints = [resumed]
    RUNTIME.message({"type": STARTED, "stage": spec.stage, "pid": os.getpid(), "device": device_name(),
                     "resumed_from_step": resumed, "resume_refused": plan.refused, "fetched": fetched,
                     "fetch_s": fetch_s})
    cfg_path = work / "axolotl.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))

    t0 = time.monotonic()
    train_stage(cfg_path)
    train_s = time.monotonic() - t0
    if not (output_dir / "adapter_model.safetensors").is_file():
        raise RuntimeError(f"training finished but no adapter was saved in {output_dir}")
    steps = checked_steps(output_dir, RUNTIME.final.get("global_step"), cfg.get("max_steps"))

    adapter_prefix = f"{spec.output_prefix}/adapter"
    adapter_files = store.put_tree(adapter_prefix, output_dir, skip=adapter_skips(output_dir))
    merged_prefix, merge_s = None, 0.0
    if spec.merge:
        t0 = time.monotonic()
        merged = merge_stage(cfg_path, output_dir, cfg.get("model_config"))
        merged_prefix = f"{spec.output_prefix}/merged"
        store.put_tree(merged_prefix, merged)
        merge_s = time.monotonic() - t0

    final = RUNTIME.final
    losses = [p["loss"] for p in RUNTIME.progress if p.get("loss") is not None]
    rates = [p["tokens_per_s"] for p in RUNTIME.progress if p.get("tokens_per_s")]
    summary = {
        "stage": spec.stage,
        "fingerprint": spec.fingerprint,
        "global_step": steps,
        "resumed_from_step": resumed,
        "resume_refused": plan.refused,
        "final_loss": losses[-1] if losses else None,
        "train_loss": final.get("train_loss"),
        "tokens": final.get("tokens"),
        "tokens_per_s": sum(rates) / len(rates) if rates else None,
        "train_s": train_s,
        "merge_s": merge_s,
        "wall_s": time.monotonic() - t_start,
        "device": device_name(),
        "adapter_prefix": adapter_prefix,
        "adapter_bytes": sum(f["size"] for f in adapter_files),
        "merged_prefix": merged_prefix,
        "reference": {k: v for k, v in (RUNTIME.reference or {}).items() if k != "probe"} or None,
        "reference_probe": (RUNTIME.reference or {}).get("probe"),
        "progress": RUNTIME.progress,
    }
    # Written last: the pipeline reads this as the commit marker of the stage's artifacts.
    store.put_json(f"{spec.output_prefix}/result.json", summary)
    RUNTIME.message({"type": ARTIFACT, **{k: v for k, v in summary.items() if k != "progress"}})
    metadata = {k: v for k, v in summary.items()
                if k not in ("progress", "reference", "reference_probe") and v is not None}
    return RunResult(metadata=metadata, data_version=spec.fingerprint)


def main(argv: list[str]) -> int:
    """Under Pipes (the pipeline's way), or ``--spec FILE`` to run a rendered spec by hand."""
    if argv[:1] == ["--spec"] and len(argv) == 2:
        result = run(RunSpec.from_extras(json.loads(Path(argv[1]).read_text())))
        print(json.dumps(result.metadata, indent=1))
        return 0
    from dagster_pipes import open_dagster_pipes

    with open_dagster_pipes() as pipes:
        spec = RunSpec.from_extras(dict(pipes.extras))
        result = run(spec, pipes)
        pipes.report_asset_materialization(metadata=result.metadata, data_version=result.data_version)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
