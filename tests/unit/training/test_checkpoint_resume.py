"""Resume only from a whole checkpoint (trainer/surrogate_trainer/checkpoints.py).

Checkpoints are uploaded by the trainer's own callback (reporting.PipesProgressCallback.on_save)
into a local TrainerStore, shaped as the HF Trainer saves a LoRA checkpoint (12 files), then
damaged the ways a store or an operator damages them. Expected outcomes are written by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "trainer"))
from surrogate_trainer.checkpoints import plan_resume, trained_steps  # noqa: E402
from surrogate_trainer.reporting import PipesProgressCallback, Runtime  # noqa: E402
from surrogate_trainer.run import checked_steps  # noqa: E402
from surrogate_trainer.store import TrainerStore  # noqa: E402

PREFIX = "training/stage2/f0/checkpoints"
HF_FILES = ("adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth",
            "trainer_state.json", "training_args.bin", "tokenizer.json", "tokenizer_config.json",
            "special_tokens_map.json", "chat_template.jinja", "README.md")


def _save(cb: PipesProgressCallback, out: Path, step: int) -> None:
    local = out / f"checkpoint-{step}"
    local.mkdir(parents=True)
    for name in HF_FILES:
        body = json.dumps({"global_step": step}) if name == "trainer_state.json" else f"{name} at {step} " * 50
        (local / name).write_text(body)
    cb.on_save(SimpleNamespace(output_dir=str(out)), SimpleNamespace(is_world_process_zero=True, global_step=step),
               None)


@pytest.fixture()
def uploaded(tmp_path: Path):
    """Checkpoints 2 and 4 uploaded; returns (store, local output dir of the resumed run)."""
    store = TrainerStore({"kind": "local", "root": str(tmp_path / "store")})
    rt = Runtime(store=store, checkpoint_prefix=PREFIX, keep_checkpoints=2)
    rt.message = lambda payload: None
    cb = PipesProgressCallback(rt)
    for step in (2, 4):
        _save(cb, tmp_path / "trained", step)
    return store, tmp_path / "resumed"


def _object(store: TrainerStore, key: str) -> Path:
    return store.root.joinpath(*key.split("/"))


def test_an_intact_latest_is_resumed_with_every_listed_file(uploaded) -> None:
    store, out = uploaded
    latest = json.loads(_object(store, f"{PREFIX}/latest.json").read_text())
    assert latest["step"] == 4 and [f["path"] for f in latest["files"]] == sorted(HF_FILES)
    assert all(len(f["sha256"]) == 64 and f["size"] > 0 for f in latest["files"])
    plan = plan_resume(store, PREFIX, out)
    assert (plan.step, plan.dir, plan.refused) == (4, "checkpoint-4", [])
    assert sorted(p.name for p in (out / "checkpoint-4").iterdir()) == sorted(HF_FILES)


def test_a_truncated_optimizer_falls_back_to_the_previous_checkpoint(uploaded) -> None:
    store, out = uploaded
    opt = _object(store, f"{PREFIX}/checkpoint-4/optimizer.pt")
    opt.write_bytes(opt.read_bytes()[:100])
    plan = plan_resume(store, PREFIX, out)
    assert (plan.step, plan.dir) == (2, "checkpoint-2")
    assert [r["checkpoint"] for r in plan.refused] == ["latest.json (checkpoint-4)"]
    assert "optimizer.pt" in plan.refused[0]["reason"]
    assert not (out / "checkpoint-4").exists()  # nothing of the refused one is left for the trainer
    assert (out / "checkpoint-2" / "optimizer.pt").read_text().startswith("optimizer.pt at 2 ")


def test_a_deleted_optimizer_is_never_resumed_without(uploaded) -> None:
    store, out = uploaded
    store.delete(f"{PREFIX}/checkpoint-4/optimizer.pt")
    plan = plan_resume(store, PREFIX, out)
    assert plan.step == 2
    assert plan.refused == [{"checkpoint": "latest.json (checkpoint-4)",
                             "reason": "listed file optimizer.pt is not in the store"}]


def test_a_latest_listing_a_file_that_was_never_stored_is_refused_and_the_listing_used(uploaded) -> None:
    store, out = uploaded
    doc = store.get_json(f"{PREFIX}/latest.json")
    doc["files"].append({"path": "pytorch_model_fsdp.bin", "size": 10, "sha256": "0" * 64})
    store.put_json(f"{PREFIX}/latest.json", doc)
    plan = plan_resume(store, PREFIX, out)
    # the checkpoint's own listing (checkpoint-4.json) is whole: same step, nothing lost
    assert plan.step == 4 and plan.refused[0]["reason"] == "listed file pytorch_model_fsdp.bin is not in the store"


def test_a_listing_without_the_optimizer_is_refused(uploaded) -> None:
    store, out = uploaded
    for key in (f"{PREFIX}/latest.json", f"{PREFIX}/checkpoint-4.json"):
        doc = store.get_json(key)
        doc["files"] = [f for f in doc["files"] if f["path"] != "optimizer.pt"]
        store.put_json(key, doc)
    plan = plan_resume(store, PREFIX, out)
    assert plan.step == 2 and len(plan.refused) == 2
    assert all("no optimizer.pt" in r["reason"] for r in plan.refused)


def test_a_file_missing_from_the_listing_is_not_fetched(uploaded) -> None:
    store, out = uploaded
    doc = store.get_json(f"{PREFIX}/latest.json")
    doc["files"] = [f for f in doc["files"] if f["path"] != "README.md"]
    store.put_json(f"{PREFIX}/latest.json", doc)
    plan = plan_resume(store, PREFIX, out)
    assert plan.step == 4 and plan.refused == []
    assert not (out / "checkpoint-4" / "README.md").exists()


@pytest.mark.parametrize("damage", ["garbled_bytes", "not_json", "wrong_shape"])
def test_a_corrupt_latest_falls_back_to_the_newest_listing(uploaded, damage: str) -> None:
    store, out = uploaded
    key = f"{PREFIX}/latest.json"
    if damage == "garbled_bytes":  # bytes changed under the sidecar
        _object(store, key).write_bytes(b'{"step": 4, "dir": "checkpoint-4", "fil')
    elif damage == "not_json":  # a writer that stored garbage with a valid sidecar
        store._raw_put_bytes(key, b"\x00\xffnot json")
        store._commit(key, __import__("hashlib").sha256(b"\x00\xffnot json").hexdigest(), 10, None)
    else:  # the marker an older trainer wrote: a file count, nothing to verify against
        store.put_json(key, {"step": 4, "dir": "checkpoint-4", "files": 12})
    plan = plan_resume(store, PREFIX, out)
    assert plan.step == 4 and len(plan.refused) == 1 and plan.refused[0]["checkpoint"].startswith("latest.json")


def test_nothing_whole_left_starts_from_step_zero_and_says_why(uploaded) -> None:
    store, out = uploaded
    out.mkdir()
    (out / "checkpoint-9").mkdir()  # a local leftover of another attempt
    for step in (2, 4):
        store.delete(f"{PREFIX}/checkpoint-{step}/optimizer.pt")
    plan = plan_resume(store, PREFIX, out)
    assert (plan.step, plan.dir) == (None, None)
    assert [r["checkpoint"] for r in plan.refused] == ["latest.json (checkpoint-4)", "checkpoint-2"]
    assert not out.exists()


def test_only_kept_checkpoints_keep_a_listing(tmp_path: Path) -> None:
    store = TrainerStore({"kind": "local", "root": str(tmp_path / "store")})
    rt = Runtime(store=store, checkpoint_prefix=PREFIX, keep_checkpoints=2)
    rt.message = lambda payload: None
    cb = PipesProgressCallback(rt)
    for step in (2, 4, 6):
        _save(cb, tmp_path / "trained", step)
    keys = store.list(PREFIX + "/")
    assert not any("checkpoint-2" in k for k in keys)
    assert f"{PREFIX}/checkpoint-4.json" in keys and f"{PREFIX}/checkpoint-6.json" in keys


def test_steps_are_what_the_last_checkpoint_recorded(tmp_path: Path) -> None:
    for step, gs in ((2, 2), (4, 4)):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": gs}))
    assert trained_steps(tmp_path) == 4
    assert checked_steps(tmp_path, 4, 4) == 4
    with pytest.raises(RuntimeError, match="ended at step 5 but its last checkpoint records 4"):
        checked_steps(tmp_path, 5, 4)
    (tmp_path / "checkpoint-5").mkdir()
    (tmp_path / "checkpoint-5" / "trainer_state.json").write_text(json.dumps({"global_step": 5}))
    with pytest.raises(RuntimeError, match="trained 5 steps, past max_steps 4"):
        checked_steps(tmp_path, 5, 4)
    assert trained_steps(tmp_path / "none") is None
