"""The GPU backend's symbol check accepts what nvcc itself puts into honest builds (runs without a GPU)."""

import pytest

from cudaperf_env.backends.cuda import imports
from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.backends.harness import units
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.native import build_library

TASKS = load_tasks()
# Implementations whose nvcc builds import more than the trivial build (reduce_then_scan: `exit`).
CASES = [("c2cuda/exclusive_scan_f32", "reduce_then_scan"), ("c2cuda/saxpy_f32", "naive")]


@pytest.mark.parametrize(("task_id", "impl"), CASES)
def test_honest_nvcc_builds_pass_the_symbol_check(task_id, impl):
    task, flags = TASKS[task_id], nvcc_flags("sm_90")
    built = build_library(tools.nvcc(), flags, units(task, task.implementation(impl).source, "cuda"), ".cu")
    assert built.ok and built.library is not None, built.log
    assert imports.checker(tuple(flags))(built.library) == ""


def test_a_host_call_into_the_system_is_still_refused():
    task, flags = TASKS["c2cuda/saxpy_f32"], nvcc_flags("sm_90")
    source = task.implementation("naive").source.replace(
        'extern "C" void saxpy(', '#include <unistd.h>\nextern "C" void saxpy_(int n, float a, const float* x, '
        'float* y);\nextern "C" void saxpy(int n, float a, const float* x, float* y) { fork(); saxpy_(n, a, x, y); }\n'
        'extern "C" void saxpy_(')  # fmt: skip
    built = build_library(tools.nvcc(), flags, units(task, source, "cuda"), ".cu")
    assert built.ok and "fork" in imports.checker(tuple(flags))(built.library)
