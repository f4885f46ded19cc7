"""One shipped task per family, end to end on the CPU backend: every implementation passes, a broken one fails."""

import re

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.dataset.load import load_dataset
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import Task

TASKS = load_dataset()
ONE_PER_FAMILY = {t.family: t for t in sorted(TASKS.values(), key=lambda t: t.id, reverse=True)}
SAMPLE = sorted(ONE_PER_FAMILY.values(), key=lambda t: t.id)


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(CpuBackend(timeout_s=60.0))


def broken(task: Task) -> str:
    """The baseline, then element 0 of the first output overwritten with 0x5B bytes."""
    source = task.implementation(task.baseline).source
    definition = re.compile(rf'extern\s+"C"\s+void\s+{task.entry}\s*\(')
    renamed = definition.sub(f"static void correct_{task.entry}(", source, count=1)
    out = next(a for a in task.args if a.role in ("out", "inout"))
    call = ", ".join(a.name for a in task.args)
    return (f'{renamed}\nextern "C" {task.signature} {{\n  correct_{task.entry}({call});\n'
            f"  cudaMemset({out.name}, 0x5B, sizeof(*{out.name}));\n}}\n")  # fmt: skip


@pytest.mark.parametrize("task", SAMPLE, ids=[t.id for t in SAMPLE])
def test_sampled_task_end_to_end(evaluator, task: Task):
    # judged together, as a GRPO group is: one submission's compilers overlap another's runs
    *judged, wrong = evaluator.evaluate_many(task, [i.source for i in task.implementations] + [broken(task)], seed=23)
    for impl, e in zip(task.implementations, judged, strict=True):
        assert (e.status, e.correct) == ("ok", True), f"{impl.name}: {e.message}\n{e.compile_log}"
    assert wrong.status == "wrong_answer", f"{wrong.status}: {wrong.message}"
