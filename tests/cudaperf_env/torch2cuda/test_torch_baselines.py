"""PyTorch baselines (eager, torch.compile): the trusted process's timing loop on CPU torch, the compile time
limit and fallback, the speedup arithmetic, and the cuda_agent milestones that read them.

The same code times on the GPU (``test_torch_baselines_gpu.py``, marked ``gpu``); here the torch
process runs on ``"cpu"`` (host clock, no L2 flush) so the protocol is exercised in CI.
"""

import math
from dataclasses import replace

import pytest

from cudaperf_env.backends.cuda.timing import SpeedupEstimate, Timing, TimingOptions
from cudaperf_env.backends.cuda.torch_baselines import TorchBaselines, TorchTimes, over_pytorch
from cudaperf_env.reward import Outcome, RewardConfig, compute_reward
from cudaperf_env.tasks import load_tasks

QUICK = TimingOptions(warmup=1, min_trials=3, max_trials=6, budget_s=0.5, flush_bytes=1 << 10)
TASK = load_tasks(kind="torch2cuda")["torch2cuda/softmax"]


def test_eager_is_timed_in_the_trusted_process_and_kept_per_task_and_config(tmp_path):
    baselines = TorchBaselines("cpu", compile=False)
    try:
        first = baselines.times(TASK, 0, TASK.configs[0], QUICK, tmp_path)
        assert first.eager_ms > 0 and math.isfinite(first.eager_ms) and not first.error
        assert math.isnan(first.compile_ms) and first.compile_error == ""  # compile not asked for
        baselines.close()  # a kept result needs no process
        assert baselines.times(TASK, 0, TASK.configs[0], QUICK, tmp_path) is first
        assert not list(tmp_path.glob("*.npz"))  # the input sets were removed once sent
    finally:
        baselines.close()


def test_a_compile_past_its_limit_is_killed_and_the_task_falls_back_to_eager(tmp_path):
    baselines = TorchBaselines("cpu", compile=True, compile_timeout_s=0.5)  # CPU inductor takes far longer
    try:
        times = baselines.times(TASK, 0, TASK.configs[1], QUICK, tmp_path)
    finally:
        baselines.close()
    assert times.compile_error == "torch.compile took longer than compile_timeout_s (0.5 s)"
    assert math.isnan(times.compile_ms) and times.eager_ms > 0  # eager still timed, in a fresh process


def test_a_reference_that_fails_leaves_no_eager_time(tmp_path):
    broken = replace(TASK, id="torch2cuda/broken", reference_source=TASK.reference_source.replace("dim=-1", "dim=7"))
    baselines = TorchBaselines("cpu", compile=False)
    try:
        times = baselines.times(broken, 0, broken.configs[0], QUICK, tmp_path)
    finally:
        baselines.close()
    assert math.isnan(times.eager_ms) and "IndexError" in times.error


def _timing(candidate_ms, baseline_ms, speedup_lcb_ratio=0.9, bound=math.nan):
    per = tuple(SpeedupEstimate(c, b, b / c, b / c * speedup_lcb_ratio, 20)
                for c, b in zip(candidate_ms, baseline_ms, strict=True))
    gm = math.prod(e.speedup for e in per) ** (1 / len(per))
    return Timing(SpeedupEstimate(1.0, 1.0, gm, gm * speedup_lcb_ratio, 20), per_config=per, speedup_bound=bound)


def test_speedups_are_over_eager_and_compile_with_the_pairing_noise_margin():
    timing = over_pytorch(_timing([2.0, 1.0], [4.0, 4.0]), [TorchTimes(1.0, 0.5), TorchTimes(2.0, 1.0)])
    assert timing.baseline == "pytorch_eager"
    assert [e.speedup for e in timing.per_config] == [0.5, 2.0]
    assert [e.speedup_lcb for e in timing.per_config] == pytest.approx([0.45, 1.8])
    assert timing.estimate.speedup == pytest.approx(1.0)  # geometric mean 0.5 and 2 inside the deadband
    assert timing.speedup_vs_compile == pytest.approx((0.25 * 1.0) ** 0.5)
    assert timing.speedup_vs_impl == pytest.approx(_timing([2.0, 1.0], [4.0, 4.0]).estimate.speedup)
    assert timing.eager_ms == (1.0, 2.0) and timing.compile_ms == (0.5, 1.0)


def test_without_a_compiled_time_everywhere_there_is_no_speedup_vs_compile():
    timing = over_pytorch(_timing([1.0], [1.0]), [TorchTimes(3.0, math.nan, "torch.compile failed: boom")])
    assert timing.estimate.speedup == pytest.approx(3.0) and math.isnan(timing.speedup_vs_compile)
    assert timing.compile_error == "torch.compile failed: boom"


def test_without_eager_times_the_speedup_stays_over_the_implementation():
    before = _timing([1.0, 1.0], [2.0, 2.0])
    timing = over_pytorch(before, [TorchTimes(3.0), TorchTimes(math.nan, error="died")])
    assert timing.baseline == "implementation" and timing.estimate == before.estimate
    assert timing.eager_error == "died"


def test_a_slow_stop_bound_moves_to_eager():
    timing = over_pytorch(_timing([8.0], [1.0], bound=0.1), [TorchTimes(2.0)])
    assert timing.speedup_bound == pytest.approx(0.2) and timing.estimate.speedup == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("speedup", "vs_compile", "vs_best", "milestone"),
    [(1.0, 2.0, 2.0, 1.0), (1.2, 0.9, 2.0, 2.0), (1.2, 1.2, math.nan, 3.0), (1.2, math.nan, 1.2, 3.0),
     (1.2, math.nan, math.nan, 2.0)],
)
def test_cuda_agent_milestone_three_needs_beating_torch_compile(speedup, vs_compile, vs_best, milestone):
    outcome = Outcome("ok", True, True, speedup, speedup_vs_best=vs_best, speedup_vs_compile=vs_compile)
    assert compute_reward(outcome, RewardConfig(preset="cuda_agent")).total == milestone


def test_feedback_says_the_speedup_is_over_eager_and_how_compile_went():
    from cudaperf_env.evaluate import Evaluation
    from cudaperf_env.feedback import feedback
    from cudaperf_env.status import Status

    timed = dict(status=Status.OK, message="", backend="cuda", correct=True, compiled=True, speedup=0.5,
                 speedup_lcb=0.45, runtime_ms=2.0, baseline_ms=1.0, baseline="pytorch_eager")  # fmt: skip
    text = feedback(TASK, Evaluation(**timed, speedup_vs_compile=0.25, compile_ms=0.5))
    assert "1 ms for the PyTorch reference run eagerly on the same GPU: speedup 0.50x" in text
    assert "Against torch.compile of the reference (0.5 ms): 0.25x." in text
    text = feedback(TASK, Evaluation(**timed, compile_error="torch.compile failed: boom"))
    assert "No torch.compile baseline (torch.compile failed: boom): compared with eager only." in text


def test_the_cuda_backend_turns_its_timing_into_speedups_over_eager(monkeypatch, tmp_path):
    """The backend's wiring, where no GPU is: its interleaved timing faked, the eager baseline real (CPU torch)."""
    from pathlib import Path

    from cudaperf_env.backends.base import Build
    from cudaperf_env.backends.cuda.backend import CudaBackend
    from cudaperf_env.backends.sandbox import WorkerProcess

    task = replace(TASK, perf_configs=(TASK.configs[0],))  # a CPU-sized timing configuration
    pair = SpeedupEstimate(2.0, 4.0, 2.0, 1.8, 20)  # candidate 2 ms, the baseline implementation 4 ms
    monkeypatch.setattr(CudaBackend, "build", lambda self, task, code, cancel=None: Build(True, Path("lib.so")))
    monkeypatch.setattr(CudaBackend, "_time", lambda self, task, baseline, worker, paired=True:
                        Timing(pair, per_config=(pair,)))  # fmt: skip
    backend = CudaBackend(timing=QUICK, pytorch=TorchBaselines("cpu", compile=False))
    try:
        timing = backend.time(task, Build(True, Path("candidate.so")), 0, tmp_path, object.__new__(WorkerProcess))
    finally:
        backend.pytorch.close()
    assert timing.baseline == "pytorch_eager" and timing.speedup_vs_impl == 2.0
    assert timing.estimate.baseline_ms == pytest.approx(timing.eager_ms[0], rel=1e-12) and timing.eager_ms[0] > 0
    assert timing.estimate.speedup == pytest.approx(timing.eager_ms[0] / 2.0)
    assert math.isnan(timing.speedup_vs_compile) and timing.compile_error == ""  # compile off: no fallback
    off = CudaBackend(timing=QUICK, torch_baselines=False)
    assert off.pytorch is None
    assert off.time(task, Build(True, Path("candidate.so")), 0, tmp_path, object.__new__(WorkerProcess)).baseline \
        == "implementation"  # fmt: skip
