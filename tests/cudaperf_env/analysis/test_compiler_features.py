"""Compiler features from the real compile check (nvcc -cubin -Xptxas -v) and the SASS disassembly."""

from __future__ import annotations

import json

import pytest

from cudaperf_env.analysis import analyze, compiler
from cudaperf_env.analysis.compiler import kernel_name, parse_sass, sass_features
from cudaperf_env.toolchain.compile_check import compile_check

LAUNCH = 'extern "C" void run(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }\n'
LOW = """
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
""" + LAUNCH
HIGH = """
constexpr int R = 64;
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
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
""" + LAUNCH
# The same work squeezed into 32 registers (1024 threads, 2 blocks per SM): ptxas spills.
SPILL = HIGH.replace("__global__ void scale", "__global__ void __launch_bounds__(1024, 2) scale")


def checked(source: str):
    report = compile_check(source)
    assert report.ok, report.log
    return report


def test_register_pressure_lowers_occupancy_and_the_hint_names_the_registers():
    low, high = analyze(LOW, checked(LOW)), analyze(HIGH, checked(HIGH))
    low_regs, high_regs = low.value("registers"), high.value("registers")
    assert isinstance(low_regs, int) and isinstance(high_regs, int) and high_regs > 64 > low_regs
    assert low.value("occupancy") == 1.0
    assert high.value("occupancy") < 0.5 and high.value("occupancy_limiter") == "registers"
    assert high.components["occupancy"] < low.components["occupancy"] == 1.0
    assert f"limited by {high_regs} registers per thread" in high.hints[0]
    assert high.hints[0].startswith(f"occupancy {high.value('occupancy'):.0%}")
    assert high.features["registers"].source == "compiler"


def test_spills_are_reported_and_cost_the_resources_component():
    spill = analyze(SPILL, checked(SPILL))
    assert spill.value("spill_bytes") > 0 and spill.value("sass_local_memory") > 0
    assert spill.components["resources"] < 1.0
    assert any(h.startswith("`scale` spills") and "reduce register pressure" in h for h in spill.hints)
    assert analyze(LOW, checked(LOW)).components["resources"] == 1.0


VEC4 = """
__global__ void scale4(int n4, const float4* __restrict__ x, float4* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) { float4 v = x[i]; v.x *= 2; v.y *= 2; v.z *= 2; v.w *= 2; y[i] = v; }
}
"""
SHUFFLE = """
__global__ void total(int n, const float* x, float* out) {
  __shared__ float part[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) { float s = 0; for (int w = 0; w < blockDim.x / 32; ++w) s += part[w]; atomicAdd(out, s); }
}
"""


def test_sass_histogram_sees_128_bit_loads_shuffles_barriers_and_atomics():
    vec, scalar = analyze(VEC4, checked(VEC4)), analyze(LOW, checked(LOW))
    assert vec.value("sass_global_loads_128") == 1 and vec.value("sass_global_stores_128") == 1
    assert vec.value("sass_vector_fraction") == 1.0 and scalar.value("sass_vector_fraction") == 0.0
    assert vec.components["vectorization"] > scalar.components["vectorization"]
    red = analyze(SHUFFLE, checked(SHUFFLE))
    assert red.value("sass_shuffles") >= 5 and red.value("sass_barriers") >= 1
    assert red.value("sass_global_atomics") >= 1 and red.value("ptxas_barriers") == 1
    assert red.value("sass_shared_loads") >= 1 and red.value("sass_fma") == 0


def test_sass_parser_reads_both_listing_formats():
    nvdisasm = """
.text._Z1kPf:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 LDG.E.128.CONSTANT R4, desc[UR6][R2.64] ;
        /*0020*/                   FFMA R0, R4, R5, R6 ;
"""
    cuobjdump = """
		Function : _Z1kPf
        /*0000*/                   SHFL.DOWN PT, R7, R6, 0x10, 0x1f ;   /* 0x0000000000077919 */
        /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;       /* 0x0000000000007b1d */
"""
    assert parse_sass(nvdisasm) == {"_Z1kPf": {"LDC": 1, "LDG.E.128.CONSTANT": 1, "FFMA": 1}}
    assert parse_sass(cuobjdump) == {"_Z1kPf": {"SHFL.DOWN": 1, "BAR.SYNC.DEFER_BLOCKING": 1}}
    counts = sass_features(parse_sass(nvdisasm))
    assert counts["sass_global_loads_128"] == 1 and counts["sass_fma"] == 1 and counts["sass_instructions"] == 3


def test_kernel_names_from_ptxas():
    assert kernel_name("scale(float const*, float*, int)") == "scale"
    assert kernel_name("void spmv_group<4>(int, int const*)") == "spmv_group"
    assert kernel_name("ns::k(float*)") == "k"
    assert kernel_name("_Z6kernelPfS_i") == "kernel"


def test_missing_disassembler_leaves_out_the_sass_features_the_decoder_cannot_read(monkeypatch, tmp_path):
    report = checked(VEC4)
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path))  # no cached histogram
    monkeypatch.setattr(compiler, "find_tool", lambda name: None)
    assert analyze(VEC4, report).value("sass_global_loads_128") == 1  # read from the instruction words
    monkeypatch.setattr(compiler, "decode_histogram", lambda data: None)  # as for an architecture without tables
    result = analyze(VEC4, report)
    assert result.value("registers") is not None and result.value("sass_instructions") is None
    assert result.components["vectorization"] == 1.0  # falls back to the static share of float4 sites


def test_disassembled_histograms_are_cached_by_cubin_content(monkeypatch, tmp_path):
    report = checked(SHUFFLE)
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "decode_histogram", lambda data: None)  # decoded ones cost less than the cache
    first = compiler.sass_histogram(report.cubin)
    assert first is not None and len(list(tmp_path.glob("sass/*.json"))) == 1
    monkeypatch.setattr(compiler, "_disassemble", lambda cubin: pytest.fail("should come from the cache"))
    assert compiler.sass_histogram(report.cubin) == first
    assert compiler.sass_histogram(str(tmp_path / "missing.cubin")) is None


def test_failed_compile_gives_static_features_only():
    broken = "__global__ void k(float* x) { x[threadIdx.x] = undefined_name; }"
    report = compile_check(broken)
    assert not report.ok
    result = analyze(broken, report)
    assert {f.source for f in result.features.values()} == {"static"}
    assert json.loads(json.dumps(result.as_dict()))["features"]["kernels"] == {"value": 1, "source": "static"}
