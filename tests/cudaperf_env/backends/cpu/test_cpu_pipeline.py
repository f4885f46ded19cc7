"""The CPU backend through the whole pipeline (pre-pass, g++, worker): kernels and their failures."""

import time
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.tasks import load_task

FIXTURES = Path(__file__).parents[3] / "fixtures" / "tasks"
SUM = load_task(FIXTURES / "sum.yaml")
ENTRY = 'extern "C" void sum(int n, const float* x, float* out) {\n  cudaMemset(out, 0, sizeof(float));\n'


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(CpuBackend(timeout_s=3.0), EvalOptions(compile_timeout_s=20.0))


def block_sum(body: str, launch: str = "  block_sum<<<(n + 255) / 256, 256>>>(n, x, out);\n") -> str:
    return (
        "__global__ void block_sum(int n, const float* x, float* out) {\n"
        "  __shared__ float s[256];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  s[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
        f"{body}"
        "  if (threadIdx.x == 0) atomicAdd(out, s[0]);\n"
        "}\n" + ENTRY + launch + "}\n"
    )


TREE = (
    "  for (int o = 128; o > 0; o >>= 1) {\n"
    "    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o]; __syncthreads(); }\n"
)


def test_shared_memory_tree_reduction_is_correct(evaluator):
    e = evaluator.evaluate(SUM, block_sum("  __syncthreads();\n" + TREE), seed=1)
    assert (e.status, e.correct) == ("ok", True), e.message


def test_missing_syncthreads_race_gives_a_wrong_answer(evaluator):
    racy = TREE.replace(" __syncthreads();", "")
    e = evaluator.evaluate(SUM, block_sum(racy), seed=1)
    assert e.status == "wrong_answer"


def test_divergent_barrier_is_a_deadlock_report_naming_the_line(evaluator):
    body = "  if (threadIdx.x < 16) __syncthreads();\n  __syncthreads();\n" + TREE
    e = evaluator.evaluate(SUM, block_sum(body), seed=1)
    assert e.status == "runtime_error" and "deadlock" in e.message and "line 5" in e.message, e.message


def test_partial_warp_shuffle_is_a_deadlock_report(evaluator):
    body = "  float v = s[threadIdx.x];\n  if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffff, v, 1);\n"
    e = evaluator.evaluate(SUM, block_sum(body), seed=1)
    assert e.status == "runtime_error" and "deadlock" in e.message


def test_out_of_bounds_write_names_the_kernel(evaluator):
    body = "  if (i == 0) ((volatile float*)out)[1 << 28] = 1.0f;\n  __syncthreads();\n" + TREE
    e = evaluator.evaluate(SUM, block_sum(body), seed=1)
    assert e.status == "runtime_error" and "block_sum" in e.message, e.message


def test_infinite_loop_times_out(evaluator):
    start = time.monotonic()
    e = evaluator.evaluate(SUM, block_sum("  while (true) { __syncthreads(); }\n"), seed=1)
    assert e.status == "timeout" and time.monotonic() - start < 15


def test_invalid_launch_configuration_is_the_cuda_error(evaluator):
    e = evaluator.evaluate(SUM, block_sum(TREE, "  block_sum<<<1, 2048>>>(n, x, out);\n"), seed=1)
    assert e.status == "runtime_error" and "cudaErrorInvalidConfiguration" in e.message


def test_unsupported_construct_is_rejected_naming_the_line(evaluator):
    body = "  cooperative_groups::this_grid().sync();\n"  # valid CUDA (nvcc accepts it), not on the CPU
    e = evaluator.evaluate(SUM, "#include <cooperative_groups.h>\n" + block_sum(body), seed=1)
    assert e.status == "rejected" and "line 6" in e.message, e.message


def test_compile_bomb_is_stopped_in_bounded_time():
    macros = "#define L0 x+x+x+x+x+x+x+x+x+x\n" + "".join(
        f"#define L{k} L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}+L{k - 1}\n"
        for k in range(1, 9)
    )
    code = macros + "__global__ void k(float* y) { float x = 1; y[0] = L8; }\n" + ENTRY + "  k<<<1, 1>>>(out);\n}\n"
    ev = Evaluator(CpuBackend(build_timeout_s=3.0), EvalOptions(compile_timeout_s=3.0))
    start = time.monotonic()
    e = ev.evaluate(SUM, code, seed=1)
    assert e.status == "compile_error" and "did not finish within 3 s" in e.compile_log
    assert time.monotonic() - start < 10


def test_half_precision_short_names_come_with_their_headers_as_under_nvcc(evaluator):
    """nvcc declares `half`, `nv_bfloat16`... only in <cuda_fp16.h> / <cuda_bf16.h>: elsewhere they are free names."""
    named_half = "constexpr int half = 128;\n" + block_sum("  __syncthreads();\n" + TREE.replace("128", "half"))
    e = evaluator.evaluate(SUM, named_half, seed=1)
    assert (e.status, e.correct) == ("ok", True), e.message
    with_header = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + block_sum(
        "  __syncthreads();\n  half h = __float2half(1.0f); nv_bfloat16 b = __float2bfloat16(1.0f);\n"
        "  s[threadIdx.x] *= __half2float(h) * __bfloat162float(b);\n  __syncthreads();\n" + TREE
    )
    e = evaluator.evaluate(SUM, with_header, seed=1)
    assert (e.status, e.correct) == ("ok", True), e.message
