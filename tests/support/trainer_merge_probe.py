"""Run in .venv-trainer: the trainer's own merge (surrogate_trainer.run.merge_stage, axolotl
merge-lora) of a DoRA adapter on a tiny model, compared with the PEFT adapter model.

    .venv-trainer/bin/python tests/support/trainer_merge_probe.py <base_dir> <work_dir> <out.json>

Writes {"max_abs_diff": merged vs adapter model, "adapter_effect": adapter model vs base,
"tokenizer_saved": bool}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import yaml

LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def main(base_dir: str, work: str, out: str) -> None:
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    from surrogate_trainer.run import merge_stage

    work_dir = Path(work)
    adapter_dir = work_dir / "output"
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32),
                           LoraConfig(r=4, lora_alpha=8, target_modules=LINEAR, use_dora=True))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)
            elif "lora_magnitude_vector" in name:
                p.mul_(1.0 + 0.3 * torch.rand_like(p))
    model.save_pretrained(adapter_dir)
    cfg = {"base_model": base_dir, "adapter": "lora", "lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0,
           "peft_use_dora": True, "lora_target_modules": LINEAR, "output_dir": str(adapter_dir),
           "datasets": [{"path": str(work_dir / "unused.jsonl"), "type": "chat_template"}],
           "sequence_len": 128, "micro_batch_size": 1, "num_epochs": 1, "learning_rate": 1e-4,
           "bf16": False, "fp16": False, "chat_template": "tokenizer_default"}
    cfg_path = work_dir / "axolotl.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    merged_dir = merge_stage(cfg_path, adapter_dir, None)

    ids = torch.tensor([[1, 5, 9, 42, 7, 300, 12, 64]])
    with torch.no_grad():
        base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()
        want = PeftModel.from_pretrained(base, adapter_dir).eval()(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).eval()(ids).logits
        got = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32).eval()(ids).logits
    Path(out).write_text(json.dumps({
        "max_abs_diff": float((want - got).abs().max()), "adapter_effect": float((want - plain).abs().max()),
        "tokenizer_saved": (merged_dir / "tokenizer_config.json").is_file()}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
