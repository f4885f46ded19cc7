"""Group advantages and per-turn credit, against values computed by hand."""

import math

import pytest

from agents.grpo.advantages import ADVANTAGES, drgrpo_advantages, group_advantages, grpo_advantages, sample_std


def test_grpo_divides_by_the_bessel_corrected_std():
    # mean 3, centred (-2, -1, 0, 3), sum of squares 14, std sqrt(14 / 3) = 2.1602469
    assert sample_std([1, 2, 3, 6]) == pytest.approx(math.sqrt(14 / 3))
    assert grpo_advantages([1, 2, 3, 6], 0.0) == pytest.approx([-0.9258201, -0.4629100, 0.0, 1.3887301])


def test_drgrpo_only_centres():
    assert drgrpo_advantages([1, 2, 3, 6]) == [-2.0, -1.0, 0.0, 3.0]


def test_equal_rewards_give_zero_advantages_not_nan():
    assert grpo_advantages([0.5, 0.5, 0.5]) == [0.0, 0.0, 0.0]
    assert grpo_advantages([2.0]) == [0.0]


def test_turns_are_credited_with_discounted_returns_then_normalized_over_the_group():
    # trajectory 0: scores (1, 3) -> returns (1 + 0.5 * 3, 3) = (2.5, 3); trajectory 1: (0,) -> (0,)
    # flat (2.5, 3, 0): mean 11/6, centred (2/3, 7/6, -11/6)
    adv = group_advantages([[1.0, 3.0], [0.0]], gamma=0.5, kind="drgrpo", scope="group")
    assert [len(a) for a in adv] == [2, 1]
    assert adv[0] == pytest.approx([2 / 3, 7 / 6]) and adv[1] == pytest.approx([-11 / 6])
    # std of (2/3, 7/6, -11/6): sqrt((4/9 + 49/36 + 121/36) / 2) = sqrt(31/12)
    scaled = group_advantages([[1.0, 3.0], [0.0]], gamma=0.5, kind="grpo", eps=0.0, scope="group")
    assert scaled[0][0] == pytest.approx((2 / 3) / math.sqrt(31 / 12))


def test_gamma_zero_credits_each_turn_with_its_own_score_only():
    assert group_advantages([[1.0, 3.0], [2.0, 2.0]], gamma=0.0, kind="drgrpo", scope="group") == [[-1.0, 1.0],
                                                                                                 [0.0, 0.0]]


def test_turn_scope_compares_returns_of_the_same_turn():
    # the same failure everywhere: no advantage (pooled, position alone would separate -0.7 from -0.5)
    assert group_advantages([[-0.5, -0.5], [-0.5, -0.5]], gamma=0.4, kind="drgrpo") == [[0.0, 0.0], [0.0, 0.0]]
    assert group_advantages([[-0.5, -0.5], [-0.5, -0.5]], gamma=0.4, kind="drgrpo", scope="group")[0] == \
        pytest.approx([-0.1, 0.1])
    # trajectory 0 fails then succeeds (scores -0.5, 1.0), trajectory 1 succeeds at once and stops (1.0)
    # turn 1 returns: -0.5 + 0.4 * 1.0 = -0.1 and 1.0 -> centred -0.55, +0.55; turn 2 has one return -> 0
    assert group_advantages([[-0.5, 1.0], [1.0]], gamma=0.4, kind="drgrpo") == [[pytest.approx(-0.55), 0.0],
                                                                                [pytest.approx(0.55)]]
    with pytest.raises(ValueError, match="expected one of turn, group"):
        group_advantages([[1.0]], 0.4, scope="trajectory")


def test_unknown_variant_lists_the_known_ones():
    assert set(ADVANTAGES) == {"grpo", "drgrpo"}
    with pytest.raises(ValueError, match="expected one of grpo, drgrpo"):
        group_advantages([[1.0]], 0.4, kind="ppo")
