"""The form a stage's adapter is served in: what vLLM refuses is served merged, plain LoRA within the
limits as an adapter, every stage stores the form it is served in (the served models compared with
PEFT's: tests/env/test_training_serving.py)."""

from __future__ import annotations

import pytest

from surrogate_dagster.training.config import load_training_catalog
from surrogate_dagster.training.render import stores_merged
from surrogate_dagster.training.serving import ServingLimits, decide, expected_adapter_config


CATALOG = load_training_catalog()


LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


PLAIN = {"peft_type": "LORA", "r": 64, "use_dora": False, "modules_to_save": None, "bias": "none",
         "target_modules": LINEAR}


@pytest.mark.parametrize("change, why", [
    ({"use_dora": True}, "DoRA"),
    ({"modules_to_save": ["lm_head"]}, "modules_to_save"),
    ({"r": 128}, "max_lora_rank 64"),
    ({"rank_pattern": {"q_proj": 96}}, "rank 96"),
    ({"bias": "lora_only"}, "bias"),
    ({"target_modules": ["q_proj", "embed_tokens_x"]}, "not LoRA modules"),
    ({"target_modules": ".*proj"}, "pattern"),
    ({"peft_type": "IA3"}, "LoRA only"),
])
def test_what_vllm_refuses_is_served_merged(change, why):
    d = decide({**PLAIN, **change})
    assert d.form == "merged" and why in d.reason


def test_plain_lora_within_limits_is_served_as_adapter():
    assert decide(PLAIN).form == "adapter"
    assert decide({**PLAIN, "target_modules": "all-linear"}).form == "adapter"
    assert decide({**PLAIN, "r": 128}, ServingLimits(max_lora_rank=128)).form == "adapter"
    assert ServingLimits.from_inference({"max_lora_rank": 256}).max_lora_rank == 256
    assert ServingLimits.from_inference({}).max_lora_rank == 64


def test_every_stage_stores_the_form_it_is_served_in():
    """All five stages train DoRA: each run stores a merged policy, whatever the executor."""
    for stage in CATALOG.stages:
        cfg = expected_adapter_config(stage.load_config())
        assert cfg["use_dora"] and decide(cfg).form == "merged", stage.name
        for executor in ("local", "subprocess"):
            assert stores_merged(stage, CATALOG, executor), (stage.name, executor)
