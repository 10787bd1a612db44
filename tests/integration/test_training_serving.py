"""Serving rules (training/serving.py) and loadable pushes (training/publish.py), on a tiny Qwen2.

- the rules (tests/unit/training/test_serving_form.py): DoRA, modules_to_save, a rank over the
  server's limit, LoRA bias, modules vLLM has no LoRA for -> merged; a plain LoRA within limits ->
  adapter; the stage files decide as planned;
- the served form computes what the PEFT adapter model computes: a DoRA adapter merged
  (merge_and_unload, as the trainer's merge-lora: that merge itself, in .venv-trainer, is
  tests/env/test_training_serving_trainer_merge.py), a plain LoRA served as the adapter;
- every pushed repo loads the way a user loads it: merged repos with AutoModelForCausalLM, adapters
  with AutoPeftModelForCausalLM on a base_model_name_or_path that is itself a pushed repo, resolved
  from the offline hub's push dir exactly as a Hub id is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from surrogate_dagster.training.render import Resolution
from surrogate_dagster.training.serving import decide, read_adapter_config
from tests.unit.training.test_serving_form import CATALOG, LINEAR


# ---- the tiny model ----

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from surrogate_dagster.evals.tiny_model import build_tiny_qwen2

    return Path(build_tiny_qwen2(tmp_path_factory.mktemp("tiny"), max_positions=256))


def _adapter(base_dir: Path, out: Path, *, dora: bool, seed: int) -> torch.nn.Module:
    """A trained-looking adapter: nonzero B (and DoRA magnitudes away from the weight norms)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules=LINEAR, use_dora=dora))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
            elif "lora_magnitude_vector" in name:
                p.mul_(1.0 + 0.3 * torch.rand_like(p))
    model.save_pretrained(out)
    return model.eval()


def _merge(base_dir: Path, adapter_dir: Path, out: Path) -> Path:
    """What the trainer's merge does (axolotl merge-lora = PEFT merge_and_unload + tokenizer)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), adapter_dir).merge_and_unload()
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(out)
    return out


IDS = torch.tensor([[1, 5, 9, 42, 7, 300, 12, 64]])


def _logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(IDS).logits


def test_dora_served_merged_equals_the_peft_adapter_model(tiny, tmp_path):
    from transformers import AutoModelForCausalLM

    peft_model = _adapter(tiny, tmp_path / "dora", dora=True, seed=1)
    assert decide(read_adapter_config(tmp_path / "dora")).form == "merged"
    merged = AutoModelForCausalLM.from_pretrained(_merge(tiny, tmp_path / "dora", tmp_path / "merged"))
    want, got = _logits(peft_model), _logits(merged)
    assert not torch.allclose(want, _logits(AutoModelForCausalLM.from_pretrained(tiny)), atol=1e-3)
    assert torch.allclose(want, got, atol=1e-4), (want - got).abs().max()


def test_plain_lora_served_as_adapter_equals_the_peft_adapter_model(tiny, tmp_path):
    from surrogate_dagster.evals.checkpoints import resolve_checkpoint
    from surrogate_dagster.storage import LocalObjectStore
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    peft_model = _adapter(tiny, tmp_path / "lora", dora=False, seed=2)
    store = LocalObjectStore(tmp_path / "store")
    _put_dir(store, "models/base_model/v1", tiny)
    store.put_bytes("models/base_model/_latest.json", json.dumps({"prefix": "models/base_model/v1",
                                                                  "data_version": "v1"}).encode())
    _put_dir(store, "training/stage1/fp1/adapter", tmp_path / "lora")
    store.put_bytes("training/stage1/_latest.json", json.dumps(
        {"output_prefix": "training/stage1/fp1", "data_version": "fp1", "merged": False}).encode())
    ref = resolve_checkpoint(store, "stage1_checkpoint", tmp_path / "cache", "tiny")
    assert ref.adapter_dir and Path(ref.model_dir).name == "v1"
    served = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(ref.model_dir), ref.adapter_dir)
    assert torch.allclose(_logits(peft_model), _logits(served), atol=1e-5)
    # a DoRA adapter with no merged policy stored is refused, not served differently from production
    _adapter(tiny, tmp_path / "dora", dora=True, seed=3)
    _put_dir(store, "training/stage1/fp2/adapter", tmp_path / "dora")
    store.put_bytes("training/stage1/_latest.json", json.dumps(
        {"output_prefix": "training/stage1/fp2", "data_version": "fp2", "merged": False}).encode())
    with pytest.raises(RuntimeError, match="DoRA"):
        resolve_checkpoint(store, "stage1_checkpoint", tmp_path / "cache", "tiny")


def _put_dir(store, prefix: str, d: Path) -> None:
    for f in sorted(p for p in d.rglob("*") if p.is_file()):
        store.put_file(f"{prefix}/{f.relative_to(d)}", f)


def test_every_pushed_repo_loads_as_a_user_loads_it(tiny, tmp_path, monkeypatch):
    """stage 1.6 (DoRA on the tiny base, merged) and stage 2 (an adapter on 1.6's merged policy,
    merged again) pushed to the offline hub, then loaded from the push dir by repo id."""
    from peft import AutoPeftModelForCausalLM
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from surrogate_dagster.hub.client import OfflineHub
    from surrogate_dagster.storage import LocalObjectStore
    from surrogate_dagster.training.publish import TINY_BASE_REPO
    from surrogate_dagster.training.stage_run import _push_stage

    store = LocalObjectStore(tmp_path / "store")
    hub = OfflineHub(tmp_path / "mirror", tmp_path / "pushes", "axentx")
    _put_dir(store, "models/base_model/v1", tiny)
    _adapter(tiny, tmp_path / "s16_adapter", dora=True, seed=4)
    s16_merged = _merge(tiny, tmp_path / "s16_adapter", tmp_path / "s16_merged")
    _put_dir(store, "training/stage1_6/fp6/adapter", tmp_path / "s16_adapter")
    _put_dir(store, "training/stage1_6/fp6/merged", s16_merged)
    s2_model = _adapter(s16_merged, tmp_path / "s2_adapter", dora=True, seed=5)
    _put_dir(store, "training/stage2/fp7/adapter", tmp_path / "s2_adapter")
    _put_dir(store, "training/stage2/fp7/merged", _merge(s16_merged, tmp_path / "s2_adapter", tmp_path / "s2_merged"))

    for name, base, prefix in (("stage1_6", Resolution("prefix", "models/base_model/v1", "v1"), "training/stage1_6/fp6"),
                               ("stage2", Resolution("prefix", "training/stage1_6/fp6/merged", "fp6"), "training/stage2/fp7")):
        uri = _push_stage(CATALOG.stage(name), CATALOG, store, hub, base, f"{prefix}/adapter", f"{prefix}/merged",
                          {"README.md": b"# card\n"}, "test push")
        assert uri.startswith("hf-offline://models/axentx/")

    s16_repo, s2_repo = (f"axentx/{CATALOG.stage(n).hub_repo}" for n in ("stage1_6", "stage2"))
    assert hub.model_dir(s16_repo).is_dir() and hub.model_dir(f"axentx/{TINY_BASE_REPO}").is_dir()
    monkeypatch.chdir(hub.push_dir / "models")  # where a repo id resolves, as on the Hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = {}
    for repo in (f"axentx/{TINY_BASE_REPO}", s16_repo, s2_repo):
        loaded[repo] = AutoModelForCausalLM.from_pretrained(repo)
        AutoTokenizer.from_pretrained(repo)
    for repo, base in ((s16_repo, f"axentx/{TINY_BASE_REPO}"), (s2_repo, s16_repo)):
        cfg = json.loads(Path(repo, "adapter", "adapter_config.json").read_text())
        assert cfg["base_model_name_or_path"] == base
        adapter = AutoPeftModelForCausalLM.from_pretrained(os.path.join(repo, "adapter"))
        # the adapter on its pushed base computes what the pushed merged policy computes
        assert torch.allclose(_logits(adapter), _logits(loaded[repo]), atol=1e-4)
    assert torch.allclose(_logits(loaded[s2_repo]), _logits(s2_model), atol=1e-4)
    assert not list(Path(s2_repo).rglob("debug.log"))
