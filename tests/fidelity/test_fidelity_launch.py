"""Launches a GPU refuses, swallowed signals, split personality: the CPU backend's verdict is the GPU's."""

from pathlib import Path

import pytest

from cudaperf_env.backends.launch_limits import arch_limits, base_name, resources_text
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain.compile_check import KernelResources, compile_check

SUM = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "sum.yaml")
ENTRY = 'extern "C" void sum(int n, const float* x, float* out) {\n  cudaMemset(out, 0, sizeof(float));\n'

DYNAMIC_SMEM = """
__global__ void staged_sum(int n, const float* x, float* out) {
  extern __shared__ float stage[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int k = 0; k < blockDim.x; ++k) s += stage[k];
    atomicAdd(out, s);
  }
}
""" + ENTRY


def dynamic_smem(opt_in: bool) -> str:
    """256 threads asking for 64 KiB of dynamic shared memory, with or without the opt-in."""
    attribute = "  cudaFuncSetAttribute(staged_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);\n"
    launch = "  staged_sum<<<(n + 255) / 256, 256, 65536>>>(n, x, out);\n}\n"
    return DYNAMIC_SMEM + (attribute if opt_in else "") + launch


# 96 registers per thread on sm_90 (nvcc 13, -O3): more than 64 x 1024 fit in the register file.
HEAVY = """
__global__ void heavy(int n, const float* x, float* out) {
  float acc[72];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 72; ++k) acc[k] = x[(i * 7 + k * 13) % n];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int k = 0; k < 72; ++k) acc[k] = acc[k] * 0.5f + acc[(k + 5) % 72] * 0.25f + acc[(k + 11) % 72] * 0.125f;
  }
  float junk = 0.0f;
#pragma unroll
  for (int k = 0; k < 72; ++k) junk += acc[k];
  if (i < n) atomicAdd(out, x[i] + 0.0f * junk);
}
""" + ENTRY


def heavy(threads: int) -> str:
    return HEAVY + f"  heavy<<<(n + {threads - 1}) / {threads}, {threads}>>>(n, x, out);\n}}\n"


# The host installs a SIGSEGV handler (through `sigset`, declared by hand: the screen refuses <signal.h>,
# `signal` and `sigaction`) and jumps back when a kernel faults, then writes the answer itself.
SWALLOWED = """
#include <vector>
typedef void (*handler_t)(int);
extern "C" handler_t sigset(int, handler_t) noexcept;
static void* escape[5];
static void on_fault(int) { __builtin_longjmp(escape, 1); }
__global__ void wild(int n, const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) ((volatile float*)out)[1 << 28] = 1.0f;
}
static void run(int n, const float* x, float* out) {
  if (__builtin_setjmp(escape) == 0) wild<<<(n + 255) / 256, 256>>>(n, x, out);
}
extern "C" void sum(int n, const float* x, float* out) {
  sigset(11, on_fault);  // SIGSEGV
  sigset(7, on_fault);   // SIGBUS
  run(n, x, out);
  std::vector<float> h(n);
  cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost);
  double s = 0.0;
  for (int k = 0; k < n; ++k) s += h[k];
  float f = (float)s;
  cudaMemcpy(out, &f, sizeof f, cudaMemcpyHostToDevice);
}
"""

# Correct where __CUDA_ARCH__ is undefined (the CPU build), wrong in nvcc's device pass.
SPLIT = """
__global__ void two_faced(int n, const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef __CUDA_ARCH__
  if (i < n && i % 2 == 0) atomicAdd(out, 2.0f * x[i]);
#else
  if (i < n) atomicAdd(out, x[i]);
#endif
}
""" + ENTRY + "  two_faced<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n"


def test_more_than_48k_dynamic_shared_without_the_opt_in_is_invalid_value(evaluator):
    e = evaluator.evaluate(SUM, dynamic_smem(opt_in=False), seed=1)
    assert e.status == "runtime_error" and "cudaErrorInvalidValue" in e.message, e.message


def test_the_opt_in_attribute_admits_64k_of_dynamic_shared(evaluator):
    e = evaluator.evaluate(SUM, dynamic_smem(opt_in=True), seed=1)
    assert e.correct, e.message


def test_register_file_overflow_is_launch_out_of_resources(evaluator):
    report = compile_check(heavy(1024))
    assert report.ok and report.kernels[0].registers > 64, report.kernels  # else the test proves nothing
    e = evaluator.evaluate(SUM, heavy(1024), seed=1)
    assert e.status == "runtime_error" and "cudaErrorLaunchOutOfResources" in e.message, e.message


def test_the_same_kernel_fits_with_smaller_blocks(evaluator):
    e = evaluator.evaluate(SUM, heavy(256), seed=1)
    assert e.correct, e.message


def test_a_swallowed_kernel_fault_gets_no_credit(evaluator):
    e = evaluator.evaluate(SUM, SWALLOWED, seed=1)
    # The build's symbol check refuses installing the handler (`sigset`) before it runs, on both
    # backends; where it runs, the fault is still a runtime error.
    assert e.status in ("runtime_error", "rejected") and not e.correct, (e.status, e.message)
    if e.status == "rejected":
        assert "sigset" in e.message or "signal" in e.message, e.message
    elif evaluator.backend.name == "cpu":
        assert "illegal_address" in e.message or "invalid memory access" in e.message, e.message


def test_split_personality_gets_no_credit(evaluator):
    e = evaluator.evaluate(SUM, SPLIT, seed=1)
    assert not e.correct
    if evaluator.backend.name == "cpu":
        assert e.status == "rejected" and "__CUDA_ARCH__" in e.message and "line 4" in e.message, e.message


@pytest.mark.parametrize(("demangled", "base"), [
    ("heavy(int, float const*, float*)", "heavy"),
    ("void ns::tile<float, 256>(float*, int)", "tile"),
    ("k", "k"),
])
def test_kernel_base_names_match_the_runtime_key(demangled, base):
    assert base_name(demangled) == base


def test_resources_file_carries_the_target_limits():
    text = resources_text([KernelResources("heavy(int, float const*, float*)", registers=96, shared_bytes=1024)],
                          "sm_80")
    assert text.splitlines() == ["arch sm_80 166912 65536", "96 1024 heavy"]
    assert arch_limits("sm_90a").shared_optin == 232448 and arch_limits("compute_75").shared_optin == 65536
