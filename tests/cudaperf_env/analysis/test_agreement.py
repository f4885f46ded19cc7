"""Pairwise agreement and Spearman correlation of scores with measured times."""

from __future__ import annotations

import math

import pytest

from cudaperf_env.analysis import agreement
from cudaperf_env.analysis.agreement import pairwise_agreement, ranks, spearman


def test_pairs_are_compared_within_a_task_only():
    groups = {
        "a": {"naive": (0.2, 10.0), "tiled": (0.9, 2.0), "blocked": (0.8, 1.0)},  # 2 of 3 pairs agree
        "b": {"naive": (0.5, 5.0), "vec": (0.5, 4.0)},  # tied scores: half credit
        "c": {"only": (0.1, 1.0)},
    }
    result = pairwise_agreement(groups)
    assert result.pairs == 4 and result.agreement == pytest.approx((2 + 0.5) / 4)


def test_equal_times_and_missing_values_are_skipped():
    groups = {"a": {"x": (0.1, 1.0), "y": (0.9, 1.0), "z": (math.nan, 3.0)}}
    result = pairwise_agreement(groups)
    assert result.pairs == 0 and math.isnan(result.agreement)


def test_pairs_within_the_noise_deadband_can_be_skipped():
    groups = {"a": {"x": (0.9, 1.0), "y": (0.1, 1.02), "z": (0.5, 2.0)}}  # x-y 2% apart
    assert pairwise_agreement(groups).pairs == 3
    result = pairwise_agreement(groups, min_ratio=1.03)
    assert result.pairs == 2 and result.agreement == pytest.approx(0.5)  # x-z agrees, y-z does not


def test_score_ties_can_be_skipped_instead_of_half_credited():
    groups = {"a": {"x": (0.5, 1.0), "y": (0.5, 2.0), "z": (0.9, 0.5)}}
    assert pairwise_agreement(groups).agreement == pytest.approx((0.5 + 1 + 1) / 3)
    result = pairwise_agreement(groups, skip_score_ties=True)
    assert result.pairs == 2 and result.agreement == 1.0


def test_ranks_average_ties():
    assert ranks([10.0, 30.0, 20.0, 20.0]) == [1.0, 4.0, 2.5, 2.5]


def test_spearman_with_and_without_scipy(monkeypatch):
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 6.0, 7.0, 8.0, 7.0]
    ours = agreement._pearson(ranks(x), ranks(y))
    assert spearman(x, [10 * v for v in x]) == pytest.approx(1.0)
    assert spearman(x, [-v for v in x]) == pytest.approx(-1.0)
    assert spearman(x, y) == pytest.approx(ours)
    monkeypatch.setitem(__import__("sys").modules, "scipy.stats", None)  # as if scipy were not installed
    assert spearman(x, y) == pytest.approx(ours)
    assert math.isnan(spearman([1.0], [2.0])) and math.isnan(spearman([1.0, 1.0], [1.0, 2.0]))
    with pytest.raises(ValueError, match="same length"):
        spearman([1.0], [1.0, 2.0])
