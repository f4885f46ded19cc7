"""The cuda backend on a real GPU: correctness of every starter task, timing that cannot be fooled.

Marked ``gpu``: skipped where no NVIDIA GPU is usable (CI). Run on the GPU machine
with ``pytest -m gpu tests/cudaperf_env/backends/cuda``.
"""

import math

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

pytestmark = pytest.mark.gpu
TASKS = load_tasks(kind="c2cuda")
CASES = [(t, i.name) for t in TASKS.values() for i in t.implementations]
QUICK = TimingOptions(min_trials=5, max_trials=20, budget_s=1.0)


@pytest.fixture(scope="module")
def correctness():
    return Evaluator(CudaBackend(measures_time=False, timeout_s=20))


@pytest.fixture(scope="module")
def timed():
    return Evaluator(CudaBackend(timing=QUICK, timeout_s=10))


@pytest.mark.parametrize(("task", "impl"), CASES, ids=[f"{t.id}:{i}" for t, i in CASES])
def test_every_implementation_is_correct_on_the_gpu(correctness, task, impl):
    e = correctness.evaluate(task, task.implementation(impl).source, seed=5)
    assert (e.status, e.correct) == ("ok", True), f"{e.message}\n{e.compile_log}"


SAXPY = TASKS["c2cuda/saxpy_f32"]
KERNEL = """
__global__ void k(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
ENTRY = 'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
LAUNCH = "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n"


def test_baseline_against_itself_is_about_1x(timed):
    e = timed.evaluate(SAXPY, SAXPY.implementation(SAXPY.baseline).source, seed=1)
    assert e.status == "ok" and 0.9 < e.speedup < 1.1 and not e.timing_flags
    assert e.device["name"] and e.runtime_ms > 0.05


def test_side_stream_launch_gets_no_phantom_speedup(timed):
    code = KERNEL + ENTRY + (
        "  static cudaStream_t s = nullptr; if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
        "  k<<<(n + 255) / 256, 256, 0, s>>>(n, a, x, y);\n}\n"
    )
    e = timed.evaluate(SAXPY, code, seed=2)
    assert e.status == "ok" and e.speedup < 1.3


def test_stale_output_reuse_is_wrong(timed):
    code = KERNEL + ENTRY + "  static int calls = 0; if (calls++ > 0) return;\n" + LAUNCH + "}\n"
    e = timed.evaluate(SAXPY, code, seed=3)
    assert e.status == "wrong_answer" and not e.correct


def test_warmup_detection_is_caught_by_checked_timed_calls(timed):
    code = KERNEL + ENTRY + "  static int calls = 0; if (++calls > 8) return;\n" + LAUNCH + "}\n"
    e = timed.evaluate(SAXPY, code, seed=4)
    assert e.status == "wrong_answer" and "timed calls" in e.message


def test_pointer_keyed_result_cache_is_caught():
    matmul = TASKS["c2cuda/matmul_f32"]
    source = matmul.implementation(matmul.baseline).source
    entry = next(a for a in matmul.args if a.role == "out")
    params = ", ".join(a.name for a in matmul.args)
    cached = (
        source.replace(f'extern "C" void {matmul.entry}(', f"static void real_{matmul.entry}(", 1)
        + f'extern "C" {matmul.signature} {{\n'
        f"  static const void* last = nullptr; static void* cache = nullptr; static size_t bytes = 0;\n"
        f"  size_t need = (size_t)m * n * sizeof(float);\n"
        f"  if (last == (const void*){entry.name} && cache && bytes == need) {{ cudaMemcpy({entry.name}, cache, "
        f"bytes, cudaMemcpyDeviceToDevice); return; }}\n"
        f"  real_{matmul.entry}({params});\n"
        f"  if (bytes != need) {{ cudaFree(cache); cudaMalloc(&cache, need); bytes = need; }}\n"
        f"  cudaMemcpy(cache, {entry.name}, bytes, cudaMemcpyDeviceToDevice); last = {entry.name};\n}}\n"
    )
    e = Evaluator(CudaBackend(timing=QUICK)).evaluate(matmul, cached, seed=5)
    assert e.status == "wrong_answer", (e.status, e.message, e.compile_log)


def test_input_mutation_is_wrong(timed):
    code = KERNEL + ENTRY + LAUNCH + "  cudaMemset((void*)x, 0, 4);\n}\n"
    assert timed.evaluate(SAXPY, code, seed=6).status == "wrong_answer"


def test_host_thread_is_rejected(timed):
    code = "#include <thread>\n" + KERNEL + ENTRY + "  std::thread([=]{\n" + LAUNCH + "  }).detach();\n}\n"
    assert timed.evaluate(SAXPY, code, seed=7).status == "rejected"


def test_noop_kernel_is_wrong(timed):
    code = "__global__ void nothing() {}\n" + ENTRY + "  nothing<<<1, 1>>>();\n}\n"
    e = timed.evaluate(SAXPY, code, seed=8)
    assert e.status == "wrong_answer" and math.isnan(e.speedup)


def test_crash_and_hang_leave_the_next_episode_working():
    ev = Evaluator(CudaBackend(timing=QUICK, timeout_s=5))
    wild = "((volatile float*)y)[i + (1ll << 34)] = 1"  # 64 GiB past the buffer: unmapped
    crash = KERNEL.replace("y[i] = a * x[i] + y[i]", wild) + ENTRY + LAUNCH + "}\n"
    assert ev.evaluate(SAXPY, crash, seed=9).status == "runtime_error"
    hang = "__global__ void spin(int* f) { while (*(volatile int*)f == 0) {} }\n" + ENTRY + (
        "  int* f; cudaMalloc(&f, 4); cudaMemset(f, 0, 4); spin<<<1, 1>>>(f);\n}\n"
    )
    assert ev.evaluate(SAXPY, hang, seed=10).status == "timeout"
    good = ev.evaluate(SAXPY, SAXPY.implementation(SAXPY.baseline).source, seed=11)
    assert good.status == "ok" and good.correct


def test_a_task_without_baseline_is_timed_against_its_c_reference(timed):
    from pathlib import Path

    from cudaperf_env.feedback import feedback
    from cudaperf_env.tasks import load_task

    task = load_task(Path(__file__).parents[3] / "fixtures" / "minimal_tasks" / "vadd.yaml")
    source = (
        "__global__ void k(int n, const float* a, const float* b, float* c) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];\n}\n"
        'extern "C" void vadd(int n, const float* a, const float* b, float* c) {\n'
        "  k<<<(n + 255) / 256, 256>>>(n, a, b, c);\n}\n"
    )
    e = timed.evaluate(task, source, seed=3)
    assert (e.status, e.correct, e.baseline) == ("ok", True, "c_reference"), e.message
    assert math.isfinite(e.speedup) and e.speedup > 0 and e.speedup_lcb <= e.speedup
    assert e.baseline_ms > 0 and "compiled with -O2 on the host CPU" in feedback(task, e)
