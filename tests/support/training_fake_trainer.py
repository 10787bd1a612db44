"""A stand-in for `python -m surrogate_trainer.run` that speaks the same Pipes protocol, or breaks it.

Used by tests/integration/test_training_pipes.py to drive the checkpoint asset through every way a trainer can
end. It writes through the trainer's own store client and message names, so a protocol change on
either side breaks the test. FAKE_TRAINER_MODE picks the ending:

    ok                          the full protocol: started, progress, checkpoint, artifact, materialization
    exit_before_pipes           exits 0 before opening Pipes (a wrapper that swallowed an error)
    crash_after_start           started + progress, then exit code 3
    sigkill_mid                 started + progress, then SIGKILL (preempted / OOM-killed)
    silent_success              started + progress, then a clean exit 0 with nothing else
    artifact_no_materialization everything but the explicit materialization
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trainer"))

from surrogate_trainer.checkpoints import record_checkpoint  # noqa: E402
from surrogate_trainer.protocol import ARTIFACT, CHECKPOINT, PROGRESS, STARTED, RunSpec  # noqa: E402
from surrogate_trainer.store import TrainerStore  # noqa: E402


def main() -> int:
    mode = os.environ.get("FAKE_TRAINER_MODE", "ok")
    if mode == "exit_before_pipes":
        return 0
    from dagster_pipes import open_dagster_pipes

    with open_dagster_pipes() as pipes:
        spec = RunSpec.from_extras(dict(pipes.extras))
        store = TrainerStore(spec.store)
        for item in spec.inputs:  # the inputs must be reachable, as for the real trainer
            if "key" in item:
                assert store.exists(item["key"]), item
            else:
                assert store.list(item["prefix"] + "/"), item
        pipes.report_custom_message({"type": STARTED, "stage": spec.stage, "pid": os.getpid(),
                                     "device": "fake", "resumed_from_step": None})
        progress = [{"type": PROGRESS, "step": s, "max_steps": 3, "loss": 2.0 / s, "tokens": 100 * s,
                     "tokens_per_s": 50.0} for s in (1, 2, 3)]
        pipes.report_custom_message(progress[0])
        if mode == "crash_after_start":
            sys.stdout.flush()
            os._exit(3)
        if mode == "sigkill_mid":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "silent_success":
            return 0
        work = Path(spec.work_dir)
        work.mkdir(parents=True, exist_ok=True)
        (work / "adapter_model.safetensors").write_bytes(b"fake adapter weights")
        (work / "adapter_config.json").write_text(json.dumps({"r": spec.axolotl_config["lora_r"]}))
        entry = store.put_file(f"{spec.checkpoint_prefix}/checkpoint-2/adapter_model.safetensors",
                               work / "adapter_model.safetensors")
        record_checkpoint(store, spec.checkpoint_prefix, 2, [{**entry, "path": "adapter_model.safetensors"}])
        for p in progress[1:]:
            pipes.report_custom_message(p)
            if p["step"] == 2:
                pipes.report_custom_message({"type": CHECKPOINT, "step": 2, "prefix": f"{spec.checkpoint_prefix}/checkpoint-2"})
        prefix = f"{spec.output_prefix}/adapter"
        store.put_file(f"{prefix}/adapter_model.safetensors", work / "adapter_model.safetensors")
        store.put_file(f"{prefix}/adapter_config.json", work / "adapter_config.json")
        merged_prefix = None
        if spec.merge:  # as run.py: the merged policy beside the adapter
            merged_prefix = f"{spec.output_prefix}/merged"
            store.put_json(f"{merged_prefix}/config.json", {"model_type": "fake"})
        summary = {"stage": spec.stage, "fingerprint": spec.fingerprint, "global_step": 3, "resumed_from_step": None,
                   "final_loss": 2.0 / 3, "tokens": 300, "tokens_per_s": 50.0, "train_s": 6.0, "merge_s": 0.0,
                   "wall_s": 7.2, "device": "fake", "adapter_prefix": prefix, "merged_prefix": merged_prefix,
                   "reference": None, "reference_probe": None, "progress": progress}
        store.put_json(f"{spec.output_prefix}/result.json", summary)
        pipes.report_custom_message({"type": ARTIFACT, **{k: v for k, v in summary.items() if k != "progress"}})
        if mode != "artifact_no_materialization":
            pipes.report_asset_materialization(metadata={"global_step": 3}, data_version=spec.fingerprint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
