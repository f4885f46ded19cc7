"""Is a really better than b on the same items? A paired difference with a task-level interval and a sign test.

Two scorers on the same implementation pairs (the ranker against the structural score), or two
checkpoints on the same held-out tasks (an ablation arm against another, a final model against its
start): each item gets a credit in [0, 1] from a and from b. Items of one task are not independent
(they share implementations, or one task's difficulty), so the interval resamples whole tasks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if wins and losses were equally likely."""
    n, k = wins + losses, min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0


def paired_difference(credit_a: Sequence[float] | np.ndarray, credit_b: Sequence[float] | np.ndarray,
                      groups: Sequence[str], resamples: int = 2000, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean credit of a minus b over the same items, grouped by task.

    ``difference``: a's mean credit minus b's. ``wins`` / ``losses``: items where a's credit is
    above / below b's; ``p_value``: the two-sided exact sign test over them (ties left out).
    ``ci95``: the 2.5th and 97.5th percentiles of the difference over ``resamples`` bootstrap
    draws of whole ``groups``. ``groups``: how many distinct groups there were.
    """
    a, b = np.asarray(credit_a, float), np.asarray(credit_b, float)
    if not a.shape == b.shape == (len(groups),):
        raise ValueError(f"need one credit of a and of b per item: {len(a)} and {len(b)} credits, {len(groups)} groups")
    diff = a - b
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    names, member = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    ci = [math.nan, math.nan]
    if len(diff):
        sums, counts = np.bincount(member, weights=diff), np.bincount(member)
        draws = np.random.default_rng(seed).integers(0, len(names), (resamples, len(names)))
        ci = [float(v) for v in np.percentile(sums[draws].sum(axis=1) / counts[draws].sum(axis=1), [2.5, 97.5])]
    return {"difference": float(diff.mean()) if len(diff) else math.nan, "wins": wins, "losses": losses,
            "p_value": sign_test(wins, losses), "ci95": ci, "groups": len(names)}  # fmt: skip
