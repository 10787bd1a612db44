"""The DPO reference is the previous stage's merged policy, not the original base model.

The trainer's plugin computes reference log-probs of the first training pair through TRL's own
reference path (compute_ref_log_probs on the real trainer object) and reports them. Here they are
recomputed from the stored models: equal to the merged previous policy's, and not the base's.
Slow (shares the real-axolotl scenario of test_training_resume.py).
"""

from __future__ import annotations

import json

import pytest
import torch

from surrogate_dagster.training.assets import CATALOG
from tests.support.training_support import TRAINER_PY, dpo_resume_scenario, metadata

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not TRAINER_PY.exists(), reason="trainer environment (.venv-trainer) not installed")]


def completion_logp(model_dir, prompt_ids: list[int], completion_ids: list[int]) -> float:
    """log p(completion | prompt) under the model: the sum TRL's DPO uses.

    The model is loaded as axolotl loads a stage's base_model: with the stage file's model_config
    set on its config (YaRN rope parameters change attention scaling even at short positions).
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir)
    for key, value in CATALOG.stage("stage2").load_config()["model_config"].items():
        setattr(config, key, value)
    model = AutoModelForCausalLM.from_pretrained(model_dir, config=config, dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logps = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
    targets = ids[0, 1:]
    per_token = logps.gather(1, targets[:, None])[:, 0]
    return float(per_token[len(prompt_ids) - 1:].sum())


def test_reference_logits_are_the_merged_previous_policy():
    sc = dpo_resume_scenario()
    assert sc.second.success
    md = metadata(sc.second)
    assert md["reference_model"] == "stage1_6_checkpoint/merged@p0"
    summary = json.loads(sc.store.get_bytes(f"training/stage2/{md['run_fingerprint']}/result.json"))
    assert summary["reference"]["mode"] == "adapter_disabled_base_model"
    assert summary["reference"]["model"].endswith("inputs/stage1_6_checkpoint_merged")
    probe = summary["reference_probe"]
    for side in ("chosen", "rejected"):
        reported = probe[f"ref_{side}_logp"]
        merged = completion_logp(sc.merged_dir, probe["prompt_ids"], probe[f"{side}_ids"])
        base = completion_logp(sc.base_dir, probe["prompt_ids"], probe[f"{side}_ids"])
        assert reported == pytest.approx(merged, abs=1e-4), side
        assert abs(reported - base) > 0.1, side  # the original base would be a different reference
    assert md["reference_probe_logps"] == {"chosen": probe["ref_chosen_logp"], "rejected": probe["ref_rejected_logp"]}
