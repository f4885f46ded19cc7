"""The SASS histogram read from instruction words equals nvdisasm's listing, class for class."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cudaperf_env.analysis import compiler
from cudaperf_env.analysis.compiler import opcode_class, parse_sass, sass_features
from cudaperf_env.analysis.cubin import decode_histogram, read_cubin
from cudaperf_env.analysis.sass_opcodes import OPCODES
from cudaperf_env.toolchain.compile_check import compile_check

KERNELS = {
    "vector_and_bytes": """
__global__ void copy4(int n, const float4* __restrict__ x, float4* __restrict__ y, const char* c, char* d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float4 v = x[i]; v.x += c[i]; y[i] = v; d[i] = c[i] + 1; }
}
""",
    "reduction_atomics_doubles": """
__device__ __noinline__ double twice(double v) { return 2.0 * v; }
__global__ void total(int n, const double* x, double* out, int* hits) {
  __shared__ double part[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = i < n ? twice(x[i]) : 0.0;
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
  __syncthreads();
  if (__any_sync(0xffffffffu, v > 1.0)) atomicAdd(hits, 1);
  if (threadIdx.x == 0) { double s = 0; for (int w = 0; w < blockDim.x / 32; ++w) s += part[w]; atomicAdd(out, s); }
}
""",
    "half_and_tensor_cores": """
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
__global__ void poly2(int n, __half2 a, const __half2* x, __half2* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 v[8];
  #pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = __hadd2(x[i + k * n], a);
  #pragma unroll
  for (int it = 0; it < 8; ++it) {
    #pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __hfma2(v[k], __hmul2(v[(k + 1) % 8], a), v[(k + 3) % 8]);
  }
  #pragma unroll
  for (int k = 0; k < 8; ++k) y[i + k * n] = v[k];
}
__global__ void tile(const half* a, const half* b, float* c) {
  __shared__ half sa[256];
  sa[threadIdx.x % 256] = a[threadIdx.x % 256];
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, sa, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
""",
    "register_spills": """
__global__ void __launch_bounds__(1024, 2) spill(const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[64];
  #pragma unroll
  for (int r = 0; r < 64; ++r) acc[r] = x[i + r * 32];
  #pragma unroll
  for (int it = 0; it < 4; ++it) {
    #pragma unroll
    for (int r = 0; r < 64; ++r) acc[r] = acc[r] * acc[(r + 7) % 64] + acc[(r + 13) % 64];
  }
  float s = 0.0f;
  #pragma unroll
  for (int r = 0; r < 64; ++r) s += acc[r] * (float)r;
  y[i] = s;
}
""",
}


def cubin_of(source: str) -> str:
    report = compile_check(source)
    assert report.ok and report.cubin, report.log
    return report.cubin


def disassembled(cubin: str) -> dict[str, dict[str, int]]:
    """The histogram by the disassembler, as before the decoder: nvdisasm's listing, then classes."""
    listing = compiler._disassemble(cubin)
    assert listing is not None, "nvdisasm ships with the project (nvidia-cuda-nvdisasm)"
    return {fn: compiler._classes(counts) for fn, counts in parse_sass(listing).items()}


@pytest.mark.parametrize("name", KERNELS)
def test_decoded_histogram_equals_the_disassembly(name):
    cubin = cubin_of(KERNELS[name])
    decoded = decode_histogram(Path(cubin).read_bytes())
    assert decoded is not None, "every instruction nvcc emits for sm_90 here is in the tables"
    assert decoded == disassembled(cubin)


def test_the_kernels_reach_the_instructions_the_features_count():
    seen: Counter[str] = Counter()
    for source in KERNELS.values():
        for counts in (decode_histogram(Path(cubin_of(source)).read_bytes()) or {}).values():
            seen.update(counts)
    for needed in ("LDG.128", "STG.128", "LDG", "STG", "SHFL", "BAR", "LDS", "STS", "LDL", "STL", "HFMA2",
                   "HFMA2.MMA", "HADD2", "DADD", "HMMA", "VOTE"):
        assert seen[needed] > 0, needed
    assert seen["RED"] + seen["REDG"] + seen["ATOMG"] >= 2


def test_functions_are_the_text_sections_of_the_cubin():
    cubin = read_cubin(Path(cubin_of(KERNELS["half_and_tensor_cores"])).read_bytes())
    assert cubin is not None and cubin.arch == "sm_90"
    assert sorted(cubin.functions) == ["_Z4tilePK6__halfS1_Pf", "_Z5poly2i7__half2PKS_PS_"]
    assert all(len(code) % 16 == 0 and code for code in cubin.functions.values())


def test_an_instruction_the_tables_lack_is_disassembled_instead(monkeypatch, tmp_path):
    cubin = cubin_of(KERNELS["vector_and_bytes"])
    decoded = compiler.sass_histogram(cubin)
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path))
    first_word = next(iter(read_cubin(Path(cubin).read_bytes()).functions.values()))  # type: ignore[union-attr]
    monkeypatch.delitem(OPCODES["sm_90"], int.from_bytes(first_word[:8], "little") & 0xFFF)
    assert decode_histogram(Path(cubin).read_bytes()) is None
    assert compiler.sass_histogram(cubin) == decoded
    assert len(list(tmp_path.glob("sass/*.json"))) == 1  # it went through the disassembler


def test_images_that_are_not_cuda_elf_or_of_an_unknown_architecture_are_not_decoded():
    data = Path(cubin_of(KERNELS["vector_and_bytes"])).read_bytes()
    assert read_cubin(b"") is None and read_cubin(b"\x7fELF" + bytes(60)) is None
    assert read_cubin(data[:300]) is None  # section headers cut off
    sm_50 = bytearray(data)
    sm_50[49] = 50  # the architecture byte of e_flags
    assert read_cubin(bytes(sm_50)).arch == "sm_50"  # type: ignore[union-attr]
    assert decode_histogram(bytes(sm_50)) is None


def test_sass_features_read_nothing_but_the_opcode_classes():
    mnemonics = {"_Z1kPf": {
        "LDG.E.128.CONSTANT": 2, "LDG.E.64": 1, "LDG.E.U8": 1, "STG.E.128": 1, "STG.E": 3, "LDS.U.128": 2,
        "LDSM.16.M88.4": 1, "STS.64": 1, "LDL.LU": 2, "STL.128": 1, "SHFL.BFLY": 5, "VOTE.ANY": 1,
        "MATCH.ANY": 1, "REDUX.SUM": 1, "BAR.SYNC.DEFER_BLOCKING": 2, "ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU": 1,
        "REDG.E.ADD.STRONG.GPU": 1, "RED.E.ADD": 1, "ATOMS.ADD": 1, "FFMA.FTZ": 4, "DFMA": 1, "HFMA2": 2,
        "HFMA2.MMA": 3, "HFMA2.MMA.RELU": 1, "MOV": 2, "FADD.FTZ": 1, "HADD2.F32": 1, "IMAD.MOV.U32": 3,
    }}
    classes = {fn: compiler._classes(Counter(counts)) for fn, counts in mnemonics.items()}
    assert classes["_Z1kPf"]["LDG.128"] == 2 and classes["_Z1kPf"]["HFMA2.MMA"] == 4
    assert sass_features(classes) == sass_features(mnemonics)
    assert opcode_class("LDS.U.128") == "LDS" and opcode_class("STG.E.U.128") == "STG.128"
