"""The paired comparison of two scorers on the same pairs, against hand-computed values."""

import math

import numpy as np
import pytest

from cudaperf_env.ranker.metrics import paired_difference


def test_sign_test_counts_pairs_where_the_credits_differ():
    a = np.array([0.9, 0.9, 0.1, 0.5, 0.8])  # credits 1, 1, 0, 0.5, 1
    b = np.array([0.1, 0.5, 0.1, 0.9, 0.7])  # credits 0, 0.5, 0, 1, 1
    result = paired_difference(a, b, ["t1", "t1", "t2", "t2", "t3"])
    assert (result["wins"], result["losses"]) == (2, 1)
    assert result["difference"] == pytest.approx((1 + 0.5 + 0 - 0.5 + 0) / 5)
    assert result["p_value"] == pytest.approx(1.0)  # 2 x P(X <= 1), X ~ Bin(3, 1/2) = 2 x 4/8, capped at 1


def test_ten_wins_and_no_loss_is_significant_and_the_interval_sits_above_zero():
    a, b = np.full(10, 0.9), np.full(10, 0.2)
    result = paired_difference(a, b, [f"t{i}" for i in range(10)])
    assert result["p_value"] == pytest.approx(2 / 2**10)
    assert result["ci95"] == pytest.approx([1.0, 1.0])


def test_interval_resamples_whole_tasks():
    # one task of 8 pairs won, seven tasks of one pair lost: by pairs a leads, by tasks it mostly does not
    a = np.array([0.9] * 8 + [0.1] * 7)
    b = np.array([0.1] * 8 + [0.9] * 7)
    result = paired_difference(a, b, ["big"] * 8 + [f"t{i}" for i in range(7)], seed=1)
    lo, hi = result["ci95"]
    assert result["difference"] == pytest.approx(1 / 15)
    assert lo < -0.5 and hi > 0.5 and lo <= result["difference"] <= hi  # a pair-level bootstrap: +-0.5


def test_no_pairs():
    result = paired_difference(np.array([]), np.array([]), [])
    assert (result["wins"], result["losses"], result["p_value"]) == (0, 0, 1.0) and math.isnan(result["difference"])
