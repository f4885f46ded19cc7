"""The paired comparison of two scorers or two checkpoints: sign test and task-level interval by hand."""

import pytest

from cudaperf_env.comparison import paired_difference, sign_test


def test_sign_test_by_hand():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(2 / 32)  # all five one way: 2 * (1/2)^5
    assert sign_test(1, 4) == pytest.approx(2 * (1 + 5) / 32)
    assert sign_test(2, 1) == 1.0  # capped: the two tails overlap


def test_a_constant_difference_has_a_point_interval_and_ties_are_not_counted():
    found = paired_difference([1, 1, 0.5, 0], [0, 0, 0.5, 0], ["t1", "t1", "t2", "t3"], resamples=200)
    assert found == {"difference": 0.5, "wins": 2, "losses": 0, "p_value": 0.5, "ci95": found["ci95"], "groups": 3}
    assert 0.0 <= found["ci95"][0] <= 0.5 <= found["ci95"][1] <= 1.0  # t1 drawn 0..3 times of 3
    same = paired_difference([1, 0], [0, 1], ["t1", "t1"])
    assert same["ci95"] == [0.0, 0.0] and same["p_value"] == 1.0  # one task: every draw is that task


def test_credits_and_groups_must_line_up():
    with pytest.raises(ValueError, match="one credit"):
        paired_difference([1, 0], [0], ["t1", "t1"])
