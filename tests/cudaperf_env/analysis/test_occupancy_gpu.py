"""The occupancy calculation against the CUDA occupancy API on a real GPU.

Each kernel is compiled by the compile check (nvcc -cubin for the GPU's own
architecture), loaded with the driver API through ctypes, and
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (the call behind the runtime's
``cudaOccupancyMaxActiveBlocksPerMultiprocessor``) is compared with
:func:`cudaperf_env.analysis.occupancy.occupancy` fed with ptxas's numbers.

Marked ``gpu``: skipped where no NVIDIA driver is usable. On the GPU machine:
``python -m pytest -q -m gpu tests/cudaperf_env/analysis/test_occupancy_gpu.py``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudaperf_env.analysis.compiler import kernel_name, sass_histogram
from cudaperf_env.analysis.occupancy import ARCHS, arch_limits, occupancy
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.compile_check import compile_check

pytestmark = pytest.mark.gpu

# cuda.h enum values
ATTR_MAX_THREADS_PER_SM, ATTR_MAJOR, ATTR_MINOR = 39, 75, 76
ATTR_SMEM_PER_SM, ATTR_REGS_PER_SM, ATTR_SMEM_OPTIN, ATTR_BLOCKS_PER_SM, ATTR_SMEM_RESERVED = 81, 82, 97, 106, 111
FUNC_MAX_THREADS, FUNC_SHARED, FUNC_REGS, FUNC_MAX_DYNAMIC_SHARED = 0, 1, 4, 8

HEAVY = """
constexpr int R = 64;
extern "C" __global__ void BOUNDS heavy(const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[R];
  #pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = x[i + r * 32];
  #pragma unroll
  for (int it = 0; it < 4; ++it) {
    #pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = acc[r] * acc[(r + 7) % R] + acc[(r + 13) % R];
  }
  float s = 0.0f;
  #pragma unroll
  for (int r = 0; r < R; ++r) s += acc[r] * (float)r;
  y[i] = s;
}
"""
SMEM = """
extern "C" __global__ void smem(float* y) {
  __shared__ float s[WORDS];
  for (int k = threadIdx.x; k < WORDS; k += blockDim.x) s[k] = y[k];
  __syncthreads();
  y[threadIdx.x] = s[(threadIdx.x * 7) % WORDS];
}
"""
SOURCES = {
    "copy": 'extern "C" __global__ void copy(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }',
    "dynamic": """
extern "C" __global__ void dynamic(float* y) {
  extern __shared__ float s[];
  s[threadIdx.x] = y[threadIdx.x]; __syncthreads(); y[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}""",
    # bar.sync 5: barriers 0..5 in use, so 2 * 32 / 6 = 10 blocks on sm_90
    "named_barriers": """
extern "C" __global__ void named_barriers(float* y) {
  y[threadIdx.x] += 1.0f;
  asm volatile("bar.sync 5, %0;" :: "r"(blockDim.x));
  y[threadIdx.x] *= 2.0f;
}""",
    "heavy": HEAVY.replace("BOUNDS", ""),
    "heavy_lb2": HEAVY.replace("BOUNDS", "__launch_bounds__(256, 2)"),
    "heavy_lb3": HEAVY.replace("BOUNDS", "__launch_bounds__(256, 3)"),
    "heavy_lb5": HEAVY.replace("BOUNDS", "__launch_bounds__(256, 5)"),
    "spills": HEAVY.replace("BOUNDS", "__launch_bounds__(1024, 2)"),
    "smem_8k": SMEM.replace("WORDS", "2048"),
    "smem_40k": SMEM.replace("WORDS", "10240"),
    "smem_7k": SMEM.replace("WORDS", "1792"),
}
TASK_KERNELS = [("c2cuda/matmul_f32", "register_blocked_64x64"), ("c2cuda/matmul_f64", "register_blocked_64x64"),
                ("c2cuda/conv1d_f32", "smem_register_blocked"), ("c2cuda/transpose_f32", "smem_tile_padded")]
BLOCKS = (32, 64, 96, 128, 160, 256, 384, 512, 640, 768, 1024)
DYNAMIC = (0, 1, 4096, 48 * 1024, 64 * 1024, 100 * 1024, 200 * 1024)


class Driver:
    """The few CUDA driver calls the test needs."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            pytest.skip("no NVIDIA driver (libcuda.so.1 not found)")
        if self.lib.cuInit(0) != 0:
            pytest.skip("cuInit failed: no usable GPU")
        self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
            ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        self.device = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self.device), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(code: int, what: str) -> None:
        assert code == 0, f"{what} failed with CUresult {code}"

    def attribute(self, attr: int) -> int:
        value = ctypes.c_int()
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), attr, self.device), f"attribute {attr}")
        return value.value

    def function(self, cubin: str, name: str) -> ctypes.c_void_p:
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        image = Path(cubin).read_bytes()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode()), name)
        return function

    def func_attribute(self, function: ctypes.c_void_p, attr: int) -> int:
        value = ctypes.c_int()
        self.check(self.lib.cuFuncGetAttribute(ctypes.byref(value), attr, function), f"func attribute {attr}")
        return value.value

    def max_active_blocks(self, function: ctypes.c_void_p, threads: int, dynamic: int) -> int:
        if dynamic > 48 * 1024:
            self.check(self.lib.cuFuncSetAttribute(function, FUNC_MAX_DYNAMIC_SHARED, dynamic), "opt in")
        blocks = ctypes.c_int()
        self.check(self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(blocks), function, threads, dynamic), "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return blocks.value


@pytest.fixture(scope="module")
def driver() -> Driver:
    return Driver()


@pytest.fixture(scope="module")
def arch(driver: Driver) -> str:
    name = f"sm_{driver.attribute(ATTR_MAJOR)}{driver.attribute(ATTR_MINOR)}"
    if name not in ARCHS:
        pytest.skip(f"no occupancy table for this GPU's {name}")
    return name


def test_the_table_matches_the_device(driver: Driver, arch: str):
    limits = arch_limits(arch)
    assert driver.attribute(ATTR_MAX_THREADS_PER_SM) == limits.max_threads_per_sm
    assert driver.attribute(ATTR_REGS_PER_SM) == limits.regs_per_sm
    assert driver.attribute(ATTR_SMEM_PER_SM) == limits.smem_per_sm
    assert driver.attribute(ATTR_SMEM_OPTIN) == limits.smem_per_block_optin
    assert driver.attribute(ATTR_BLOCKS_PER_SM) == limits.max_blocks_per_sm
    assert driver.attribute(ATTR_SMEM_RESERVED) == limits.smem_reserved_per_block


def kernels(arch: str) -> Iterator[tuple[str, str, object]]:
    """``(label, cubin, ptxas resources)`` for every test kernel."""
    for label, source in SOURCES.items():
        report = compile_check(source, arch=arch)
        assert report.ok and report.cubin, report.log
        yield label, str(report.cubin), report.kernels[0]
    tasks = load_tasks()
    for task_id, impl in TASK_KERNELS:
        report = compile_check(wrap(tasks[task_id], tasks[task_id].implementation(impl).source), arch=arch)
        assert report.ok and report.cubin, report.log
        for resources in report.kernels:
            yield f"{task_id}:{kernel_name(resources.name)}", str(report.cubin), resources


def mangled(cubin: str, label: str, resources) -> str:
    if ":" not in label:
        return resources.name  # extern "C": several labels share one kernel name
    histogram = sass_histogram(cubin)
    assert histogram, "the SASS histogram lists the cubin's functions"
    want = label.split(":")[1]
    return next(name for name in histogram if kernel_name(name) == want)


def test_occupancy_equals_the_cuda_occupancy_api(driver: Driver, arch: str):
    checked, mismatches = 0, []
    labels = set()
    for label, cubin, res in kernels(arch):
        function = driver.function(cubin, mangled(cubin, label, res))
        assert driver.func_attribute(function, FUNC_REGS) == res.registers, f"{label}: registers"
        assert driver.func_attribute(function, FUNC_SHARED) == res.shared_bytes, f"{label}: static shared memory"
        max_threads = driver.func_attribute(function, FUNC_MAX_THREADS)
        for threads in BLOCKS:
            if threads > max_threads:
                continue
            for dynamic in DYNAMIC if label == "dynamic" else (0,):
                if res.shared_bytes + dynamic > arch_limits(arch).smem_per_block_optin:
                    continue
                want = driver.max_active_blocks(function, threads, dynamic)
                got = occupancy(threads, res.registers, res.shared_bytes, dynamic, res.barriers, arch).blocks
                checked += 1
                labels.add(label)
                if got != want:
                    mismatches.append(f"{label} threads={threads} dynamic={dynamic} regs={res.registers} "
                                      f"smem={res.shared_bytes} barriers={res.barriers}: ours {got}, CUDA {want}")
    assert len(labels) >= 10 and checked >= 60
    assert not mismatches, "\n".join(mismatches)
