"""Evaluator.prepare: what grading needs whatever the reply says, made ahead in the background and reused."""

from dataclasses import replace

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.reference import ReferenceError
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.tasks import load_tasks

TASK = load_tasks()["c2cuda/saxpy_f32"]
GOOD = f"```cuda\n{TASK.implementation('naive').source}```"


class Preparing:
    """The CPU backend, offering the preparer capability (as the CUDA backend does) and recording its calls."""

    def __init__(self) -> None:
        self.inner, self.prepared = CpuBackend(), []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def capabilities(self):
        return replace(self.inner.capabilities, preparer=self)

    def prepare(self, task) -> None:
        self.prepared.append(task.id)


def test_prepared_expected_outputs_are_computed_once_and_reused_by_the_evaluation(monkeypatch):
    evaluator = Evaluator(CpuBackend())
    computed, compute = [], evaluator.reference._compute

    def counted(task, jobs, workdir):
        computed.append(len(jobs))
        return compute(task, jobs, workdir)

    monkeypatch.setattr(evaluator.reference, "_compute", counted)
    assert evaluator.prepare([(TASK, 7)]).result(timeout=120) is None
    assert computed == [len(TASK.correctness_configs)]  # made ahead, hidden configurations included
    assert evaluator.evaluate(TASK, GOOD, seed=7).correct and len(computed) == 1  # reused, not computed again
    assert evaluator.evaluate(TASK, GOOD, seed=8).correct and len(computed) == 2  # another seed, other inputs


def test_the_backends_own_preparing_is_asked_for_in_native_mode_only():
    backend = Preparing()
    Evaluator(backend).prepare([(TASK, 0)]).result(timeout=120)
    assert backend.prepared == [TASK.id]
    other = Preparing()
    Evaluator(other, EvalOptions(mode="kernelbench")).prepare([(TASK, 0)]).result(timeout=120)
    assert other.prepared == []  # KernelBench mode: the torch worker makes its own, per evaluation


def test_a_failure_while_preparing_is_left_to_the_evaluations(monkeypatch):
    evaluator = Evaluator(CpuBackend())

    def broken(*args):
        raise ReferenceError("the C reference does not compile")

    monkeypatch.setattr(evaluator.reference, "expected", broken)
    assert evaluator.prepare([(TASK, 0), (TASK, 1)]).result(timeout=60) is None  # done, nothing raised
    assert evaluator.prepare([]).done()
