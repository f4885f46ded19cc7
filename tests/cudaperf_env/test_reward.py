"""Reward math: terms, totals, and the speedup term's shape."""

import math

import pytest

from cudaperf_env.reward import Outcome, RewardConfig, compute_reward, speedup_term


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
