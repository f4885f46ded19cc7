"""A task's trusted checker judges outputs with several valid answers, in a worker of its own."""

from dataclasses import replace

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.schema import CFunction
from cudaperf_env.turn import Grader

TASK = load_tasks()["c2cuda/partition_sign_f32"]
KERNEL = """```cuda
__global__ void k(int n, const float* x, float* out, int* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; if (v < 0.0f) out[atomicAdd(&c[0], 1)] = v; else out[n - 1 - atomicAdd(&c[1], 1)] = v; }
}
__global__ void finish(const int* c, int* split) { split[0] = c[0]; }
extern "C" void partition_sign(int n, const float* x, float* out, int* split) {
  int* c; cudaMalloc(&c, 8); cudaMemset(c, 0, 8);
  k<<<(n + 255) / 256, 256>>>(n, x, out, c);
  finish<<<1, 1>>>(c, split);
  cudaFree(c);
}
```"""


@pytest.fixture(scope="module")
def grader():
    return Grader.on(CpuBackend(timeout_s=30.0))


def test_a_valid_arrangement_other_than_the_references_passes(grader):
    # The back half is filled from the end: the reverse of the reference's order on that side.
    assert grader.grade(TASK, KERNEL).correct


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (("split[0] = c[0];", "split[0] = c[0] + 1;"), "split[0] is"),
        (("out[atomicAdd(&c[0], 1)] = v;", "out[atomicAdd(&c[0], 1)] = -v;"), "wrong side"),
        (("out[n - 1 - atomicAdd(&c[1], 1)] = v;", "out[n - 1 - atomicAdd(&c[1], 1)] = v + 1.0f;"),
         "not a rearrangement"),
    ],
)
def test_invalid_arrangements_fail_with_the_checkers_reason(grader, edit, reason):
    turn = grader.grade(TASK, KERNEL.replace(*edit))
    assert turn.status == "wrong_answer" and "the task's checker rejected the output" in turn.feedback
    assert reason in turn.feedback


def test_a_checker_that_crashes_or_does_not_build_costs_the_submission_not_the_process(grader):
    crashing = replace(TASK, checker=CFunction(TASK.checker.entry, TASK.checker.source.replace(
        "*valid = 0;", "*valid = 0; { volatile int* p = 0; *p = 1; }")))  # fmt: skip
    turn = grader.grade(crashing, KERNEL)
    assert turn.status == "wrong_answer" and "the task's checker failed" in turn.feedback
    broken = replace(TASK, checker=CFunction(TASK.checker.entry, "void check_partition(void) {}"))
    turn = grader.grade(broken, KERNEL)
    assert turn.status == "wrong_answer" and "checker does not compile" in turn.feedback
    assert grader.grade(TASK, KERNEL).correct  # the next evaluation is unaffected
