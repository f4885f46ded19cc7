"""Dense linear algebra: matrix-vector and matrix-matrix products with layouts and epilogues."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-10}}
_EPILOGUES = range(len(FLOAT_EPILOGUES))
MATVEC_STRUCTURES = grid(("float32", "float64"), (False, True), (False, True), _EPILOGUES)
MATMUL_STRUCTURES = grid(("float32", "float64"), ("NN", "TN", "NT", "TT"), (False, True), _EPILOGUES)


def _epilogue(rng: np.random.Generator, dtype: str, index: int) -> str:
    """Epilogue ``index`` of (alpha * acc) for a random alpha and constant."""
    alpha = lit(float(rng.uniform(0.5, 2.0)), dtype)
    return float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)), var=f"({alpha} * acc)")


def matvec(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = epilogue(alpha * sum_k op(A)[i][k] * x[k]) (+ beta * y[i]), op(A) = A (m x k) or A^T (stored k x m)."""
    dtype, trans, accumulate, index = nth(variant, MATVEC_STRUCTURES)
    t = CTYPE[dtype]
    epi = _epilogue(rng, dtype, index)
    a_at = "a[(long)k * m + i]" if trans else "a[(long)i * kdim + k]"
    sig = f"int m, int kdim, {f'{t} beta, ' if accumulate else ''}const {t}* a, const {t}* x, {t}* y"
    kw = {"T": t, "a_at": a_at, "epi": epi, "sig": sig, "call": f"m, kdim, {'beta, ' if accumulate else ''}a, x, y",
          "store": "y[i] = epilogue(acc) + beta * y[i];" if accumulate else "y[i] = epilogue(acc);"}
    head = fill("#include <math.h>\n__device__ __forceinline__ $T epilogue($T acc) { return $epi; }\n", **kw)
    reference = fill("""#include <math.h>
static $T epilogue($T acc) { return $epi; }
void matvec($sig) {
  for (int i = 0; i < m; ++i) {
    $T acc = 0;
    for (int k = 0; k < kdim; ++k) acc += $a_at * x[k];
    $store
  }
}""", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-output"], head + fill(_MV_NAIVE, **kw)),
        impl("warp_per_row", ["warp-per-output", "warp-shuffle", "coalesced" if not trans else "strided"],
             head + fill(_MV_WARP, **kw)),
        impl("smem_x", ["thread-per-output", "shared-memory-tiling"], head + fill(_MV_SMEM, **kw)),
    ]
    shape = ["K", "M"] if trans else ["M", "K"]
    args = [scalar("m", "int32", "M"), scalar("kdim", "int32", "K")]
    if accumulate:
        args.append(scalar("beta", dtype, round(float(rng.uniform(-1.0, 1.0)), 3)))
    args += [buffer("a", "in", dtype, shape), buffer("x", "in", dtype, ["K"]),
             buffer("y", "inout" if accumulate else "out", dtype, ["M"])]  # fmt: skip
    layout = "A is stored k x m (row-major) and used transposed" if trans else "A is m x k row-major"
    return task(
        name="matvec", family="matvec", entry="matvec", args=args,
        description=f"Matrix-vector product ({dtype}): y[i] = epilogue(sum_k A'[i][k] * x[k])"
        f"{' + beta * y[i]' if accumulate else ''} with epilogue(acc) = {epi}; {layout}: A'[i][k] = {a_at}.",
        configs=[{"M": 64, "K": 64}, {"M": 129, "K": 77}, {"M": 512, "K": 300}], hidden=[{"M": 97, "K": 211}],
        perf=[{"M": 16384, "K": 8192}], reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_MV_NAIVE = """
__global__ void matvec_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  $T acc = 0;
  for (int k = 0; k < kdim; ++k) acc += $a_at * x[k];
  $store
}
extern "C" void matvec($sig) {
  matvec_kernel<<<(m + 127) / 128, 128>>>($call);
}
"""
_MV_WARP = """
// One warp per output: lanes split the k loop, shuffles sum the partial dot products.
__global__ void matvec_warp($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= m) return;  // uniform per warp
  $T acc = 0;
  for (int k = lane; k < kdim; k += 32) acc += $a_at * x[k];
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) $store
}
extern "C" void matvec($sig) {
  matvec_warp<<<(m + 7) / 8, 256>>>($call);
}
"""
_MV_SMEM = """
// x is staged in shared memory chunk by chunk; every thread of the block reuses it.
constexpr int THREADS = 256;
__global__ void matvec_smem($sig) {
  __shared__ $T xs[THREADS];
  int i = blockIdx.x * THREADS + threadIdx.x;
  $T acc = 0;
  for (int k0 = 0; k0 < kdim; k0 += THREADS) {
    if (k0 + threadIdx.x < kdim) xs[threadIdx.x] = x[k0 + threadIdx.x];
    __syncthreads();
    int kend = min(THREADS, kdim - k0);
    if (i < m)
      for (int kk = 0; kk < kend; ++kk) {
        int k = k0 + kk;
        acc += $a_at * xs[kk];
      }
    __syncthreads();
  }
  if (i < m) $store
}
extern "C" void matvec($sig) {
  matvec_smem<<<(m + THREADS - 1) / THREADS, THREADS>>>($call);
}
"""


def matmul(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """C = epilogue(alpha * op(A) op(B) (+ bias[j])) for layouts NN / TN / NT / TT and an elementwise epilogue."""
    dtype, layout, biased, index = nth(variant, MATMUL_STRUCTURES)
    t = CTYPE[dtype]
    epi = _epilogue(rng, dtype, index)
    a_at = "a[(long)kk * m + i]" if layout[0] == "T" else "a[(long)i * kdim + kk]"
    b_at = "b[(long)j * kdim + kk]" if layout[1] == "T" else "b[(long)kk * n + j]"
    kw = {"T": t, "epi": epi, "a_at": a_at, "b_at": b_at, "bias": " + bias[j]" if biased else "",
          "sig": f"int m, int n, int kdim, const {t}* a, const {t}* b, {f'const {t}* bias, ' if biased else ''}{t}* c",
          "call": f"m, n, kdim, a, b, {'bias, ' if biased else ''}c"}  # fmt: skip
    head = fill("""#include <math.h>
__device__ __forceinline__ $T epilogue($T acc) { return $epi; }
__device__ __forceinline__ $T load_a(const $T* a, int m, int kdim, int i, int kk) { return $a_at; }
__device__ __forceinline__ $T load_b(const $T* b, int n, int kdim, int kk, int j) { return $b_at; }
""", **kw)  # fmt: skip
    reference = fill("""#include <math.h>
static $T epilogue($T acc) { return $epi; }
void matmul($sig) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      $T acc = 0;
      for (int kk = 0; kk < kdim; ++kk) acc += $a_at * $b_at;
      c[(long)i * n + j] = epilogue(acc$bias);
    }
}""", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-output", "2d-grid"], head + fill(_MM_NAIVE, **kw)),
        impl("smem_tiled", ["shared-memory-tiling"], head + fill(_MM_TILED, **kw)),
        impl("register_blocked", ["shared-memory-tiling", "register-blocking", "multi-element-per-thread"],
             head + fill(_MM_REG, **kw)),
    ]
    a_shape = ["K", "M"] if layout[0] == "T" else ["M", "K"]
    b_shape = ["N", "K"] if layout[1] == "T" else ["K", "N"]
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N"), scalar("kdim", "int32", "K"),
            buffer("a", "in", dtype, a_shape), buffer("b", "in", dtype, b_shape)]
    if biased:
        args.append(buffer("bias", "in", dtype, ["N"]))
    args.append(buffer("c", "out", dtype, ["M", "N"]))
    return task(
        name="matmul", family="matmul", entry="matmul", args=args,
        description=f"Matrix product ({dtype}, layout {layout}): c[i][j] = epilogue(sum_kk A'[i][kk] * B'[kk][j]"
        f"{' + bias[j]' if biased else ''}), "
        f"c is m x n row-major, A'[i][kk] = {a_at}, B'[kk][j] = {b_at}, epilogue(acc) = {epi}.",
        configs=[{"M": 32, "N": 32, "K": 32}, {"M": 65, "N": 47, "K": 33}, {"M": 128, "N": 128, "K": 96}],
        hidden=[{"M": 57, "N": 71, "K": 45}], perf=[{"M": 4096, "N": 4096, "K": 4096}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_MM_NAIVE = """
__global__ void matmul_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  $T acc = 0;
  for (int kk = 0; kk < kdim; ++kk) acc += load_a(a, m, kdim, i, kk) * load_b(b, n, kdim, kk, j);
  c[(long)i * n + j] = epilogue(acc$bias);
}
extern "C" void matmul($sig) {
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  matmul_kernel<<<grid, block>>>($call);
}
"""
_MM_TILED = """
// 16 x 16 tiles of A and B in shared memory; each element is read from global once per tile.
constexpr int TILE = 16;
__global__ void matmul_tiled($sig) {
  __shared__ $T as[TILE][TILE], bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int j = blockIdx.x * TILE + tx, i = blockIdx.y * TILE + ty;
  $T acc = 0;
  for (int k0 = 0; k0 < kdim; k0 += TILE) {
    as[ty][tx] = (i < m && k0 + tx < kdim) ? load_a(a, m, kdim, i, k0 + tx) : ($T)0;
    bs[ty][tx] = (j < n && k0 + ty < kdim) ? load_b(b, n, kdim, k0 + ty, j) : ($T)0;
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (i < m && j < n) c[(long)i * n + j] = epilogue(acc$bias);
}
extern "C" void matmul($sig) {
  dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul_tiled<<<grid, block>>>($call);
}
"""
_MM_REG = """
// 32 x 32 output tiles with 32 x 8 threads: each thread keeps 4 accumulators (rows ty, ty + 8, ...).
constexpr int TILE = 32, ROWS = 8, PER = TILE / ROWS;
__global__ void matmul_reg($sig) {
  __shared__ $T as[TILE][TILE], bs[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int j = blockIdx.x * TILE + tx, i0 = blockIdx.y * TILE;
  $T acc[PER] = {};
  for (int k0 = 0; k0 < kdim; k0 += TILE) {
    for (int r = ty; r < TILE; r += ROWS) {
      int i = i0 + r, kb = k0 + r;
      as[r][tx] = (i < m && k0 + tx < kdim) ? load_a(a, m, kdim, i, k0 + tx) : ($T)0;
      bs[r][tx] = (j < n && kb < kdim) ? load_b(b, n, kdim, kb, j) : ($T)0;
    }
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) {
      $T bv = bs[kk][tx];
      #pragma unroll
      for (int p = 0; p < PER; ++p) acc[p] += as[ty + p * ROWS][kk] * bv;
    }
    __syncthreads();
  }
  #pragma unroll
  for (int p = 0; p < PER; ++p) {
    int i = i0 + ty + p * ROWS;
    if (i < m && j < n) c[(long)i * n + j] = epilogue(acc[p]$bias);
  }
}
extern "C" void matmul($sig) {
  dim3 block(TILE, ROWS), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  matmul_reg<<<grid, block>>>($call);
}
"""
