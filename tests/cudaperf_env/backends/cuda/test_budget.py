"""The slow-kernel budget's pure rules: when timing stops, what it reports, how long a correctness call may run."""

import dataclasses
import math

import numpy as np
import pytest

from cudaperf_env.backends.cuda import gpu_worker
from cudaperf_env.backends.cuda.budget import (
    CallLimits,
    decided_slow,
    labelled_ms,
    speedup_upper_bound,
    too_slow_message,
    wall_check_calls,
)
from cudaperf_env.backends.cuda.timing import Timing, TimingOptions, estimate_speedup
from cudaperf_env.reward import speedup_term
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.schema import TimingLabel

CLIP = 8.0
BOUND = 1 / CLIP
DOT = load_tasks(kind="c2cuda")["c2cuda/dot_f64"]


def test_the_rule_decides_exactly_when_the_upper_bound_falls_below_the_clip_floor():
    # margin 2 x slowest baseline 1 ms / fastest candidate 16 ms = 0.125: at the bound, not below it
    assert speedup_upper_bound([16.0, 20.0], [0.5, 1.0], margin=2.0) == BOUND
    assert not decided_slow([16.0, 20.0], [0.5, 1.0], BOUND, margin=2.0)
    assert decided_slow([16.000001, 20.0], [0.5, 1.0], BOUND, margin=2.0)
    # one faster candidate call or one slower baseline call undoes the decision
    assert not decided_slow([16.000001, 15.9], [0.5, 1.0], BOUND, margin=2.0)
    assert not decided_slow([16.000001], [0.5, 1.0, 1.01], BOUND, margin=2.0)


def test_the_rule_needs_samples_of_both_and_can_be_switched_off():
    assert not decided_slow([], [1.0], BOUND, 2.0)
    assert not decided_slow([1000.0], [], BOUND, 2.0)
    assert not decided_slow([0.0], [1.0], BOUND, 2.0)  # a call that took no time bounds nothing
    assert not decided_slow([1000.0], [1.0], 0.0, 2.0)
    assert decided_slow([1000.0], [1.0], BOUND, 2.0)


@pytest.mark.parametrize("candidate", [15.9, 16.0, 16.000001, 17.0, 1e4])
@pytest.mark.parametrize("bound", [0.0, BOUND, 0.5])
def test_the_worker_applies_the_same_rule_as_the_parent(candidate, bound):
    samples = ([candidate, candidate * 1.5], [0.7, 1.0])
    assert gpu_worker._decided_slow(*samples, bound, 2.0) == decided_slow(*samples, bound, 2.0)


def test_a_capped_kernel_earns_what_its_full_measurement_would_after_clipping():
    rng = np.random.default_rng(0)
    full_c = list(2250.0 * (1 + 0.01 * rng.standard_normal(40)))  # 7,500x slower than the baseline
    full_b = list(0.3 * (1 + 0.01 * rng.standard_normal(40)))
    first_c, first_b = full_c[:1], full_b[:1]  # what the worker has after its first checked round
    assert decided_slow(first_c, first_b, BOUND, 2.0)
    capped, full = estimate_speedup(first_c, first_b), estimate_speedup(full_c, full_b)
    bound = speedup_upper_bound(first_c, first_b, 2.0)
    assert capped.speedup_lcb <= capped.speedup <= bound < BOUND
    assert full.speedup <= bound  # the bound holds for the full measurement too
    assert speedup_term(capped.speedup, clip=CLIP) == speedup_term(full.speedup, clip=CLIP)
    assert speedup_term(capped.speedup, clip=CLIP) == speedup_term(BOUND, clip=CLIP) != 0.0


def test_timing_reports_a_cap_as_a_bound_not_a_flag():
    e = estimate_speedup([2250.0], [0.3])
    capped = Timing(e, speedup_bound=0.0003, capped_configs=(0,))
    assert capped.capped and not capped.flags and capped.estimate.speedup <= capped.speedup_bound
    assert not Timing(e).capped and math.isnan(Timing(e).speedup_bound)


def test_the_budget_options_are_validated():
    for bad in ({"evaluation_budget_s": -1.0}, {"evaluation_budget_s": math.nan}, {"budget_s": -0.5}):
        with pytest.raises(ValueError, match="must be >= 0 seconds"):
            TimingOptions(**bad)
    for bad_bound in (1.0, -0.1, math.nan):
        with pytest.raises(ValueError, match="slow_bound must be in"):
            TimingOptions(slow_bound=bad_bound)
    for bad_margin in (0.5, math.inf):
        with pytest.raises(ValueError, match="slow_margin must be"):
            TimingOptions(slow_margin=bad_margin)
    opts = TimingOptions()
    assert (opts.evaluation_budget_s, opts.slow_bound, opts.slow_margin) == (2.0, BOUND, 2.0)
    assert TimingOptions(evaluation_budget_s=math.inf, slow_bound=0.0).slow_bound == 0.0  # off


def test_the_wall_check_shrinks_to_the_calls_that_fit_the_budget():
    assert wall_check_calls(10, candidate_ms=0.2, budget_left_s=1.5) == 10
    assert wall_check_calls(10, candidate_ms=400.0, budget_left_s=1.5) == 3
    assert wall_check_calls(10, candidate_ms=400.0, budget_left_s=-2.0) == 1
    assert wall_check_calls(10, candidate_ms=400.0, budget_left_s=math.inf) == 10


def test_correctness_limits_scale_with_the_baseline_and_never_loosen_the_timeout():
    limits = CallLimits(factor=1000, floor_s=2.0)
    assert limits.limit_s(0.012, ceiling_s=30.0) == pytest.approx(2.012)
    assert limits.limit_s(50.0, ceiling_s=30.0) == 30.0
    assert limits.limit_s(math.nan, ceiling_s=30.0) == 30.0
    with pytest.raises(ValueError, match="factor"):
        CallLimits(factor=0.5)
    with pytest.raises(ValueError, match="floor_s"):
        CallLimits(floor_s=0.0)


def test_the_baseline_time_comes_from_its_gpu_label():
    label = TimingLabel("NVIDIA H200", "580", "2026-11-30", "shown", {"N": 1000003}, 0.0123, 0.012, 0.013, 20)
    naive = dataclasses.replace(DOT.implementation(DOT.baseline), labels=(label,))
    task = dataclasses.replace(DOT, implementations=(naive, *DOT.implementations[1:]))
    assert labelled_ms(task, {"N": 1000003}) == 0.0123
    assert math.isnan(labelled_ms(task, {"N": 1000})) and math.isnan(labelled_ms(DOT, {"N": 1000003}))


def test_the_timeout_message_names_the_configuration_and_both_times():
    message = too_slow_message({"N": 1000003}, hidden=False, passed=2, limit_s=2.012, baseline_ms=0.0123)
    assert message == (
        "correct on the 2 configurations before it; too slow on N=1000003: over 2012 ms vs the baseline's 0.0123 ms"
        " (stopped)"
    )
    hidden = too_slow_message({"N": 4097}, hidden=True, passed=3, limit_s=2.0, baseline_ms=0.01)
    assert "a hidden configuration" in hidden and "4097" not in hidden
    assert too_slow_message({"N": 1000}, hidden=False, passed=0, limit_s=2.0, baseline_ms=math.nan) == (
        "too slow on N=1000: over 2000 ms (stopped)"
    )
