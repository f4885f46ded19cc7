"""How well a score orders implementations by measured speed: pairwise agreement and Spearman correlation.

The structural score is the baseline a learned ranker must beat; both are
judged with these pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    """Pairwise ordering agreement over same-task implementation pairs.

    Attributes:
        agreement: Fraction of pairs the score orders like the times (faster = higher score);
            a tie in score counts half. NaN when there is no pair.
        pairs: Pairs compared (pairs with equal times are skipped).
    """

    agreement: float
    pairs: int


def pairwise_agreement(groups: Mapping[str, Mapping[str, tuple[float, float]]], min_ratio: float = 1.0,
                       skip_score_ties: bool = False) -> Agreement:  # fmt: skip
    """Agreement of scores with times inside each group.

    Args:
        groups: ``{task: {implementation: (score, time)}}``; only pairs inside one task are compared.
        min_ratio: Skip pairs whose slower time is less than this multiple of the faster
            (``1.03``: only pairs told apart beyond a 3% noise deadband).
        skip_score_ties: Skip pairs with equal scores instead of giving them half credit
            (how often a score is right where it says anything).
    """
    credit = 0.0
    pairs = 0
    for members in groups.values():
        items = [v for v in members.values() if math.isfinite(v[0]) and math.isfinite(v[1])]
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                (score_a, time_a), (score_b, time_b) = items[i], items[j]
                if time_a == time_b or max(time_a, time_b) < min_ratio * min(time_a, time_b):
                    continue
                if score_a == score_b and skip_score_ties:
                    continue
                pairs += 1
                if score_a == score_b:
                    credit += 0.5
                elif (score_a > score_b) == (time_a < time_b):
                    credit += 1.0
    return Agreement(credit / pairs if pairs else math.nan, pairs)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in order[start : end + 1]:
            out[k] = (start + end) / 2 + 1
        start = end + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (scipy's when installed); NaN for fewer than 2 points or a constant side.

    Raises:
        ValueError: When ``x`` and ``y`` differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    try:
        from scipy.stats import spearmanr
    except ImportError:
        return _pearson(ranks(x), ranks(y))
    return float(spearmanr(x, y).statistic)


def _pearson(a: Sequence[float], b: Sequence[float]) -> float:
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((p - ma) * (q - mb) for p, q in zip(a, b, strict=True))
    va = sum((p - ma) ** 2 for p in a)
    vb = sum((q - mb) ** 2 for q in b)
    return cov / math.sqrt(va * vb)
