"""A failure beside other evaluations' runs is judged again alone (``Capabilities.alone``): the real CPU
backend behind a wrapper whose shared runs meet a peer that took the device's memory."""

from dataclasses import dataclass, field, replace

import pytest

from cudaperf_env.backends.base import CallResult, Capabilities
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import EvalOptions, Evaluator, out_of_device_memory
from cudaperf_env.status import Status
from cudaperf_env.tasks import load_tasks

SAXPY = load_tasks()["c2cuda/saxpy_f32"]
OUT_OF_MEMORY = CallResult(Status.RUNTIME_ERROR, "cudaErrorMemoryAllocation: out of memory")
FORGED = CallResult(Status.RUNTIME_ERROR, "the process exited with status 1: cudaErrorMemoryAllocation", "exit")


@dataclass
class SharedRuns:
    """The CPU backend, with runs that 'share the device': the first ``peer_failures`` runs fail with ``failure``
    (by default as a peer made them fail); ``run_alone`` is the backend's own run."""

    inner: CpuBackend = field(default_factory=lambda: CpuBackend(timeout_s=10.0))
    peer_failures: int = 0
    failure: CallResult = OUT_OF_MEMORY
    shared: int = 0
    alone: int = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def capabilities(self) -> Capabilities:
        return replace(self.inner.capabilities, alone=self)

    def run(self, build, task, jobs, workdir, worker):
        self.shared += 1
        if self.shared <= self.peer_failures:
            return [self.failure]
        return self.inner.run(build, task, jobs, workdir, worker)

    def run_alone(self, build, task, jobs, workdir, worker):
        self.alone += 1
        return self.inner.run(build, task, jobs, workdir, worker)


def evaluate(backend, source):
    evaluator = Evaluator(backend, EvalOptions(schedules=0, racecheck=False))  # type: ignore[arg-type]
    return evaluator.evaluate(SAXPY, f"```cuda\n{source}```", seed=1)


def test_an_honest_kernel_that_met_a_peer_is_judged_alone_and_correct():
    backend = SharedRuns(peer_failures=1)
    evaluation = evaluate(backend, SAXPY.implementation("naive").source)
    assert evaluation.status == Status.OK and evaluation.correct
    assert (backend.shared, backend.alone) == (1, 1) and evaluation.seconds["run_alone"] > 0


def test_a_kernel_that_crashes_by_itself_gets_no_second_draw():
    backend = SharedRuns()
    crash = SAXPY.implementation("naive").source.replace("y[i] = a * x[i] + y[i];", "y[i + (1 << 30)] = 1.0f;")
    assert crash != SAXPY.implementation("naive").source
    evaluation = evaluate(backend, crash)
    assert evaluation.status == Status.RUNTIME_ERROR and (backend.shared, backend.alone) == (1, 0)


def test_only_running_out_of_device_memory_is_what_a_peer_can_cause():
    runs = [OUT_OF_MEMORY]
    assert out_of_device_memory(Status.RUNTIME_ERROR, OUT_OF_MEMORY.message, runs)
    illegal = CallResult(Status.RUNTIME_ERROR, "cudaErrorIllegalAddress: an illegal memory access")
    assert not out_of_device_memory(Status.RUNTIME_ERROR, illegal.message, [illegal])
    assert not out_of_device_memory(Status.TIMEOUT, "stopped after 2.1 s", runs)  # a hang gets no second draw
    assert not out_of_device_memory(Status.WRONG_ANSWER, OUT_OF_MEMORY.message, runs)


def test_a_crash_that_prints_the_out_of_memory_error_gets_no_second_draw():
    # the process exited and the last line of its stderr, the submission's own words, named the error
    backend = SharedRuns(peer_failures=1, failure=FORGED)
    evaluation = evaluate(backend, SAXPY.implementation("naive").source)
    assert evaluation.status == Status.RUNTIME_ERROR and (backend.shared, backend.alone) == (1, 0)
    assert not out_of_device_memory(FORGED.status, FORGED.message, [FORGED])


@pytest.mark.parametrize("peer_failures", [0, 1])
def test_a_wrong_answer_is_not_run_again_and_is_the_verdict_alone_too(peer_failures):
    backend = SharedRuns(peer_failures=peer_failures)
    wrong = SAXPY.implementation("naive").source.replace("a * x[i] + y[i]", "a * x[i] - y[i]")
    assert wrong != SAXPY.implementation("naive").source
    evaluation = evaluate(backend, wrong)
    assert evaluation.status == Status.WRONG_ANSWER
    assert backend.alone == peer_failures and ("run_alone" in evaluation.seconds) == bool(peer_failures)


def test_backends_whose_runs_never_share_have_no_alone_runner():
    assert CpuBackend().capabilities.alone is None
