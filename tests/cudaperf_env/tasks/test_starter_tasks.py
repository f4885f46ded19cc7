"""Every bundled task, through the real pipeline on the CPU backend.

Each implementation must be judged correct (the race checks included: no false races),
and a deliberately broken variant of the baseline (right computation, then one output
element overwritten) must be judged wrong. A task's submissions are judged together, as
a GRPO group is (``Evaluator.evaluate_many``: one's compilers overlap another's runs).
"""

import re
from collections.abc import Callable

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import Evaluation, Evaluator
from cudaperf_env.tasks import Task, load_tasks

TASKS = load_tasks(kind="c2cuda")
CASES = [(t, i.name) for t in TASKS.values() for i in t.implementations]
BROKEN = "broken variant"


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(CpuBackend(timeout_s=60.0))


@pytest.fixture(scope="module")
def verdicts(evaluator) -> Callable[[Task], dict[str, Evaluation]]:
    """A task's evaluations by implementation name (and :data:`BROKEN`), made once per task, on first use."""
    made: dict[str, dict[str, Evaluation]] = {}

    def of(task: Task) -> dict[str, Evaluation]:
        if task.id not in made:
            names = [i.name for i in task.implementations] + [BROKEN]
            sources = [i.source for i in task.implementations] + [broken(task)]
            made[task.id] = dict(zip(names, evaluator.evaluate_many(task, sources, seed=11), strict=True))
        return made[task.id]

    return of


def test_starter_set_covers_the_promised_breadth():
    families = {t.family for t in TASKS.values()}
    assert len(TASKS) >= 24 and len(families) >= 12
    for task in TASKS.values():
        assert len(task.configs) >= 3, task.id
        assert any(v % 2 for c in task.configs for v in c.values()), f"{task.id}: no odd size"
        assert len(task.implementations) >= 2, task.id


@pytest.mark.parametrize(("task", "impl"), CASES, ids=[f"{t.id}:{i}" for t, i in CASES])
def test_implementation_is_correct(verdicts, task: Task, impl: str):
    e = verdicts(task)[impl]
    assert (e.status, e.correct) == ("ok", True), f"{e.message}\n{e.compile_log}"


def broken(task: Task) -> str:
    """The baseline, then element 0 of the first output overwritten with 0x5B bytes."""
    source = task.implementation(task.baseline).source
    definition = re.compile(rf'extern\s+"C"\s+void\s+{task.entry}\s*\(')
    assert definition.search(source), f"{task.id}: baseline does not define the entry plainly"
    renamed = definition.sub(f"static void correct_{task.entry}(", source, count=1)
    out = next(a for a in task.args if a.role in ("out", "inout"))
    params = ", ".join(a.name for a in task.args)
    return (
        f"{renamed}\nextern \"C\" {task.signature} {{\n"
        f"  correct_{task.entry}({params});\n"
        f"  cudaMemset({out.name}, 0x5B, sizeof(*{out.name}));\n}}\n"
    )


@pytest.mark.parametrize("task", list(TASKS.values()), ids=list(TASKS))
def test_broken_variant_is_wrong(verdicts, task: Task):
    e = verdicts(task)[BROKEN]
    assert e.status == "wrong_answer", f"{e.status}: {e.message}\n{e.compile_log}"
