"""One real axolotl scenario shared by test_training_resume.py and test_training_reference.py.

Stage 2 (Focused-DPO) of the real trainer on CPU, from a previous policy we control: a tiny Qwen2
(the base) and, as "stage 1.6", that base with a random LoRA merged in. The stage is materialized
through Dagster with the local executor, its trainer is SIGKILLed as soon as its first checkpoint
is in the object store, and it is materialized again: it must resume. Run once per pytest process
(memoized), about 2-4 minutes on 2 cores.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from dagster import materialize

ROOT = Path(__file__).resolve().parents[2]
TRAINER_PY = ROOT / ".venv-trainer" / "bin" / "python"


def _dpo_rows(n: int = 24) -> list[dict]:
    rows = []
    for i in range(n):
        head = f"def total_{i}(xs):\n    acc = "
        tail = "\n    return acc\n"
        rows.append({
            "id": f"p{i}", "source": "test",
            "messages": [{"role": "user", "content": f"Sum the list, version {i}."}],
            "chosen": {"role": "assistant", "content": head + "0\n    for x in xs:\n        acc += x" + tail},
            "rejected": {"role": "assistant", "content": head + "1\n    for x in xs:\n        acc -= x" + tail},
        })
    return rows


@dataclass
class Scenario:
    root: Path
    store: object
    base_dir: Path
    merged_dir: Path
    first: object
    second: object
    kill_step: int | None


def _put_dir(store, prefix: str, directory: Path) -> None:
    for p in sorted(directory.iterdir()):
        store.put_file(f"{prefix}/{p.name}", p)


def _previous_policy(base_dir: Path, out: Path) -> Path:
    """'Stage 1.6': the base with a random (clearly non-zero) LoRA merged in."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_pretrained(base_dir)
    peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear"))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    merged = peft_model.merge_and_unload()
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(out)
    return out


def _kill_at_first_checkpoint(store, work: Path, stop: threading.Event, seen: dict, damage: str | None) -> None:
    while not stop.is_set():
        markers = [k for k in store.list("training/stage2/") if k.endswith("/checkpoints/latest.json")]
        pids = list(work.glob("stage2/*/trainer.pid"))
        if markers and pids:
            latest = json.loads(store.get_bytes(markers[0]))
            seen["step"] = latest["step"]
            os.kill(int(pids[0].read_text()), signal.SIGKILL)
            if damage:  # before the step retry starts the next attempt (its backoff is seconds)
                store.delete(markers[0].rsplit("/", 1)[0] + f"/{latest['dir']}/{damage}")
            return
        time.sleep(0.1)


def dpo_resume_scenario() -> Scenario:
    """Killed at its first checkpoint, resumed by the step retry, then materialized again."""
    return _dpo_scenario(None)


def dpo_damaged_resume_scenario() -> Scenario:
    """As :func:`dpo_resume_scenario`, with the uploaded checkpoint's ``optimizer.pt`` deleted
    from the store between the kill and the retry."""
    return _dpo_scenario("optimizer.pt")


@functools.cache
def _dpo_scenario(damage: str | None) -> Scenario:
    from surrogate_dagster.curation.mixtures import MixtureBuild, write_mixture
    from surrogate_dagster.resources import HubResource, ObjectStoreResource
    from surrogate_dagster.storage import LocalObjectStore
    from surrogate_dagster.training.assets import CATALOG, build_stage_asset
    from surrogate_dagster.training.executor import TrainerExecutorResource
    from surrogate_dagster.training.tiny_base import TinySpec, build_tiny_qwen2, row_texts

    root = Path(tempfile.mkdtemp(prefix="surrogate-dpo-e2e-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    store = LocalObjectStore(root / "store", fsync=False)
    rows = _dpo_rows()
    write_mixture(store, MixtureBuild.from_rows("code_dpo", rows, {"test": len(rows)}, {}, "d1"), "card")
    base_dir = root / "base"
    build_tiny_qwen2([t for r in rows for t in row_texts(r)], base_dir, TinySpec(vocab_size=400))
    merged_dir = _previous_policy(base_dir, root / "stage1_6_merged")
    _put_dir(store, "training/stage1_6/p0/merged", merged_dir)
    store.put_bytes("training/stage1_6/_latest.json",
                    json.dumps({"output_prefix": "training/stage1_6/p0", "data_version": "p0", "merged": True}).encode())

    (root / "mirror").mkdir()
    resources = {
        "object_store": ObjectStoreResource(kind="local", root=str(root / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(root / "mirror"), push_dir=str(root / "pushes"), org="axentx"),
        "trainer": TrainerExecutorResource(executor="local", python=str(TRAINER_PY), work_dir=str(root / "work")),
    }
    asset_def = build_stage_asset(CATALOG.stage("stage2"), "local", "tiny")
    stop, seen = threading.Event(), {}
    watcher = threading.Thread(target=_kill_at_first_checkpoint, args=(store, root / "work", stop, seen, damage),
                               daemon=True)
    watcher.start()
    from tests.support.smoke_gate import gated_instance

    instance = gated_instance()
    first = materialize([asset_def], resources=resources, raise_on_error=False, instance=instance)
    stop.set()
    second = materialize([asset_def], resources=resources, raise_on_error=False, instance=instance)
    return Scenario(root=root, store=store, base_dir=base_dir, merged_dir=merged_dir, first=first, second=second,
                    kill_step=seen.get("step"))


def metadata(result, asset: str = "stage2_checkpoint") -> dict:
    mats = result.asset_materializations_for_node(asset)
    assert len(mats) == 1
    return {k: getattr(v, "value", v) for k, v in mats[0].metadata.items()}
