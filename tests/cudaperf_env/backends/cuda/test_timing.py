"""Timing statistics and plausibility checks (pure; no GPU needed)."""

import pytest

from cudaperf_env.backends import make_backend
from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import (
    SpeedupEstimate,
    Timing,
    TimingOptions,
    bandwidth_flag,
    estimate_speedup,
    over_c_reference,
    wall_clock_inconsistent,
)
from cudaperf_env.errors import BackendUnavailableError


def test_speedup_is_ratio_of_medians_with_a_lower_bound():
    candidate = [1.0, 1.02, 0.98] * 10 + [5.0]  # one outlier (a preempted call) barely moves the median
    baseline = [2.0, 2.04, 1.96] * 10 + [2.0]
    e = estimate_speedup(candidate, baseline)
    assert e.speedup == pytest.approx(2.0) and e.candidate_ms == 1.0 and e.baseline_ms == 2.0
    assert 1.9 < e.speedup_lcb <= e.speedup and e.trials == 31


def test_noise_within_the_deadband_is_reported_as_exactly_one():
    assert estimate_speedup([1.0, 1.01], [1.02, 1.0], deadband=0.03).speedup == 1.0


def test_hidden_work_shows_up_against_the_wall_clock():
    events = [0.1] * 10  # the events claim 0.1 ms per call
    assert not wall_clock_inconsistent(events, wall_ms=10 * 0.1 + 10 * 0.05, overhead_ms=0.05)
    assert wall_clock_inconsistent(events, wall_ms=10 * 2.0, overhead_ms=0.05)  # 2 ms per call really


def test_bandwidth_above_the_copy_ceiling_is_flagged():
    gigabyte = 10**9
    assert not bandwidth_flag(gigabyte, time_ms=0.3, ceiling_gbps=4200)  # 3.3 TB/s: plausible
    assert bandwidth_flag(gigabyte, time_ms=0.1, ceiling_gbps=4200)  # 10 TB/s: impossible


def test_timing_options_are_validated():
    with pytest.raises(ValueError, match="input_sets"):
        TimingOptions(input_sets=0)
    with pytest.raises(ValueError, match="input_sets >= 2"):
        CudaBackend(timing=TimingOptions(input_sets=1))  # submissions are timed on rotating sets
    with pytest.raises(ValueError, match="l2_flush"):
        TimingOptions(l2_flush="invalidate")
    with pytest.raises(ValueError, match="min_trials"):
        TimingOptions(min_trials=10, max_trials=5)


def test_cuda_backend_without_a_gpu_says_what_to_do(monkeypatch):
    monkeypatch.setattr("cudaperf_env.backends.gpu_available", lambda: False)
    with pytest.raises(BackendUnavailableError, match="use backend='cpu'"):
        make_backend("cuda")
    assert make_backend("auto").name == "cpu"


def test_a_task_without_baseline_gets_its_speedup_over_the_c_reference():
    # the candidate timed against itself: 0.5 ms and 2 ms, with a 10% noise margin on the first
    per_config = (SpeedupEstimate(0.5, 0.5, 1.0, 0.9, 40), SpeedupEstimate(2.0, 2.0, 1.0, 1.0, 30))
    timing = Timing(per_config[0], per_config=per_config, speedup_bound=0.1, capped_configs=(0,))
    t = over_c_reference(timing, [10.0, 8.0])  # the C reference on the host: 10 ms and 8 ms
    assert [e.speedup for e in t.per_config] == [20.0, 4.0]
    assert [e.speedup_lcb for e in t.per_config] == pytest.approx([18.0, 4.0])
    assert t.estimate.speedup == pytest.approx((20.0 * 4.0) ** 0.5) and t.estimate.trials == 30
    assert (t.baseline, t.flags, t.c_reference_ms, t.capped_configs) == ("c_reference", (), (10.0, 8.0), ())
    assert t.speedup_bound != t.speedup_bound  # NaN: a bound against itself means nothing


def test_an_untimed_c_reference_leaves_the_speedup_unmeasured_and_flagged():
    est = SpeedupEstimate(1.0, 1.0, 1.0, 1.0, 10)
    t = over_c_reference(Timing(est, per_config=(est, est)), [3.0, float("nan")])
    assert t.estimate.speedup != t.estimate.speedup
    assert t.flags == ("the C reference could not be timed on every configuration",)


def test_speed_is_not_credited_where_timed_outputs_cannot_be_checked():
    from cudaperf_env.backends.cuda.backend import UNCHECKED_FLAG, flag_unchecked_outputs, output_checks
    from cudaperf_env.tasks import load_tasks

    tasks = load_tasks()
    est = SpeedupEstimate(1.0, 2.0, 2.0, 1.9, 10)
    for task_id in ("c2cuda/select_positive_f32", "c2cuda/partition_sign_f32", "c2cuda/distinct_sorted_i32"):
        task = tasks[task_id]
        assert UNCHECKED_FLAG in flag_unchecked_outputs(task, Timing(est)).flags, task_id
        assert len(output_checks(task)) < sum(a.role in ("out", "inout") for a in task.args) or task.checker
    assert flag_unchecked_outputs(tasks["c2cuda/saxpy_f32"], Timing(est)).flags == ()
