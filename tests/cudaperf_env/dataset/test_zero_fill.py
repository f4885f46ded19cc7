"""A zero-filled output fails every task whose reference output varies (no tolerance loose enough to pass it)."""

import shutil

import numpy as np
import pytest

from cudaperf_env.backends.execute import Job
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.reference import ReferenceOutputs
from cudaperf_env.checks import compare_output
from cudaperf_env.dataset import load_dataset
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.cache import scratch_dir


def sample():
    """Every starter task and the first task of every dataset family."""
    tasks = {t.id: t for t in load_tasks(kind="c2cuda").values()}
    families: dict[str, object] = {}
    for task in load_dataset("test", labels=False).values():
        families.setdefault(task.family, task)
    return [*tasks.values(), *families.values()]


@pytest.fixture(scope="module")
def reference():
    return ReferenceOutputs()


@pytest.mark.parametrize("task", sample(), ids=lambda t: t.id)
def test_zero_fill_fails_where_the_output_varies(task, reference):
    if task.checker is not None:
        pytest.skip("a checker judges this task's outputs")
    config = min(task.configs, key=lambda c: sum(c.values()))
    workdir = scratch_dir("cudaperf-zero-")
    try:
        want = reference.expected(task, [Job(config, task_inputs(task, config, 3))], 3, workdir)[0]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for arg in (a for a in task.args if a.role in ("out", "inout")):
        if np.ptp(np.asarray(want[arg.name], dtype=np.float64)) == 0:
            continue  # a constant output: nothing to tell zeros from
        zeros = {name: np.zeros_like(v) for name, v in want.items()}
        assert not compare_output(task, arg, zeros, want).ok, f"{task.id}: an all-zero `{arg.name}` passes"
