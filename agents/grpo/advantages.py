"""Advantages of a GRPO group: per-turn credit from discounted returns, normalized within the group.

A group is the ``G`` trajectories one task got in a step. Each trajectory's
turns are credited with their discounted return (``R_t = s_t + gamma * R_{t+1}``
over the turns' scores, Kevin's multi-turn credit, ``gamma = 0.4`` by default),
so a reply that set up a later correct kernel shares in it. Returns are then
compared with the other trajectories' returns *at the same turn* (scope ``turn``,
the default) or with every (trajectory, turn) sample of the group (scope
``group``). The turn scope is the default because an earlier turn's return sums
more scores than a later one's: pooled with later turns, identical replies
would get different advantages by position alone (all failing at -0.5 over two
turns with gamma 0.4: returns -0.7 and -0.5, so the first replies are pushed
down and the second up for the same failure). The normalization:

- ``grpo``: ``(R - mean) / (std + eps)`` over the group's samples (DeepSeekMath's GRPO;
  ``std`` is the sample standard deviation, Bessel-corrected, as TRL computes it);
- ``drgrpo``: ``R - mean`` (Dr. GRPO: no division by the standard deviation, which
  up-weights groups whose rewards barely differ).

All functions are pure: lists of floats in, lists of floats out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from cudaperf_env.reward import discounted_returns

EPS = 1e-6


def centered(values: Sequence[float]) -> list[float]:
    """``v - mean(values)``; empty in, empty out."""
    if not values:
        return []
    mean = sum(values) / len(values)
    return [v - mean for v in values]


def sample_std(values: Sequence[float]) -> float:
    """The Bessel-corrected standard deviation; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def grpo_advantages(values: Sequence[float], eps: float = EPS) -> list[float]:
    """GRPO: centred and divided by the group's standard deviation (all 0 when every value is equal)."""
    scale = sample_std(values) + eps
    return [c / scale for c in centered(values)]


def drgrpo_advantages(values: Sequence[float], eps: float = EPS) -> list[float]:
    """Dr. GRPO: centred only (``eps`` unused, kept for one signature)."""
    return centered(values)


ADVANTAGES: Mapping[str, Callable[[Sequence[float], float], list[float]]] = MappingProxyType({
    "grpo": grpo_advantages,
    "drgrpo": drgrpo_advantages,
})
"""Group normalizations by name (``GRPOConfig.advantage``)."""


def turn_returns(scores_by_trajectory: Sequence[Sequence[float]], gamma: float) -> list[list[float]]:
    """Each trajectory's per-turn discounted returns (:func:`cudaperf_env.reward.discounted_returns`)."""
    return [discounted_returns(list(scores), gamma) for scores in scores_by_trajectory]


SCOPES = ("turn", "group")
"""What a return is compared with: the group's returns at the same turn, or all of the group's returns."""


def group_advantages(
    scores_by_trajectory: Sequence[Sequence[float]],
    gamma: float,
    kind: str = "grpo",
    eps: float = EPS,
    scope: str = "turn",
) -> list[list[float]]:
    """Advantages of every turn of every trajectory of one group, shaped like the input.

    Args:
        scores_by_trajectory: Per trajectory, the scores of its turns (first turn first);
            trajectories may have different lengths (one that ended early has fewer turns).
        gamma: Discount of later turns' scores, in [0, 1].
        kind: A key of :data:`ADVANTAGES`.
        eps: Added to the standard deviation before dividing (``grpo``).
        scope: ``turn`` (normalize among the returns of the same turn) or ``group`` (all returns pooled).

    Raises:
        ValueError: An unknown ``kind`` or ``scope`` (the message lists the known ones).
    """
    if kind not in ADVANTAGES:
        raise ValueError(f"unknown advantage {kind!r}; expected one of {', '.join(ADVANTAGES)}")
    if scope not in SCOPES:
        raise ValueError(f"unknown advantage scope {scope!r}; expected one of {', '.join(SCOPES)}")
    returns = turn_returns(scores_by_trajectory, gamma)
    cells = [(i, t) for i, traj in enumerate(returns) for t in range(len(traj))]
    pools: dict[object, list[tuple[int, int]]] = {}
    for i, t in cells:
        pools.setdefault(t if scope == "turn" else 0, []).append((i, t))
    out = [[0.0] * len(traj) for traj in returns]
    for members in pools.values():
        for (i, t), a in zip(members, ADVANTAGES[kind]([returns[i][t] for i, t in members], eps), strict=True):
            out[i][t] = a
    return out
