"""The GRPO loss as small pure tensor functions: ratios, clipped surrogate, k3 KL, entropy, aggregation.

Shapes: ``B`` sequences (one per graded turn) of ``T`` positions; every
per-token tensor is ``(B, T)`` and ``mask`` is 1 on the model's own reply
tokens, 0 on prompt, feedback and padding.

How per-token losses become one number is :mod:`agents.grpo.aggregation`'s choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from agents.grpo.aggregation import AGGREGATIONS, token_weights

__all__ = ["AGGREGATIONS", "LossTerms", "clipped_surrogate", "completion_logprobs", "grpo_loss", "k3_kl",
           "token_weights"]  # fmt: skip

Tensor = torch.Tensor


def completion_logprobs(logits: Tensor, input_ids: Tensor, temperature: float = 1.0) -> tuple[Tensor, Tensor]:
    """Log-probability and entropy of each next token.

    Args:
        logits: ``(B, T, V)`` model outputs.
        input_ids: ``(B, T)`` the sequences.
        temperature: Logits are divided by it (the distribution replies were sampled from); 0 means 1.

    Returns:
        ``(logprobs, entropy)``, each ``(B, T)``: position ``t`` scores token ``t`` given tokens ``< t``;
        position 0 (no context) is 0.
    """
    scaled = logits[:, :-1].float() / (temperature if temperature > 0 else 1.0)  # (B, T-1, V)
    lse = torch.logsumexp(scaled, dim=-1)  # (B, T-1)
    picked = scaled.gather(-1, input_ids[:, 1:, None]).squeeze(-1) - lse  # (B, T-1)
    with torch.no_grad():
        probs = torch.softmax(scaled, dim=-1)
        entropy = lse - (probs * scaled).sum(-1)  # (B, T-1)
    zero = picked.new_zeros(picked.shape[0], 1)
    return torch.cat([zero, picked], dim=1), torch.cat([zero, entropy], dim=1)


def clipped_surrogate(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, clip_low: float,
                      clip_high: float) -> tuple[Tensor, Tensor]:  # fmt: skip
    """PPO's clipped objective per token (to maximize) and where clipping was active.

    ``ratio = exp(logprobs - old_logprobs)``; the objective is
    ``min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)``.

    Args:
        logprobs: ``(B, T)`` under the policy being trained (with gradient).
        old_logprobs: ``(B, T)`` under the policy that sampled (no gradient).
        advantages: ``(B,)`` one per sequence, or ``(B, T)``.
        clip_low: Lower clip range (ratio >= 1 - clip_low).
        clip_high: Upper clip range (ratio <= 1 + clip_high; DAPO's "clip-higher" raises it).

    Returns:
        ``(objective, clipped)``, each ``(B, T)``; ``clipped`` is 1.0 where the clipped term was chosen.
    """
    adv = advantages[:, None] if advantages.dim() == 1 else advantages
    ratio = torch.exp(logprobs - old_logprobs.detach())
    unclipped = ratio * adv
    clipped_ratio = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    objective = torch.minimum(unclipped, clipped_ratio)
    return objective, (clipped_ratio < unclipped).float()


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Schulman's k3 estimator of KL(policy || reference) per token: ``exp(d) - d - 1``, ``d = ref - logprobs``.

    Non-negative, unbiased for the sampled tokens, 0 where both agree.
    """
    d = ref_logprobs.detach() - logprobs
    return torch.exp(d) - d - 1.0


@dataclass(frozen=True)
class LossTerms:
    """One micro-batch's loss and what it was made of (sums weighted like the loss, so they add up).

    Attributes:
        loss: The scalar to call ``backward`` on.
        policy: The clipped-surrogate part (negated: a loss).
        kl: The weighted k3 KL (before multiplying by beta).
        entropy: The weighted entropy.
        clip_fraction: The weighted share of tokens where clipping was active.
    """

    loss: Tensor
    policy: float
    kl: float
    entropy: float
    clip_fraction: float


def grpo_loss(logprobs: Tensor, old_logprobs: Tensor, ref_logprobs: Tensor | None, advantages: Tensor,
              mask: Tensor, weights: Tensor, entropy: Tensor, *, clip_low: float = 0.2, clip_high: float = 0.2,
              kl_beta: float = 0.0) -> LossTerms:  # fmt: skip
    """``sum(w * mask * (-surrogate + beta * k3))``: the GRPO loss of a micro-batch.

    Args:
        logprobs, old_logprobs, ref_logprobs, entropy: ``(B, T)`` (``ref_logprobs`` None: no KL term).
        advantages: ``(B,)``.
        mask: ``(B, T)``, 1 on the model's reply tokens.
        weights: ``(B,)`` each sequence's token weight (:func:`token_weights`, over the whole batch).
        clip_low, clip_high: Clip ranges of the ratio.
        kl_beta: Coefficient of the KL term (needs ``ref_logprobs``).
    """
    w = mask * weights[:, None]  # (B, T)
    objective, clipped = clipped_surrogate(logprobs, old_logprobs, advantages, clip_low, clip_high)
    policy = -(w * objective).sum()
    kl = (w * k3_kl(logprobs, ref_logprobs)).sum() if ref_logprobs is not None else logprobs.new_zeros(())
    loss = policy + kl_beta * kl if ref_logprobs is not None and kl_beta > 0 else policy
    return LossTerms(loss, _item(policy), _item(kl), _item((w * entropy).sum()), _item((w * clipped).sum()))


def _item(x: Any) -> float:
    return float(x.detach())
