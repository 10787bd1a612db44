"""axolotl's DPO trainer with the Focused-DPO loss (math in focused_dpo.py).

TRL 1.9's ``_compute_loss`` sums per-token log-probs before any hook could weight them, so this
subclass computes the policy and reference per-token log-probs itself (the reference exactly as
TRL does: the adapter-disabled model, or a ``ref`` adapter / ``ref_model`` when those exist) and
applies the focus weights. Everything else (data, collator, optimizer, checkpoints) is axolotl's.
"""

from __future__ import annotations

import torch
from accelerate.utils import is_peft_model
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import selective_log_softmax, use_adapter

from axolotl.core.trainers.dpo.trainer import AxolotlDPOTrainer

from .focused_dpo import batch_focus_weights, focused_dpo_loss

FOCUSED = "focused"
_NON_MODEL_KEYS = {"completion_mask", "ref_chosen_logps", "ref_rejected_logps"}


class FocusedDPOTrainer(AxolotlDPOTrainer):
    """DPO whose log-ratios weight the error-prone middle of each pair by ``focused_weight``."""

    tag_names = ["axolotl", "dpo", "focused-dpo"]

    def __init__(self, *args, focused_weight: float, **kwargs):
        super().__init__(*args, **kwargs)
        if list(self.loss_types) != [FOCUSED]:
            raise ValueError(f"FocusedDPOTrainer needs dpo_loss_type: [focused], got {self.loss_types}")
        # Each of these changes what a log-ratio is; combining them with focus weights is untested.
        if self.precompute_ref_logps:
            raise ValueError("Focused-DPO weights reference log-probs per token; precompute_ref_log_probs keeps "
                             "only their sums. Set precompute_ref_log_probs: false")
        if self.ld_alpha is not None or self.f_divergence_type != "reverse_kl" or self.use_weighting:
            raise ValueError("Focused-DPO is defined for plain reverse-KL DPO (no ld_alpha, f-divergence, WPO)")
        if self.use_liger_kernel:
            raise ValueError("Focused-DPO needs per-token logits; the Liger fused DPO loss never materializes them")
        if not focused_weight or focused_weight <= 0:
            raise ValueError(f"focused_dpo_weight must be > 0, got {focused_weight}")
        self.focused_weight = float(focused_weight)

    def _compute_loss(self, model, inputs, return_outputs):
        mode = "train" if self.model.training else "eval"
        model_kwargs = {k: v for k, v in inputs.items() if k not in _NON_MODEL_KEYS}
        model_kwargs["use_cache"] = False
        outputs = model(**model_kwargs)

        input_ids, completion_mask = inputs["input_ids"], inputs["completion_mask"]
        labels = input_ids[:, 1:]
        policy = selective_log_softmax(outputs.logits[:, :-1, :], labels)
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            if is_peft_model(model) and self.ref_model is None:
                unwrapped = self.accelerator.unwrap_model(model)
                with use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None):
                    ref_logits = self.model(**model_kwargs).logits
            else:
                ref_logits = self.ref_model(**model_kwargs).logits
        ref = selective_log_softmax(ref_logits[:, :-1, :], labels)

        weights = batch_focus_weights(input_ids, completion_mask, self.focused_weight)[:, 1:]
        weights = weights.to(device=policy.device, dtype=policy.dtype)
        losses, chosen, rejected = focused_dpo_loss(policy, ref, weights, self.beta, self.label_smoothing)
        loss = losses.mean()

        self._log_metrics(mode, inputs, weights, chosen.detach(), rejected.detach())
        return (loss, outputs) if return_outputs else loss

    def _log_metrics(self, mode, inputs, weights, chosen, rejected) -> None:
        gather = self.accelerator.gather_for_metrics
        chosen_rewards, rejected_rewards = self.beta * chosen, self.beta * rejected
        m = self._metrics[mode]
        m["rewards/chosen"].append(gather(chosen_rewards).mean().item())
        m["rewards/rejected"].append(gather(rejected_rewards).mean().item())
        m["rewards/accuracies"].append(gather((chosen_rewards > rejected_rewards).float()).mean().item())
        m["rewards/margins"].append(gather(chosen_rewards - rejected_rewards).mean().item())
        completion = (weights > 0).sum()
        middle = ((weights > 0) & (weights != 1.0)).sum() if self.focused_weight != 1.0 else completion * 0
        frac = gather(middle.float()).sum() / gather(completion.float()).sum().clamp_min(1)
        m["focus/middle_token_fraction"].append(frac.item())
        if mode == "train":
            self._total_train_tokens += gather(inputs["attention_mask"].sum()).sum().item()
        m["num_tokens"] = [self._total_train_tokens]
