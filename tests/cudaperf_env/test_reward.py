"""Reward math: terms, totals, and the speedup term's shape."""

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudaperf_env.reward import (
    PRESETS,
    Outcome,
    RewardConfig,
    compute_reward,
    discounted_returns,
    speedup_term,
)
from cudaperf_env.status import STATUSES


def episode_return(outcomes, config=None):
    """Sum of per-turn rewards, each turn shaped by the previous turn's score (as the env does)."""
    total, previous = 0.0, math.nan
    for outcome in outcomes:
        reward = compute_reward(replace(outcome, previous_score=previous), config)
        total, previous = total + reward.total, reward.score
    return total


def test_terms_sum_to_total_for_each_status():
    cfg = RewardConfig()
    cases = {
        Outcome("format_error", False, False): -0.5,
        Outcome("compile_error", False, False): 0.0,
        Outcome("wrong_answer", True, False): 0.1,
        Outcome("ok", True, True): 1.1,
        Outcome("ok", True, True, speedup=4.0): 3.1,
    }
    for outcome, total in cases.items():
        reward = compute_reward(outcome, cfg)
        assert reward.total == pytest.approx(total)
        assert reward.total == pytest.approx(sum(reward.terms.values()))
        assert set(reward.terms) == {"format", "compile", "correct", "speedup"}


def test_speedup_needs_correctness():
    assert compute_reward(Outcome("wrong_answer", True, False, speedup=8.0)).terms["speedup"] == 0.0


def test_speedup_term_is_log2_up_and_a_bounded_penalty_down():
    assert speedup_term(math.nan) == 0.0
    assert speedup_term(1.02) == 0.0
    assert speedup_term(2.0) == pytest.approx(1.0)
    assert speedup_term(1000.0, clip=8.0) == pytest.approx(3.0)
    assert speedup_term(0.5, clip=8.0, slowdown_penalty=0.5) == pytest.approx(-0.5 / 3)
    assert speedup_term(1e-6, clip=8.0, slowdown_penalty=0.5) == pytest.approx(-0.5)


def test_config_is_validated():
    with pytest.raises(ValueError, match="format_penalty"):
        RewardConfig(format_penalty=1.0)
    with pytest.raises(ValueError, match="unknown shaping 'sum'"):
        RewardConfig(shaping="sum")
    with pytest.raises(ValueError, match=r"slowdown_penalty \(1.0\) must stay below correct_weight"):
        RewardConfig(slowdown_penalty=1.0)


def test_outcome_checks_the_status():
    with pytest.raises(ValueError, match="unknown status 'okay'"):
        Outcome("okay", True, True)


# ------------------------------------------------------------------ composite
def test_structure_and_ranker_count_only_for_correct_code():
    wrong = compute_reward(Outcome("wrong_answer", True, False, structural_score=1.0, ranker_score=1.0))
    right = compute_reward(Outcome("ok", True, True, structural_score=0.8, ranker_score=0.4))
    assert wrong.terms["structure"] == 0.0 and wrong.terms["ranker"] == 0.0
    assert wrong.total == pytest.approx(0.1)
    assert right.terms["structure"] == pytest.approx(0.4) and right.terms["ranker"] == pytest.approx(0.1)


def test_shaping_terms_appear_only_when_measured():
    plain = compute_reward(Outcome("ok", True, True))
    assert set(plain.terms) == {"format", "compile", "correct", "speedup"}
    full = compute_reward(Outcome("ok", True, True, 2.0, structural_score=1.0, ranker_score=0.5, previous_score=1.0))
    assert set(full.terms) == {"format", "compile", "correct", "speedup", "structure", "ranker", "previous"}
    assert full.total == pytest.approx(sum(full.terms.values()))


def test_ranker_score_is_clipped_to_the_unit_interval():
    assert compute_reward(Outcome("ok", True, True, ranker_score=7.0)).terms["ranker"] == pytest.approx(0.25)
    assert compute_reward(Outcome("ok", True, True, ranker_score=-3.0)).terms["ranker"] == 0.0


def test_a_turn_earns_its_score_minus_the_previous_turns():
    first = compute_reward(Outcome("wrong_answer", True, False, structural_score=0.5))
    assert "previous" not in first.terms and first.score == pytest.approx(0.1)
    second = compute_reward(Outcome("ok", True, True, structural_score=0.5, previous_score=first.score))
    assert second.terms["previous"] == pytest.approx(-0.1)
    assert second.total == pytest.approx(second.score - first.score)
    assert second.score == pytest.approx(1.1 + 0.25)
    again = compute_reward(Outcome("ok", True, True, structural_score=0.5, previous_score=second.score))
    assert again.total == pytest.approx(0.0)  # the level reached is not paid twice
    unshaped = compute_reward(Outcome("ok", True, True, previous_score=5.0), RewardConfig(shaping="none"))
    assert "previous" not in unshaped.terms and unshaped.total == pytest.approx(1.1)


def test_saxpy_episodes_from_the_report_return_the_same_whatever_the_detours():
    """The defect: correct at once 1.507, wrong then correct 2.514, three wrong then correct 3.529."""
    correct = Outcome("ok", True, True, structural_score=0.407)
    wrong = Outcome("wrong_answer", True, False, structural_score=0.5)
    returns = [episode_return([correct]), episode_return([wrong, correct]), episode_return([wrong] * 3 + [correct])]
    assert returns == pytest.approx([returns[0]] * 3)


def test_outcome_validates_the_structural_score():
    with pytest.raises(ValueError, match=r"structural_score must be in \[0, 1\]"):
        Outcome("ok", True, True, structural_score=1.5)


# -------------------------------------------------------------------- presets
def test_presets_are_a_dict_of_pure_functions_and_the_config_checks_the_name():
    assert set(PRESETS) == {"cudaperf", "cuda_agent", "kevin", "speedup_only"}
    with pytest.raises(ValueError, match="unknown reward preset 'kevn'; expected one of cudaperf, cuda_agent"):
        RewardConfig(preset="kevn")
    outcome = Outcome("ok", True, True, speedup=2.0)
    for name in PRESETS:
        reward = compute_reward(outcome, RewardConfig(preset=name))
        assert reward.total == pytest.approx(sum(reward.terms.values()))
        assert reward == compute_reward(outcome, RewardConfig(preset=name))


@pytest.mark.parametrize(
    ("outcome", "milestone"),
    [
        (Outcome("format_error", False, False), -1.0),
        (Outcome("compile_error", False, False), -1.0),
        (Outcome("wrong_answer", True, False, speedup=3.0), -1.0),
        (Outcome("ok", True, True), 1.0),  # CPU backend: no timing
        (Outcome("ok", True, True, speedup=1.04), 1.0),  # within 5%
        (Outcome("ok", True, True, speedup=1.06), 2.0),
        (Outcome("ok", True, True, speedup=1.5, speedup_vs_best=1.01), 2.0),
        (Outcome("ok", True, True, speedup=1.5, speedup_vs_best=1.2), 3.0),
        (Outcome("ok", True, True, speedup=1.01, speedup_vs_best=1.2), 1.0),  # must beat both
    ],
)
def test_cuda_agent_milestones(outcome, milestone):
    reward = compute_reward(outcome, RewardConfig(preset="cuda_agent"))
    assert reward.total == milestone and reward.terms == {"milestone": milestone}


def test_kevin_is_point_three_for_correct_plus_the_raw_speedup():
    kevin = RewardConfig(preset="kevin")
    assert compute_reward(Outcome("ok", True, True, speedup=2.5), kevin).total == pytest.approx(2.8)
    assert compute_reward(Outcome("ok", True, True), kevin).terms == {"correct": 0.3, "speedup": 0.0}
    assert compute_reward(Outcome("wrong_answer", True, False, speedup=9.0), kevin).total == 0.0
    assert compute_reward(Outcome("format_error", False, False), kevin).total == 0.0


def test_speedup_only():
    fast = compute_reward(Outcome("ok", True, True, speedup=4.0), RewardConfig(preset="speedup_only"))
    wrong = compute_reward(Outcome("wrong_answer", True, False, speedup=4.0), RewardConfig(preset="speedup_only"))
    slow = compute_reward(Outcome("ok", True, True, speedup=0.001), RewardConfig(preset="speedup_only"))
    assert fast.terms == {"speedup": pytest.approx(2.0)} and wrong.total == pytest.approx(-0.6)
    assert wrong.total < slow.total


def test_discounted_returns_credit_earlier_turns_with_later_scores():
    assert discounted_returns([1.0, 0.0, 2.0], gamma=0.4) == pytest.approx([1.0 + 0.4 * 0.8, 0.8, 2.0])
    assert discounted_returns([0.3, 2.3]) == pytest.approx([0.3 + 0.4 * 2.3, 2.3])  # gamma 0.4 by default
    assert discounted_returns([1.0, 1.0], gamma=0.0) == [1.0, 1.0]
    assert discounted_returns([]) == []
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]"):
        discounted_returns([1.0], gamma=1.5)
    with pytest.raises(ValueError, match="score of turn 1 is nan"):
        discounted_returns([1.0, math.nan])


# ------------------------------------------------------- invariants (property tests)
FAILURES = [s for s in STATUSES if s != "ok"]
unit = st.floats(0.0, 1.0) | st.just(math.nan)
speedups = st.floats(1e-4, 1e4) | st.just(math.nan)


@st.composite
def outcomes(draw):
    status = draw(st.sampled_from(STATUSES))
    correct = status == "ok"
    compiled = correct or (status not in ("format_error", "rejected", "compile_error") and draw(st.booleans()))
    return Outcome(status, compiled, correct, draw(speedups), draw(unit), draw(unit),
                   speedup_vs_best=draw(speedups))  # fmt: skip


@st.composite
def failures(draw):
    status = draw(st.sampled_from(FAILURES))
    compiled = status not in ("format_error", "rejected", "compile_error")
    return Outcome(status, compiled, False, draw(speedups), draw(unit), draw(unit), speedup_vs_best=draw(speedups))


@settings(max_examples=300, deadline=None)
@given(st.lists(outcomes(), min_size=1, max_size=6), failures(), st.integers(0, 6), st.sampled_from(sorted(PRESETS)))
def test_an_added_failed_turn_never_raises_the_return(episode, failure, at, preset):
    """Reaching the same last outcome with a failed detour never pays more, wherever the detour is."""
    config = RewardConfig(preset=preset)
    at = min(at, len(episode) - 1)
    longer = [*episode[:at], failure, *episode[at:]]
    assert episode_return(longer, config) <= episode_return(episode, config) + 1e-9


@settings(max_examples=300, deadline=None)
@given(st.lists(outcomes(), min_size=0, max_size=5), outcomes(), failures(), st.sampled_from(sorted(PRESETS)))
def test_failing_after_a_correct_turn_never_pays(episode, correct, failure, preset):
    config = RewardConfig(preset=preset)
    solved = [*episode, replace(correct, status="ok", compiled=True, correct=True)]
    assert episode_return([*solved, failure], config) < episode_return(solved, config)


@settings(max_examples=300, deadline=None)
@given(st.lists(outcomes(), min_size=1, max_size=6), st.sampled_from(sorted(PRESETS)))
def test_an_episode_returns_its_last_turns_score(episode, preset):
    config = RewardConfig(preset=preset)
    assert episode_return(episode, config) == pytest.approx(compute_reward(episode[-1], config).score)


@settings(max_examples=500, deadline=None)
@given(failures(), outcomes(), st.floats(-3, 5) | st.just(math.nan), st.sampled_from(sorted(PRESETS)))
def test_a_wrong_submission_never_out_earns_a_correct_one(wrong, other, previous, preset):
    config = RewardConfig(preset=preset)
    correct = replace(other, status="ok", compiled=True, correct=True, previous_score=previous)
    assert compute_reward(replace(wrong, previous_score=previous), config).total < compute_reward(correct, config).total
