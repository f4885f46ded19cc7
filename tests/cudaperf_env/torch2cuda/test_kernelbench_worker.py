"""The KernelBench-mode worker's protocol where there is no GPU: the same runner and confined torch worker on
``device="cpu"``, with a C++ extension built by PyTorch's load_inline (real build, cached), so loading,
``state_dict`` parameters, the op guard, the freshness checks and the timing loop run for real in CI.
"""

import dataclasses
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from cudaperf_env.backends.base import Job
from cudaperf_env.backends.cuda import kernelbench_worker
from cudaperf_env.backends.cuda.kernelbench import KernelBenchRunner
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.backends.cuda.torch_baselines import TorchBaselines
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.source.inline_extension import extension_key
from cudaperf_env.source.python_screen import screen_python
from cudaperf_env.status import Status
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.cache import scratch_dir

pytest.importorskip("torch")
pytestmark = pytest.mark.slow
FIXTURE = (Path(__file__).parents[2] / "fixtures" / "kernelbench_mode" / "cpu_tanh_modelnew.py").read_text()
TASKS = load_tasks(kind="torch2cuda")
TANH = TASKS["torch2cuda/tanh"]
QUICK = TimingOptions(warmup=2, min_trials=3, max_trials=6, budget_s=0.5, input_sets=2, evaluation_budget_s=2.0)


def submission(forward: str = "return self.ext.tanh_cpu(x)", init: str = "", args: str = "") -> str:
    """The fixture with another forward body (and constructor)."""
    head, _, _ = FIXTURE.partition("class ModelNew")
    body = "".join(f"        {line}\n" for line in forward.splitlines())
    more = "".join(f"        {line}\n" for line in init.splitlines())
    return (f"{head}class ModelNew(nn.Module):\n    def __init__(self{args}):\n        super().__init__()\n"
            f"        self.ext = tanh_cpu\n{more}\n    def forward(self, x):\n{body}")


@pytest.fixture(scope="module")
def runner():
    return KernelBenchRunner(device="cpu", timeout_s=60, timing=QUICK)


@pytest.fixture(scope="module")
def build(runner):
    built = runner.build(screen_python(FIXTURE).extensions)
    assert built.ok, built.log
    return built


def run(runner, build, source, task=TANH, configs=1):
    """Screen, load and run ``source`` in a fresh worker; the load problem ("" when loaded) and the results."""
    screened = screen_python(source)
    assert screened.findings == (), screened.findings
    workdir = scratch_dir()
    worker = runner.start_worker(workdir)
    try:
        problem = runner.load(source, build, worker)
        jobs = [Job(c, task_inputs(task, c, 0)) for c in task.configs[:configs]]
        return problem, jobs, ([] if problem else runner.run(task, jobs, workdir, worker))
    finally:
        worker.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def test_an_honest_model_new_runs_and_returns_every_buffer(runner, build):
    problem, jobs, (result, second) = run(runner, build, FIXTURE, configs=2)
    assert problem == "" and result.status == Status.OK and second.status == Status.OK
    x = jobs[0].inputs["x"]
    np.testing.assert_allclose(result.buffers["y"], np.tanh(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(result.buffers["x"], x)  # the input as it came back, for the judge


def test_a_repeated_build_comes_from_the_cache(runner, build):
    again = runner.build(screen_python(FIXTURE).extensions)
    assert again.ok and again.cached and again.seconds == 0 and again.modules == build.modules


@pytest.mark.parametrize(("forward", "words"), [
    ("return self.ext.torch_tanh(x)", "forward ran PyTorch compute (aten::tanh)"),  # torch::tanh inside the C++
    ("y = self.ext.tanh_cpu(x)\nreturn y * 1.0", "aten::mul"),  # tensor arithmetic the screen cannot type
    ("return torch.empty_like(x)", "never called your extension's functions"),
    ("return self.ext.scale_inplace(x)", "forward's output 0 shares memory with input"),
])  # fmt: skip
def test_run_time_rules_refuse_the_forward(runner, build, forward, words):
    problem, _, (result,) = run(runner, build, submission(forward))
    assert problem == ""
    assert result.status == Status.REJECTED and words in result.message, result.message


def test_a_failing_forward_is_a_runtime_error_with_the_submission_line(runner, build):
    problem, _, (result,) = run(runner, build, submission("return self.ext.tanh_cpu(x.view(7, -1, 3))"))
    assert result.status == Status.RUNTIME_ERROR and "RuntimeError" in result.message
    assert "in forward: return self.ext.tanh_cpu(x.view(7, -1, 3))" in result.message


def test_the_wrong_number_of_outputs_is_a_runtime_error(runner, build):
    _, _, (result,) = run(runner, build, submission("y = self.ext.tanh_cpu(x)\nreturn (y, y)"))
    assert result.status == Status.RUNTIME_ERROR and "forward returned 2 value(s), the reference returns 1" in \
        result.message  # fmt: skip


def test_parameters_are_loaded_by_state_dict_key(runner, build):
    task = TASKS["torch2cuda/linear_mish_relu"]
    source = submission("return self.ext.tanh_cpu(x)", init="self.linear = nn.Linear(a, b)", args=", a, b")
    _, _, (result,) = run(runner, build, source, task=task)
    assert result.status == Status.RUNTIME_ERROR
    assert "ModelNew has no parameter `fc.weight` (it has: linear.weight, linear.bias)" in result.message


def test_sources_other_than_the_screened_ones_are_not_loaded(runner, build):
    workdir = scratch_dir()
    worker = runner.start_worker(workdir)
    try:
        other = dataclasses.replace(build, modules={"0" * 64: next(iter(build.modules.values()))})
        problem = runner.load(FIXTURE, other, worker)
    finally:
        worker.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    assert "load_inline was called with arguments other than the ones the screen read" in problem


def test_the_worker_restates_the_extension_key():
    args = ("m", "int f();", ["__global__ void k() {}"], ["f"], ["-O3"], [])
    assert kernelbench_worker.extension_key(*args) == extension_key(*args)


def time_submission(runner, source, task):
    workdir = scratch_dir()
    worker = runner.start_worker(workdir)
    try:
        assert runner.load(source, runner.build(screen_python(source).extensions), worker) == ""
        return runner.time(task, workdir, worker)
    finally:
        worker.kill()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def small_tanh():
    return dataclasses.replace(TANH, perf_configs=({"B": 8, "D": 300},))


def test_timing_measures_the_forward_against_the_reference(build, small_tanh):
    baselines = TorchBaselines("cpu", compile=False)
    try:
        timing = time_submission(KernelBenchRunner(device="cpu", timeout_s=60, timing=QUICK, baselines=baselines),
                                 FIXTURE, small_tanh)  # fmt: skip
    finally:
        baselines.close()
    assert timing.mismatch == "" and timing.baseline == "pytorch_eager"
    assert math.isfinite(timing.estimate.speedup) and timing.estimate.candidate_ms > 0
    assert timing.device["torch"]


def test_a_forward_that_returns_a_cached_buffer_is_refused_while_timing(runner, build, small_tanh):
    source = submission("y = self.ext.tanh_cpu(x)\nif self.first:\n    self.first = False\n    self.saved = y\n"
                        "return self.saved", init="self.first = True")  # fmt: skip
    crash = time_submission(runner, source, small_tanh)
    assert crash.kind == "refused" and "shares memory with output of an earlier call" in crash.message


def test_speedups_over_eager_are_pure_functions_of_the_samples():
    from cudaperf_env.backends.cuda.kernelbench import over_eager, sampled_mismatch

    estimate = over_eager([1.0, 1.1, 0.9, 1.0, 1.05], eager_ms=2.0, deadband=0.03)
    assert estimate.candidate_ms == 1.0 and estimate.speedup == 2.0 and 1.7 < estimate.speedup_lcb <= 2.0
    assert over_eager([1.0, 1.0, 1.0], eager_ms=1.02, deadband=0.03).speedup == 1.0  # within the deadband
    assert math.isnan(over_eager([], eager_ms=1.0, deadband=0.03).speedup)
    assert math.isnan(over_eager([1.0], eager_ms=math.nan, deadband=0.03).speedup)
    want = [[[0.5] * 200]]
    assert sampled_mismatch(TANH, [[[0.5] * 200]], want) == ""
    assert sampled_mismatch(TANH, [[[0.5] * 198 + [9.0, 9.0]]], want) == ""  # 1% may stray (reordered sums)
    assert "`y` on input set 1: 10 of 200 sampled elements" in sampled_mismatch(TANH, [[[0.5] * 190 + [9.0] * 10]],
                                                                                 want)  # fmt: skip
