"""Metric math against values computed by hand."""

import math

import pytest

from agents.metrics import breakdown, fast_p, geomean_speedup, is_fast, mean_pass_at_k, pass_at_k


def test_pass_at_k_matches_the_combinatorial_formula():
    # n=4, c=1, k=1: 1 - C(3,1)/C(4,1) = 1 - 3/4
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # n=10, c=3, k=4: 1 - C(7,4)/C(10,4) = 1 - 35/210
    assert pass_at_k(10, 3, 4) == pytest.approx(1 - 35 / 210)
    assert pass_at_k(4, 0, 4) == 0.0
    assert pass_at_k(4, 1, 4) == 1.0  # n - c < k: every draw of 4 holds the correct one
    assert pass_at_k(3, 3, 1) == 1.0


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError, match="need 0 <= c <= n and 1 <= k <= n"):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_pass_at_k_averages_tasks_and_needs_enough_samples():
    assert mean_pass_at_k([(4, 1), (4, 4)], 1) == pytest.approx((0.25 + 1.0) / 2)
    assert math.isnan(mean_pass_at_k([(4, 1), (2, 1)], 4))
    assert math.isnan(mean_pass_at_k([], 1))


def test_fast_p_counts_correct_and_strictly_faster_over_all_tasks():
    tasks = [
        [(True, 2.5)],  # fast at 1.0, 1.5, 2.0
        [(True, 1.5)],  # fast at 1.0 only (1.5 is not > 1.5)
        [(False, 9.0)],  # wrong: never fast
        [(True, None)],  # correct, not timed (CPU backend): only fast_0
    ]
    assert fast_p(tasks, 0.0) == pytest.approx(3 / 4)
    assert fast_p(tasks, 1.0) == pytest.approx(2 / 4)
    assert fast_p(tasks, 1.5) == pytest.approx(1 / 4)
    assert fast_p(tasks, 2.0) == pytest.approx(1 / 4)
    assert fast_p(tasks, 3.0) == 0.0


def test_fast_p_with_several_samples_is_the_per_task_fraction_averaged():
    tasks = [[(True, 2.0), (False, None)], [(True, 3.0), (True, 1.2)]]
    assert fast_p(tasks, 1.5) == pytest.approx((1 / 2 + 1 / 2) / 2)


def test_is_fast_handles_nan():
    assert not is_fast(True, math.nan, 1.0)
    assert is_fast(True, math.nan, 0.0)


def test_geomean_speedup_of_correct_timed_answers_only():
    assert geomean_speedup([(True, 2.0), (True, 8.0), (False, 100.0), (True, None)]) == pytest.approx(4.0)
    assert math.isnan(geomean_speedup([(False, 2.0)]))


def test_breakdown_fractions_most_frequent_first():
    assert breakdown(["ok", "compile_error", "compile_error", "wrong_answer"]) == {
        "compile_error": 0.5, "ok": 0.25, "wrong_answer": 0.25}  # fmt: skip
    assert breakdown([]) == {}
