"""The axolotl plugin: Pipes progress callback, Focused-DPO trainer, and the reference-model guard.

Listed in a stage's ``plugins:`` as ``surrogate_trainer.plugin.SurrogatePlugin``. It adds one
config key, ``focused_dpo_weight`` (validated with axolotl's schema), and:

- ``dpo_loss_type: [focused]`` -> FocusedDPOTrainer; any other loss keeps axolotl's DPO trainer.
- every stage -> PipesProgressCallback (step/loss/tokens-per-s, checkpoint upload).
- DPO stages -> the reference model is asserted, recorded and probed. axolotl 0.19 passes
  ``model_ref=None`` when an adapter is set (train.py: setup_reference_model) and builds the DPO
  LoRA from the config only, silently ignoring ``lora_model_dir`` (loaders/model.py:
  _load_adapters, config_only=True). So the reference is the adapter-disabled ``base_model``, and
  it is the previous stage's policy only if ``base_model`` IS that policy, merged. We refuse a
  ``lora_model_dir`` on a DPO stage and check ``base_model`` against what the pipeline expects.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from axolotl.integrations.base import BasePlugin

from .protocol import REFERENCE
from .reporting import RUNTIME, PipesProgressCallback

FOCUSED = "focused"


class SurrogateArgs(BaseModel):
    """Config keys this plugin adds to axolotl's schema."""

    focused_dpo_weight: float | None = Field(
        default=None, gt=0,
        description="Focused-DPO: weight of the error-prone middle tokens in the log-ratio (paper: 2.0)",
    )

    @model_validator(mode="before")
    @classmethod
    def _focused_needs_weight(cls, data: Any) -> Any:
        if isinstance(data, dict):
            losses = data.get("dpo_loss_type") or []
            if FOCUSED in losses:
                if losses != [FOCUSED]:
                    raise ValueError(f"dpo_loss_type: [focused] cannot be combined with others, got {losses}")
                if data.get("focused_dpo_weight") is None:
                    raise ValueError("dpo_loss_type: [focused] needs focused_dpo_weight (the paper uses 2.0)")
                if data.get("rl") != "dpo":
                    raise ValueError("dpo_loss_type: [focused] needs rl: dpo")
            elif data.get("focused_dpo_weight") is not None:
                raise ValueError("focused_dpo_weight is set but dpo_loss_type is not [focused]")
        return data


class SurrogatePlugin(BasePlugin):
    """Reporting, Focused-DPO and reference guard for the surrogate pipeline's stages."""

    def __init__(self) -> None:
        super().__init__()
        self._model = None

    def get_input_args(self) -> str:
        return "surrogate_trainer.plugin.SurrogateArgs"

    def post_model_load(self, cfg, model) -> None:
        # axolotl hands a plugin trainer class no positional args (core/builders/rl.py:
        # _get_trainer_cls), so the loaded policy is kept here and bound below.
        self._model = model

    def get_trainer_cls(self, cfg):
        if cfg.rl == "dpo" and FOCUSED in (cfg.dpo_loss_type or []):
            from .focused_trainer import FocusedDPOTrainer

            if self._model is None:
                raise RuntimeError("the policy model was not loaded before the trainer was built")
            # model, ref_model=None: the same reference TRL uses for a fresh adapter (see module doc).
            return functools.partial(FocusedDPOTrainer, self._model, None,
                                     focused_weight=cfg.focused_dpo_weight)
        return None

    def add_callbacks_post_trainer(self, cfg, trainer) -> list:
        return [PipesProgressCallback(RUNTIME)]

    def post_trainer_create(self, cfg, trainer) -> None:
        if cfg.rl:
            RUNTIME.reference = check_reference(cfg, trainer, RUNTIME.expected_reference)
            RUNTIME.message({"type": REFERENCE, **RUNTIME.reference})
        elif cfg.lora_model_dir:
            check_continued_adapter(trainer.model, cfg.lora_model_dir)


def check_continued_adapter(model, lora_model_dir: str) -> None:
    """'Continue the same LoRA': the loaded adapter must be trainable and not freshly initialised."""
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    if not lora_b or not any(p.requires_grad for p in lora_b):
        raise RuntimeError(f"lora_model_dir {lora_model_dir} did not give a trainable adapter")
    if all(float(p.detach().abs().sum()) == 0.0 for p in lora_b):
        raise RuntimeError(f"adapter from {lora_model_dir} has all-zero lora_B: it was not loaded")


def check_reference(cfg, trainer, expected: str | None) -> dict:
    """Which model the DPO trainer will use as reference, asserted, with a log-prob probe."""
    from peft import PeftModel

    if cfg.lora_model_dir:
        raise ValueError(
            "a DPO stage cannot continue an adapter: axolotl 0.19 builds the DPO LoRA from the config and "
            f"ignores lora_model_dir ({cfg.lora_model_dir}); merge the previous policy and set base_model to it")
    if not cfg.adapter:
        raise ValueError("DPO stages here train a LoRA on the merged previous policy (adapter: lora)")
    model = trainer.model
    if trainer.ref_model is not None or not isinstance(model, PeftModel) or "ref" in model.peft_config:
        raise RuntimeError("unexpected DPO reference setup: expected the adapter-disabled base model")
    if expected is not None and Path(cfg.base_model).resolve() != Path(expected).resolve():
        raise RuntimeError(f"DPO reference would be {cfg.base_model}, but the pipeline expects {expected}")
    return {"model": str(cfg.base_model), "mode": "adapter_disabled_base_model", "probe": reference_probe(trainer)}


def reference_probe(trainer, max_tokens: int = 64) -> dict:
    """Reference log-probs of the first training pair, computed by the trainer's own reference path.

    A test recomputes them from the stored models: equal to the merged previous policy's, not the
    original base's. Truncated to ``max_tokens`` per part so the message stays small.
    """
    import torch

    example = trainer.train_dataset[0]
    probe = {k: list(example[k])[:max_tokens] for k in ("prompt_ids", "chosen_ids", "rejected_ids")}
    batch = trainer.data_collator([probe])
    device = next(trainer.model.parameters()).device
    batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    was_training = trainer.model.training
    trainer.model.eval()
    try:
        ref_chosen, ref_rejected = trainer.compute_ref_log_probs(trainer.model, batch)
    finally:
        trainer.model.train(was_training)
    return {**probe, "ref_chosen_logp": float(ref_chosen[0]), "ref_rejected_logp": float(ref_rejected[0])}
