"""Tolerances that follow the computation: reordered float64 sums pass, constant fills never do."""

import numpy as np

from cudaperf_env.compare import compare
from cudaperf_env.tasks.schema import Tolerance
from cudaperf_env.tolerance import constant_fill, output_scale, reduction_length, reorder_tolerance

DEFAULT_F64 = Tolerance(rtol=1e-10, atol=1e-12)


def blocked_scan(x: np.ndarray, block: int = 256) -> np.ndarray:
    """An inclusive scan in a GPU's order: Hillis-Steele within blocks, then block offsets."""
    padded = np.zeros(-(-x.size // block) * block)
    padded[: x.size] = x
    s = padded.reshape(-1, block).copy()
    step = 1
    while step < block:
        s[:, step:] = s[:, step:] + s[:, :-step].copy()
        step *= 2
    offsets = np.concatenate([[0.0], np.cumsum(s[:, -1])[:-1]])
    return (s + offsets[:, None]).ravel()[: x.size]


def test_correct_float64_prefix_sum_of_100k_passes_where_the_fixed_default_failed():
    x = np.random.default_rng(1).uniform(-100, 100, 100_000)
    want, got = np.cumsum(x), blocked_scan(x)
    assert not compare(got, want, DEFAULT_F64).ok  # the old default rejects a correct scan
    tol = reorder_tolerance(DEFAULT_F64, "float64", x.size, output_scale(want))
    assert compare(got, want, tol).ok
    assert constant_fill(got, want, tol) == ""


def test_widened_tolerance_still_rejects_a_wrong_scan():
    x = np.random.default_rng(1).uniform(-100, 100, 100_000)
    want = np.cumsum(x)
    tol = reorder_tolerance(DEFAULT_F64, "float64", x.size, output_scale(want))
    exclusive = np.concatenate([[0.0], want[:-1]])  # an exclusive scan where an inclusive one is asked
    assert not compare(exclusive, want, tol).ok
    dropped = want.copy()
    dropped[5000:] -= x[4999]  # one element lost
    assert not compare(dropped, want, tol).ok


def test_float32_and_integer_tolerances_are_left_as_written():
    tol = Tolerance(rtol=1e-4, atol=1e-5)
    assert reorder_tolerance(tol, "float32", 16_000_000, 1e6) == tol
    assert reorder_tolerance(tol, "int32", 16_000_000, 1e6) == tol
    assert reorder_tolerance(DEFAULT_F64, "float64", 1, 1.0) == DEFAULT_F64


def test_zeros_pass_the_loose_atol_but_not_the_constant_fill_check():
    want = np.linspace(1e-3, 2e-3, 1000)
    tol = Tolerance(rtol=1e-3, atol=1e-2)
    assert compare(np.zeros_like(want), want, tol).ok  # atol sized for outputs near 1
    assert "no better than a constant" in constant_fill(np.zeros_like(want), want, tol)
    assert "no better than a constant" in constant_fill(np.full_like(want, want.mean()), want, tol)
    assert constant_fill(want * (1 + 1e-6), want, tol) == ""


def test_constant_expected_output_accepts_a_constant_and_narrow_outputs_are_not_policed():
    tol = Tolerance(rtol=1e-3, atol=1e-5)
    assert constant_fill(np.full(8, 2.0), np.full(8, 2.0), tol) == ""
    narrow = 5e5 + np.random.default_rng(0).normal(0, 10, 100)  # varies less than rtol of its size
    assert constant_fill(np.full_like(narrow, 5e5), narrow, tol) == ""
    assert constant_fill(np.zeros(3, np.int32), np.arange(3, dtype=np.int32), tol) == ""


def test_reduction_length_is_the_largest_input_buffer():
    assert reduction_length({"x": np.zeros(10), "y": np.zeros((4, 50))}) == 200
    assert reduction_length({}) == 1
