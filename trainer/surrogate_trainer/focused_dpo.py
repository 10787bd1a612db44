"""Focused-DPO (arXiv 2502.11475) as pure torch: where the pair differs, and how much that counts.

Focused-DPO observes that a chosen and a rejected program usually share a prefix (imports, the
signature) and a suffix (the return, the tail), and that correctness is decided in the middle
between them: the "error-prone point". Its loss is DPO's, with the tokens of that middle weighted
by ``w`` (the paper uses ``w = 2``) inside each response's log-ratio:

    r(y) = sum_t  m_t * (log pi(y_t | ...) - log pi_ref(y_t | ...)),   m_t = w in the middle, 1 outside
    loss = -log sigmoid(beta * (r(chosen) - r(rejected)))               (+ optional label smoothing)

The middle is found on token ids of the two completions: the longest common prefix, then, of what
remains, the longest common suffix. Shared-prefix tokens have identical contexts in both responses,
so their log-ratios cancel exactly; the suffix ones do not (their context includes the middle).

Only torch is imported here, so the pipeline's environment can test the math too.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def focus_span(chosen: Sequence[int], rejected: Sequence[int]) -> tuple[int, int]:
    """Lengths (prefix, suffix) of the common prefix and, after it, the common suffix of two sequences.

    The suffix never overlaps the prefix, so ``prefix + suffix <= min(len(chosen), len(rejected))``.
    """
    n = min(len(chosen), len(rejected))
    prefix = 0
    while prefix < n and chosen[prefix] == rejected[prefix]:
        prefix += 1
    suffix = 0
    while suffix < n - prefix and chosen[-1 - suffix] == rejected[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def focus_weights(length: int, prefix: int, suffix: int, weight: float) -> list[float]:
    """Per-token weights of one completion: 1 on the shared prefix and suffix, ``weight`` between."""
    if prefix + suffix > length:
        raise ValueError(f"prefix {prefix} + suffix {suffix} exceed the completion length {length}")
    return [1.0] * prefix + [float(weight)] * (length - prefix - suffix) + [1.0] * suffix


def pair_weights(chosen: Sequence[int], rejected: Sequence[int], weight: float) -> tuple[list[float], list[float]]:
    """Weights for the tokens of a chosen and a rejected completion (same prefix/suffix split)."""
    prefix, suffix = focus_span(chosen, rejected)
    return (focus_weights(len(chosen), prefix, suffix, weight),
            focus_weights(len(rejected), prefix, suffix, weight))


def batch_focus_weights(input_ids: torch.Tensor, completion_mask: torch.Tensor, weight: float) -> torch.Tensor:
    """Weights for a TRL preference batch: rows [0, B) are prompt+chosen, [B, 2B) prompt+rejected.

    ``completion_mask`` marks completion tokens (TRL's DataCollatorForPreference layout: right
    padding, completion contiguous after the prompt). Positions outside completions get 0.
    """
    if input_ids.shape != completion_mask.shape or input_ids.shape[0] % 2:
        raise ValueError("expected [2B, T] input_ids and completion_mask of the same shape")
    half = input_ids.shape[0] // 2
    out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    ids, mask = input_ids.tolist(), completion_mask.bool().tolist()
    for i in range(half):
        pos_c = [t for t, m in enumerate(mask[i]) if m]
        pos_r = [t for t, m in enumerate(mask[i + half]) if m]
        w_c, w_r = pair_weights([ids[i][t] for t in pos_c], [ids[i + half][t] for t in pos_r], weight)
        if pos_c:
            out[i, pos_c] = torch.tensor(w_c, device=out.device)
        if pos_r:
            out[i + half, pos_r] = torch.tensor(w_r, device=out.device)
    return out


def weighted_logratio(policy_token_logps: torch.Tensor, ref_token_logps: torch.Tensor,
                      weights: torch.Tensor) -> torch.Tensor:
    """Sum over tokens of weight * (policy - reference) log-probs; weight 0 drops a position."""
    return ((policy_token_logps - ref_token_logps) * weights).sum(dim=-1)


def dpo_sigmoid_loss(chosen_logratio: torch.Tensor, rejected_logratio: torch.Tensor, beta: float,
                     label_smoothing: float = 0.0) -> torch.Tensor:
    """DPO's sigmoid loss per pair (conservative DPO when ``label_smoothing`` > 0)."""
    logits = beta * (chosen_logratio - rejected_logratio)
    return -F.logsigmoid(logits) * (1.0 - label_smoothing) - F.logsigmoid(-logits) * label_smoothing


def focused_dpo_loss(policy_token_logps: torch.Tensor, ref_token_logps: torch.Tensor,
                     weights: torch.Tensor, beta: float, label_smoothing: float = 0.0
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-pair Focused-DPO loss and the chosen/rejected weighted log-ratios, for a [2B, T] batch.

    All three inputs are aligned per token (already shifted for next-token prediction) with rows
    [0, B) chosen and [B, 2B) rejected. With all weights 1 on the completion this is plain DPO.
    """
    ratios = weighted_logratio(policy_token_logps, ref_token_logps, weights)
    chosen, rejected = ratios.chunk(2, dim=0)
    return dpo_sigmoid_loss(chosen, rejected, beta, label_smoothing), chosen, rejected
