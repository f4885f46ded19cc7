"""The L2 flush before every timed call evicts, and the reading flush leaves no dirty lines.

A kernel reads a 16 MB buffer (well inside the H200's 50 MB L2) once per call. Without
a flush it reads from L2; after either flush it must read from DRAM. After the memset
flush the L2 is full of dirty lines, so the same read also pays their write-back; after
the reading flush it does not. Times of a few microseconds: run it alone on the card (beside
three other test processes on an H200 the memset flush once measured like no flush; alone it
passes, H100 2026-12-07: 8.8 / 11.8 / 14.5 us; docs/gpu-backend.md).
"""

import ctypes
import statistics
import subprocess

import pytest

from cudaperf_env.backends.cuda.backend import detect_arch
from cudaperf_env.toolchain import tools

pytestmark = pytest.mark.gpu

READER = r"""
#include <cuda_runtime.h>
__global__ void read_all(const float4* p, size_t n, float* sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    acc += p[i].x + p[i].y + p[i].z + p[i].w;
  if (acc == 1234.5f) *sink = acc;
}
extern "C" int read_call(void** argv, char* err, int err_len) {
  read_all<<<528, 512>>>((const float4*)argv[0], *(size_t*)argv[1] / sizeof(float4), (float*)argv[0]);
  return (int)cudaGetLastError();
}
"""


def median_ms(h, fn, argv, flush: int, calls: int = 41) -> float:
    ms, wall, err = ctypes.c_float(), ctypes.c_double(), ctypes.create_string_buffer(512)
    times = []
    for _ in range(calls):
        assert h.cph_timed_call(fn, argv, flush, ctypes.byref(ms), ctypes.byref(wall), err, 512) == 0, err.value
        times.append(ms.value)
    return statistics.median(times[1:])


def test_reading_flush_evicts_and_leaves_l2_clean(harness, tmp_path):
    lib = tmp_path / "reader.so"
    src = tmp_path / "reader.cu"
    src.write_text(READER)
    subprocess.run([tools.nvcc(), f"-arch={detect_arch()}", "-shared", "-Xcompiler", "-fPIC", "-o", str(lib),
                    str(src)], check=True, capture_output=True)  # fmt: skip
    fn = ctypes.CDLL(str(lib)).read_call
    nbytes = 16 << 20
    dev, err = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    assert harness.cph_alloc(ctypes.c_size_t(nbytes), ctypes.c_size_t(0), ctypes.byref(dev), err, 512) == 0
    assert harness.cph_memset(dev, 0, ctypes.c_size_t(nbytes), err, 512) == 0
    size = ctypes.c_size_t(nbytes)
    argv = (ctypes.c_void_p * 2)(dev.value, ctypes.cast(ctypes.pointer(size), ctypes.c_void_p))
    times = {}
    for mode, read in (("write", 0), ("read", 1)):
        assert harness.cph_flush_setup(ctypes.c_size_t(256 << 20), read, err, 512) == 0, err.value
        times[mode] = median_ms(harness, fn, argv, flush=1)
    times["none"] = median_ms(harness, fn, argv, flush=0)
    harness.cph_free(dev)
    print(times)
    assert times["read"] > 1.15 * times["none"], times  # evicted: the reads go to DRAM
    assert times["write"] > 1.05 * times["read"], times  # dirty lines written back inside the timed call
