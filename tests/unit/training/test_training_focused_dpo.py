"""Focused-DPO's math (trainer/surrogate_trainer/focused_dpo.py) against hand computation.

focused_dpo.py imports only torch, so this runs in the pipeline's environment as well as the
trainer's: `python -m pytest tests/unit/training/test_training_focused_dpo.py` with either interpreter.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "trainer"))
from surrogate_trainer.focused_dpo import (  # noqa: E402
    batch_focus_weights,
    dpo_sigmoid_loss,
    focus_span,
    focus_weights,
    focused_dpo_loss,
    pair_weights,
)


@pytest.mark.parametrize("chosen, rejected, expected", [
    ([5, 6, 7, 9], [5, 8, 9], (1, 1)),          # one shared token each side
    ([1, 2, 3], [1, 2, 3], (3, 0)),             # identical: all prefix, no middle
    ([1, 2, 3], [1, 2, 3, 4, 5], (3, 0)),       # one extends the other
    ([7, 1, 2], [8, 1, 2], (0, 2)),             # differs at the first token
    ([1, 1, 1], [1, 1], (2, 0)),                # the suffix never overlaps the prefix
    ([], [4], (0, 0)),
])
def test_focus_span(chosen, rejected, expected):
    prefix, suffix = focus_span(chosen, rejected)
    assert (prefix, suffix) == expected
    assert prefix + suffix <= min(len(chosen), len(rejected))


def test_focus_weights_mark_only_the_middle():
    assert pair_weights([5, 6, 7, 9], [5, 8, 9], 2.0) == ([1.0, 2.0, 2.0, 1.0], [1.0, 2.0, 1.0])
    assert focus_weights(5, 2, 1, 3.0) == [1.0, 1.0, 3.0, 3.0, 1.0]
    with pytest.raises(ValueError):
        focus_weights(2, 2, 1, 2.0)


# A pair by hand: chosen = 5 6 7 9, rejected = 5 8 9. Common prefix [5], common suffix [9];
# error-prone middle: chosen 6 7, rejected 8. Per-token log-probs (policy, reference):
CHOSEN_POLICY, CHOSEN_REF = [-1.0, -2.0, -0.5, -0.3], [-1.1, -1.5, -0.7, -0.2]
REJECTED_POLICY, REJECTED_REF = [-1.0, -0.4, -0.3], [-1.1, -1.0, -0.25]
BETA, W = 0.1, 2.0
# chosen log-ratio   = 0.1 + 2 * (-0.5 + 0.2) + (-0.1)   = -0.6
# rejected log-ratio = 0.1 + 2 * (0.6) + (-0.05)          =  1.25
# loss = -log sigmoid(0.1 * (-0.6 - 1.25)) = log(1 + e^0.185) = 0.789919...
HAND_CHOSEN, HAND_REJECTED = -0.6, 1.25
HAND_LOSS = math.log1p(math.exp(0.185))


def _batch(weight: float):
    """The pair as a [2, T] token batch, padded on the right with zeros."""
    pad = lambda xs, n: xs + [0.0] * (n - len(xs))  # noqa: E731
    t = 4
    policy = torch.tensor([pad(CHOSEN_POLICY, t), pad(REJECTED_POLICY, t)], dtype=torch.float64)
    ref = torch.tensor([pad(CHOSEN_REF, t), pad(REJECTED_REF, t)], dtype=torch.float64)
    wc, wr = pair_weights([5, 6, 7, 9], [5, 8, 9], weight)
    weights = torch.tensor([pad(wc, t), pad(wr, t)], dtype=torch.float64)
    return policy, ref, weights


def test_loss_matches_hand_computation():
    policy, ref, weights = _batch(W)
    loss, chosen, rejected = focused_dpo_loss(policy, ref, weights, beta=BETA)
    assert chosen.item() == pytest.approx(HAND_CHOSEN, abs=1e-12)
    assert rejected.item() == pytest.approx(HAND_REJECTED, abs=1e-12)
    assert loss.item() == pytest.approx(HAND_LOSS, abs=1e-12)
    assert loss.item() == pytest.approx(0.789919, abs=1e-6)


def test_weight_one_is_plain_sigmoid_dpo():
    policy, ref, weights = _batch(1.0)
    loss, _, _ = focused_dpo_loss(policy, ref, weights, beta=BETA)
    plain = -math.log(1 / (1 + math.exp(-BETA * (
        (sum(CHOSEN_POLICY) - sum(CHOSEN_REF)) - (sum(REJECTED_POLICY) - sum(REJECTED_REF))))))
    assert loss.item() == pytest.approx(plain, abs=1e-12)
    assert loss.item() != pytest.approx(HAND_LOSS, abs=1e-3)  # the weight changes the loss


def test_label_smoothing_is_conservative_dpo():
    c, r = torch.tensor([HAND_CHOSEN]), torch.tensor([HAND_REJECTED])
    got = dpo_sigmoid_loss(c, r, beta=BETA, label_smoothing=0.1).item()
    z = BETA * (HAND_CHOSEN - HAND_REJECTED)
    assert got == pytest.approx(0.9 * math.log1p(math.exp(-z)) + 0.1 * math.log1p(math.exp(z)), abs=1e-6)


def test_gradient_on_middle_tokens_is_w_times_larger():
    policy, ref, weights = _batch(W)
    policy.requires_grad_(True)
    focused_dpo_loss(policy, ref, weights, beta=BETA)[0].sum().backward()
    g = policy.grad
    assert g[0, 1].item() == pytest.approx(W * g[0, 0].item())   # middle vs prefix, chosen
    assert g[0, 2].item() == pytest.approx(W * g[0, 3].item())   # middle vs suffix, chosen
    assert g[1, 1].item() == pytest.approx(W * g[1, 2].item())   # middle vs suffix, rejected
    assert g[0, 0].item() < 0 < g[1, 0].item()                   # raise chosen, lower rejected


def test_batch_weights_follow_trl_preference_layout():
    # TRL's DataCollatorForPreference: rows [chosen..., rejected...], prompt then completion,
    # right padding; completion_mask marks completion tokens.
    pad = 0
    input_ids = torch.tensor([
        [11, 12, 5, 6, 7, 9, pad],   # prompt 11 12 | chosen 5 6 7 9
        [21, 5, 1, 2, pad, pad, pad],  # prompt 21 | chosen 5 1 2
        [11, 12, 5, 8, 9, pad, pad],  # prompt 11 12 | rejected 5 8 9
        [21, 5, 1, 3, 2, pad, pad],   # prompt 21 | rejected 5 1 3 2
    ])
    mask = torch.tensor([
        [0, 0, 1, 1, 1, 1, 0],
        [0, 1, 1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1, 0, 0],
        [0, 1, 1, 1, 1, 0, 0],
    ])
    w = batch_focus_weights(input_ids, mask, 2.0)
    assert w.tolist() == [
        [0, 0, 1, 2, 2, 1, 0],
        [0, 1, 1, 1, 0, 0, 0],   # 5 1 2 vs 5 1 3 2: prefix 5 1, suffix 2, empty middle
        [0, 0, 1, 2, 1, 0, 0],
        [0, 1, 1, 2, 1, 0, 0],
    ]
    with pytest.raises(ValueError):
        batch_focus_weights(input_ids[:3], mask[:3], 2.0)
