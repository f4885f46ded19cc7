"""Reward math: terms, totals, and the speedup term's shape."""

import math

import pytest

from cudaperf_env.reward import PRESETS, Outcome, RewardConfig, compute_reward, discounted_returns, speedup_term


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


def test_speedup_term_is_clipped_log_with_deadband():
    assert speedup_term(math.nan) == 0.0
    assert speedup_term(1.02) == 0.0
    assert speedup_term(2.0) == pytest.approx(1.0)
    assert speedup_term(0.5) == pytest.approx(-1.0)
    assert speedup_term(1000.0, clip=8.0) == pytest.approx(3.0)
    assert speedup_term(1e-6, clip=8.0) == pytest.approx(-3.0)


def test_config_is_validated():
    with pytest.raises(ValueError, match="format_penalty"):
        RewardConfig(format_penalty=1.0)


# ------------------------------------------------------------------ composite
def test_structure_counts_only_for_compiled_code():
    compiled = compute_reward(Outcome("wrong_answer", True, False, structural_score=0.8))
    broken = compute_reward(Outcome("compile_error", False, False, structural_score=0.8))
    assert compiled.terms["structure"] == pytest.approx(0.4)
    assert broken.terms["structure"] == 0.0
    assert compiled.total == pytest.approx(0.1 + 0.4)


def test_shaping_terms_appear_only_when_measured():
    plain = compute_reward(Outcome("ok", True, True))
    assert set(plain.terms) == {"format", "compile", "correct", "speedup"}
    full = compute_reward(Outcome("ok", True, True, 2.0, structural_score=1.0, ranker_score=0.5, previous_score=1.0))
    assert set(full.terms) == {"format", "compile", "correct", "speedup", "structure", "ranker", "improvement"}
    assert full.total == pytest.approx(sum(full.terms.values()))


def test_a_wrong_kernel_never_outscores_a_correct_one_through_shaping():
    best_wrong = compute_reward(Outcome("wrong_answer", True, False, structural_score=1.0, ranker_score=1.0))
    worst_correct = compute_reward(Outcome("ok", True, True, structural_score=0.0, ranker_score=0.0))
    assert best_wrong.total < worst_correct.total
    with pytest.raises(ValueError, match="must stay below correct_weight"):
        RewardConfig(structure_weight=0.8, ranker_weight=0.3)


def test_ranker_score_is_clipped_to_the_unit_interval():
    assert compute_reward(Outcome("ok", True, True, ranker_score=7.0)).terms["ranker"] == pytest.approx(0.25)
    assert compute_reward(Outcome("ok", True, True, ranker_score=-3.0)).terms["ranker"] == 0.0


def test_improvement_is_the_clipped_change_of_score_since_the_previous_turn():
    first = compute_reward(Outcome("wrong_answer", True, False, structural_score=0.5))
    assert "improvement" not in first.terms and first.score == pytest.approx(0.35)
    second = compute_reward(Outcome("ok", True, True, structural_score=0.5, previous_score=first.score))
    assert second.terms["improvement"] == pytest.approx(0.5 * (second.score - first.score))
    assert second.score == pytest.approx(second.total - second.terms["improvement"])
    worse = compute_reward(Outcome("format_error", False, False, previous_score=10.0))
    assert worse.terms["improvement"] == pytest.approx(-0.5 * 2.0)  # clipped at -improvement_clip


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
    assert fast.terms == {"speedup": pytest.approx(2.0)} and wrong.total == 0.0


def test_discounted_returns_credit_earlier_turns_with_later_scores():
    assert discounted_returns([1.0, 0.0, 2.0], gamma=0.4) == pytest.approx([1.0 + 0.4 * 0.8, 0.8, 2.0])
    assert discounted_returns([0.3, 2.3]) == pytest.approx([0.3 + 0.4 * 2.3, 2.3])  # gamma 0.4 by default
    assert discounted_returns([1.0, 1.0], gamma=0.0) == [1.0, 1.0]
    assert discounted_returns([]) == []
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]"):
        discounted_returns([1.0], gamma=1.5)
    with pytest.raises(ValueError, match="score of turn 1 is nan"):
        discounted_returns([1.0, math.nan])
