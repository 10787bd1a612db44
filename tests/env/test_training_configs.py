"""Every stage file passes axolotl 0.19's own schema, in the trainer environment; the runbook's do not.

One subprocess in .venv-trainer validates everything (axolotl's import costs ~15 s; the checks ~10 ms
each) with surrogate_trainer.validate, which also reports keys axolotl silently drops and DPO dataset
types that load as None. Skips if the trainer environment is not installed (`make setup` makes it).
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from surrogate_dagster.training.config import load_training_catalog
from surrogate_dagster.training.render import Resolution, render_stage

ROOT = Path(__file__).resolve().parents[2]
TRAINER_PY = ROOT / ".venv-trainer" / "bin" / "python"
CATALOG = load_training_catalog()

pytestmark = pytest.mark.skipif(not TRAINER_PY.exists(), reason="trainer environment (.venv-trainer) not installed")

# The runbook's Stage 1 and Stage 2 YAML, as written there (only the dataset paths shortened).
RUNBOOK_STAGE1 = {
    "base_model": "Qwen/Qwen2.5-Coder-7B-Instruct", "load_in_4bit": True, "adapter": "lora",
    "lora_r": 64, "lora_alpha": 128, "lora_dropout": 0.05, "peft_use_dora": True,
    "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "sequence_len": 32768, "sample_packing": True, "rope_theta": 1000000.0,
    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    "datasets": [{"path": "axentx/surrogate-1-v2-train", "type": "chat_template", "field_messages": "messages"}],
    "num_epochs": 3, "micro_batch_size": 1, "gradient_accumulation_steps": 16, "learning_rate": 1.0e-4,
    "lr_scheduler": "cosine", "warmup_ratio": 0.03, "optimizer": "adamw_torch_fused", "bf16": True,
    "gradient_checkpointing": True, "flash_attention": True, "liger_kernel": True,
    "hub_model_id": "axentx/surrogate-1-coder-7b-v2-sft", "hub_strategy": "every_save", "push_to_hub": True,
}
RUNBOOK_STAGE2 = {
    "base_model": "axentx/surrogate-1-coder-7b-v2-agent", "adapter": "lora", "rl": "dpo", "rl_beta": 0.1,
    "dpo_loss_type": ["focused"], "dpo_label_smoothing": 0.0,
    "datasets": [{"path": "Vezora/Code-Preference-Pairs", "type": "dpo"}],
    "learning_rate": 5e-6, "lr_scheduler": "constant", "num_epochs": 1, "micro_batch_size": 1,
    "gradient_accumulation_steps": 1, "output_dir": "./out",
}


def _local_resolutions() -> dict[str, Resolution]:
    res = {m: Resolution("key", f"mixtures/{m}/v/train.jsonl", "v") for m in
           ("code_sft_mixture", "tool_sft_mixture", "agent_sft_mixture", "code_dpo_mixture", "tool_dpo_mixture")}
    res["base_model"] = Resolution("prefix", "models/base_model/v/model", "v")
    for s in CATALOG.stages:
        for part in ("adapter", "merged"):
            res[f"{s.asset}/{part}"] = Resolution("prefix", f"training/{s.name}/v/{part}", "v")
    return res


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("configs")
    files: dict[str, Path] = {f"stage:{s.name}": s.config_path() for s in CATALOG.stages}
    for s in CATALOG.stages:
        for executor in ("local", "k8s"):
            path = tmp / f"rendered_{executor}_{s.name}.yaml"
            path.write_text(yaml.safe_dump(render_stage(s, CATALOG, executor, _local_resolutions()).config))
            files[f"{executor}:{s.name}"] = path
    stage2 = yaml.safe_load(CATALOG.stage("stage2").config_path().read_text())
    bad = {
        "runbook_stage1": RUNBOOK_STAGE1,
        "runbook_stage1_rope_fixed": {**{k: v for k, v in RUNBOOK_STAGE1.items() if k not in ("rope_scaling",)},
                                      "model_config": {"rope_scaling": RUNBOOK_STAGE1["rope_scaling"]}},
        "runbook_stage2": RUNBOOK_STAGE2,
        "focused_without_weight": {k: v for k, v in stage2.items() if k != "focused_dpo_weight"},
        "focused_plus_sigmoid": {**stage2, "dpo_loss_type": ["focused", "sigmoid"]},
        "weight_without_focused": {**copy.deepcopy(stage2), "dpo_loss_type": ["sigmoid"]},
    }
    for name, cfg in bad.items():
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        files[f"bad:{name}"] = path
    proc = subprocess.run([str(TRAINER_PY), "-m", "surrogate_trainer.validate", *map(str, files.values())],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(files), proc.stderr[-3000:]
    by_path = {line["file"]: line for line in lines}
    return {label: by_path[str(path)] for label, path in files.items()}


@pytest.mark.parametrize("label", [f"{kind}:{s.name}" for kind in ("stage", "local", "k8s") for s in CATALOG.stages])
def test_stage_files_and_renderings_pass_axolotls_schema(verdicts, label):
    v = verdicts[label]
    assert v["ok"], v["errors"]
    assert v["dropped"] == []


def test_runbook_stage1_as_written_is_rejected(verdicts):
    errors = " ".join(verdicts["bad:runbook_stage1"]["errors"])
    assert "rope_scaling" in errors and "model_config" in errors


def test_runbook_stage1_keys_axolotl_silently_ignores(verdicts):
    v = verdicts["bad:runbook_stage1_rope_fixed"]
    assert not v["ok"]
    assert {"liger_kernel", "push_to_hub", "rope_theta", "flash_attention"} <= set(v["dropped"])


def test_runbook_stage2_dpo_dataset_type_is_rejected(verdicts):
    # axolotl's schema accepts `type: dpo`; at load time it would return None (PITFALLS).
    v = verdicts["bad:runbook_stage2"]
    assert not v["ok"]
    assert "datasets[0].type 'dpo' is not an axolotl DPO strategy" in " ".join(v["errors"])


@pytest.mark.parametrize("name, message", [
    ("focused_without_weight", "needs focused_dpo_weight"),
    ("focused_plus_sigmoid", "cannot be combined"),
    ("weight_without_focused", "not [focused]"),
])
def test_focused_dpo_settings_are_validated_by_the_plugin_schema(verdicts, name, message):
    v = verdicts[f"bad:{name}"]
    assert not v["ok"]
    assert message in " ".join(v["errors"])
