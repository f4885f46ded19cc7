"""The evaluation pipeline's batch entry point."""

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_task

TASK = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")


def test_evaluate_many_judges_a_group_in_order_like_one_by_one():
    good = TASK.implementation("naive").source
    wrong = good.replace("(n + 255) / 256", "n / 256")
    actions = [good, "no code here", wrong, TASK.implementation("grid_stride").source]
    evaluator = Evaluator(CpuBackend(timeout_s=5.0))
    together = [e.status for e in evaluator.evaluate_many(TASK, actions, seed=3, max_workers=2)]
    alone = [evaluator.evaluate(TASK, a, seed=3).status for a in actions]
    assert together == alone == ["ok", "format_error", "wrong_answer", "ok"]


def test_speedup_over_the_c_reference_uses_configurations_where_both_times_are_known():
    from cudaperf_env.evaluate import speedup_over

    assert speedup_over([8.0, 2.0], [2.0, 2.0]) == pytest.approx(2.0)
    assert speedup_over([8.0, math.nan], [2.0, 1.0]) == pytest.approx(4.0)
    assert math.isnan(speedup_over([math.nan], [1.0])) and math.isnan(speedup_over([], []))


@dataclass(frozen=True)
class RecordingBackend(CpuBackend):
    """The CPU backend, noting when each of its builds starts and ends and what it made."""

    events: list = field(default_factory=list)

    def build(self, task, code, cancel=None):
        self.events.append(("build", "start", time.perf_counter()))
        built = super().build(task, code, cancel)
        self.events.append(("build", built, time.perf_counter()))
        return built

    def race_build(self, task, code, cancel=None):
        self.events.append(("race_build", "start", time.perf_counter()))
        built = super().race_build(task, code, cancel)
        self.events.append(("race_build", built, time.perf_counter()))
        return built


def test_the_race_check_build_runs_beside_the_ordinary_build():
    backend = RecordingBackend(timeout_s=5.0)
    code = f"// {time.time_ns()}\n{TASK.implementation('naive').source}"  # a new source: both compile
    e = Evaluator(backend).evaluate(TASK, code, seed=3)
    assert e.status == "ok" and "racecheck" in e.seconds and e.seconds["racecheck_build"] > 0, e.seconds
    when = {(name, what if what == "start" else "end"): t for name, what, t in backend.events}
    assert when["race_build", "start"] < when["build", "end"] and when["build", "start"] < when["race_build", "end"]


def test_code_nvcc_refuses_leaves_no_race_check_build_behind():
    """g++ compiles a host function's call in a kernel, nvcc refuses it: the race-check build is stopped or dropped."""
    backend = RecordingBackend(timeout_s=5.0)
    source = TASK.implementation("naive").source.replace("int i =", "int i = host_only() +")
    e = Evaluator(backend).evaluate(TASK, f"// {time.time_ns()}\nint host_only() {{ return 0; }}\n{source}", seed=3)
    assert e.status == "compile_error" and "racecheck" not in e.seconds and "host_only" in e.compile_log, e.compile_log
    [race] = [built for name, built, _ in backend.events if name == "race_build" and built != "start"]
    assert race.library is None or not race.library.exists()  # cancelled, or built and then deleted


@dataclass(frozen=True)
class CheckOutcomes(CpuBackend):
    """The CPU backend whose reruns under other schedules, or whose race-check run, end as given."""

    rerun_result: object = None
    race_result: object = None

    def rerun(self, task, job, workdir, worker, tag):
        return self.rerun_result or super().rerun(task, job, workdir, worker, tag)

    def race_check(self, task, build, job, workdir, worker):
        return self.race_result or super().race_check(task, build, job, workdir, worker)


@pytest.mark.parametrize("where", ["rerun_result", "race_result"])
def test_a_crash_under_another_order_or_under_the_race_detector_gets_no_credit(where):
    from cudaperf_env.backends.base import CallResult
    from cudaperf_env.status import Status

    good = TASK.implementation("naive").source
    crash = CallResult(Status.RUNTIME_ERROR, "illegal_address: a kernel read out of bounds", "illegal_address")
    e = Evaluator(CheckOutcomes(timeout_s=5.0, **{where: crash})).evaluate(TASK, good, seed=3)
    assert e.status == "wrong_answer" and e.message.startswith("race:") and "crashed" in e.message, e.message
    slow = CallResult(Status.TIMEOUT, "timed out", "")  # one thread may be slower than many: not a verdict
    assert Evaluator(CheckOutcomes(timeout_s=5.0, **{where: slow})).evaluate(TASK, good, seed=3).correct
