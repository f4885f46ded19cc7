"""Convolutions with a run-time filter: 1-D and 2-D, correlation or flipped, four boundary modes, batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.boundary import read_body
from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

BOUNDS = ("zero", "clamp", "periodic", "valid")
_TOL = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-10}}


STRUCTURES = grid(("float32", "float64"), BOUNDS, (False, True), (False, True), range(len(FLOAT_EPILOGUES)))


def _common(rng: np.random.Generator, variant: int, sizes: tuple[int, ...]) -> tuple[str, str, bool, bool, int, str]:
    """dtype, boundary, flipped filter, batched, filter size and the epilogue of the output."""
    dtype, bound, flip, batched, index = nth(variant, STRUCTURES)
    k = int(pick(rng, sizes))
    if bound != "valid" and k % 2 == 0:
        k += 1
    return dtype, bound, flip, batched, k, float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))


def conv1d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[r][i] = sum_k w[k'] * at(x[r], i + k - off), k' = k or K-1-k, off = K/2 (0 for valid)."""
    dtype, bound, flip, batched, k, epi = _common(rng, variant, (3, 4, 5, 7, 9, 15))
    t, off = CTYPE[dtype], (0 if bound == "valid" else k // 2)
    wi = f"{k - 1} - k" if flip else "k"
    no = f"N - {k - 1}" if bound == "valid" else "N"
    rows = "b" if batched else "1"
    sig = f"int b, int n, int no, const {t}* x, const {t}* w, {t}* y" if batched else \
        f"int n, int no, const {t}* x, const {t}* w, {t}* y"  # fmt: skip
    loop = "for (int r = 0; r < b; ++r)\n    " if batched else ""
    xrow, yi = ("x + (long)r * n", "(long)r * no + i") if batched else ("x", "i")
    at = read_body(bound, t, ["n"], ["i"])
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
static $T at(const $T* x, int n, int i) { $at }
void conv($sig) {
  ${loop}for (int i = 0; i < no; ++i) {
    $T acc = 0;
    for (int k = 0; k < $K; ++k) acc += w[$wi] * at($xrow, n, i + k - $off);
    y[$yi] = epilogue(acc);
  }
}""", T=t, at=at, sig=sig, loop=loop, K=k, wi=wi, off=off, xrow=xrow, yi=yi, epi=epi)  # fmt: skip
    head = fill("""#include <math.h>
typedef $T T;
constexpr int K = $K, OFF = $off;
__device__ __forceinline__ T epilogue(T v) { return $epi; }
__device__ __forceinline__ T at(const T* x, int n, int i) { $at }
__device__ __forceinline__ int widx(int k) { return $wi; }
""", T=t, K=k, off=off, at=at, wi=wi, epi=epi)  # fmt: skip
    kw = {"sig": sig, "rows": rows}
    impls = [
        impl("naive", ["thread-per-output"], head + fill(_C1_NAIVE, **kw)),
        impl("smem_tile", ["shared-memory-tiling", "halo", "coalesced"], head + fill(_C1_SMEM, **kw)),
        impl("const_filter", ["constant-memory", "register-blocking", "multi-element-per-thread"],
             head + fill(_C1_CONST, **kw)),
    ]
    args = [scalar("n", "int32", "N"), scalar("no", "int32", no)]
    xs, ys = (["B", "N"], ["B", no]) if batched else (["N"], [no])
    if batched:
        args.insert(0, scalar("b", "int32", "B"))
    args += [buffer("x", "in", dtype, xs), buffer("w", "in", dtype, [k]), buffer("y", "out", dtype, ys)]
    cfg = (lambda n, b: {"N": n, "B": b}) if batched else (lambda n, b: {"N": n})
    what = "convolution (flipped filter)" if flip else "correlation"
    return task(
        name="conv1d", family="conv1d", entry="conv", args=args,
        description=f"1-D {what} of {'b rows of ' if batched else ''}n {dtype} values with a {k}-tap filter w, "
        f"{bound} boundary: y[i] = epilogue(sum over k < {k} of w[{wi}] * at(x, i + k - {off})) with epilogue(v) = "
        f"{epi}, where at() reads x with the {bound} rule outside [0, n); no = {no.replace('N', 'n')} outputs"
        f"{' per row' if batched else ''}.",
        configs=[cfg(1000, 3), cfg(4097, 2), cfg(65537, 1)], hidden=[cfg(30011, 2)],
        perf=[cfg(1 << 24, 4) if batched else cfg(1 << 25, 1)], reference=reference, implementations=impls,
        tolerance=_TOL[dtype],
    )


_C1_NAIVE = """
__global__ void conv_kernel(int n, int no, const T* x, const T* w, T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (i >= no) return;
  const T* row = x + (long)r * n;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += w[widx(k)] * at(row, n, i + k - OFF);
  y[(long)r * no + i] = epilogue(acc);
}
extern "C" void conv($sig) {
  int rows = $rows;
  conv_kernel<<<dim3((no + 255) / 256, rows), 256>>>(n, no, x, w, y);
}
"""
_C1_SMEM = """
// 256 outputs per block: their input span (plus the K - 1 halo) and the filter are staged in shared memory.
constexpr int THREADS = 256;
__global__ void conv_tile(int n, int no, const T* x, const T* w, T* y) {
  __shared__ T s[THREADS + K - 1];
  __shared__ T sw[K];
  int r = blockIdx.y, base = blockIdx.x * THREADS;
  const T* row = x + (long)r * n;
  for (int j = threadIdx.x; j < THREADS + K - 1; j += THREADS) s[j] = at(row, n, base + j - OFF);
  for (int k = threadIdx.x; k < K; k += THREADS) sw[k] = w[widx(k)];
  __syncthreads();
  int i = base + threadIdx.x;
  if (i >= no) return;
  T acc = 0;
  #pragma unroll
  for (int k = 0; k < K; ++k) acc += sw[k] * s[threadIdx.x + k];
  y[(long)r * no + i] = epilogue(acc);
}
extern "C" void conv($sig) {
  int rows = $rows;
  conv_tile<<<dim3((no + THREADS - 1) / THREADS, rows), THREADS>>>(n, no, x, w, y);
}
"""
_C1_CONST = """
// The filter lives in constant memory (one broadcast read per tap); each thread computes 4 consecutive
// outputs from a register window of 4 + K - 1 inputs.
constexpr int ITEMS = 4;
__constant__ T cw[K];
__global__ void conv_window(int n, int no, const T* x, T* y) {
  int first = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS, r = blockIdx.y;
  if (first >= no) return;
  const T* row = x + (long)r * n;
  T win[ITEMS + K - 1];
  #pragma unroll
  for (int j = 0; j < ITEMS + K - 1; ++j) win[j] = at(row, n, first + j - OFF);
  #pragma unroll
  for (int q = 0; q < ITEMS; ++q) {
    T acc = 0;
    #pragma unroll
    for (int k = 0; k < K; ++k) acc += cw[widx(k)] * win[q + k];
    if (first + q < no) y[(long)r * no + first + q] = epilogue(acc);
  }
}
extern "C" void conv($sig) {
  int rows = $rows;
  cudaMemcpyToSymbol(cw, w, K * sizeof(T), 0, cudaMemcpyDeviceToDevice);
  int threads = (no + ITEMS - 1) / ITEMS;
  conv_window<<<dim3((threads + 127) / 128, rows), 128>>>(n, no, x, y);
}
"""


def conv2d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[c][r][q] = sum_{a,b} w[a'][b'] * at(x[c], r + a - off, q + b - off), flipped or not, four boundaries."""
    dtype, bound, flip, batched, k, epi = _common(rng, variant, (3, 3, 5, 7, 2))
    t, off = CTYPE[dtype], (0 if bound == "valid" else k // 2)
    wi = f"({k - 1} - a) * {k} + ({k - 1} - b)" if flip else f"a * {k} + b"
    ho, wo = (f"H - {k - 1}", f"W - {k - 1}") if bound == "valid" else ("H", "W")
    at = read_body(bound, t, ["h", "w"], ["r", "q"])
    sig = (f"int c, int h, int w, int ho, int wo, const {t}* x, const {t}* f, {t}* y" if batched
           else f"int h, int w, int ho, int wo, const {t}* x, const {t}* f, {t}* y")  # fmt: skip
    loop = "for (int ch = 0; ch < c; ++ch)\n    " if batched else ""
    img = "(long)ch * h * w" if batched else "0"
    out = "(long)ch * ho * wo + " if batched else ""
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
static $T at(const $T* x, int h, int w, int r, int q) { $at }
void conv($sig) {
  ${loop}for (int r = 0; r < ho; ++r)
    for (int q = 0; q < wo; ++q) {
      $T acc = 0;
      for (int a = 0; a < $K; ++a)
        for (int b = 0; b < $K; ++b) acc += f[$wi] * at(x + $img, h, w, r + a - $off, q + b - $off);
      y[${out}(long)r * wo + q] = epilogue(acc);
    }
}""", T=t, at=at, sig=sig, loop=loop, K=k, wi=wi, off=off, img=img, out=out, epi=epi)  # fmt: skip
    head = fill("""#include <math.h>
typedef $T T;
constexpr int K = $K, OFF = $off;
__device__ __forceinline__ T epilogue(T v) { return $epi; }
__device__ __forceinline__ T at(const T* x, int h, int w, int r, int q) { $at }
__device__ __forceinline__ int widx(int a, int b) { return $wi; }
""", T=t, K=k, off=off, at=at, wi=wi, epi=epi)  # fmt: skip
    kw = {"sig": sig, "chans": "c" if batched else "1"}
    impls = [
        impl("naive", ["thread-per-output", "3d-grid"], head + fill(_C2_NAIVE, **kw)),
        impl("smem_tile", ["shared-memory-tiling", "halo", "2d-grid"], head + fill(_C2_SMEM, **kw)),
        impl("const_filter", ["constant-memory", "multi-element-per-thread", "coalesced"],
             head + fill(_C2_CONST, **kw)),
    ]
    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), scalar("ho", "int32", ho),
            scalar("wo", "int32", wo)]  # fmt: skip
    xs, ys = (["C", "H", "W"], ["C", ho, wo]) if batched else (["H", "W"], [ho, wo])
    if batched:
        args.insert(0, scalar("c", "int32", "C"))
    args += [buffer("x", "in", dtype, xs), buffer("f", "in", dtype, [k, k]), buffer("y", "out", dtype, ys)]

    def cfg(h: int, w: int, c: int) -> dict[str, int]:
        return {"H": h, "W": w, "C": c} if batched else {"H": h, "W": w}

    what = "convolution (flipped filter)" if flip else "correlation"
    return task(
        name="conv2d", family="conv2d", entry="conv", args=args,
        description=f"2-D {what} of {'c ' if batched else 'one '}row-major h x w {dtype} image{'s' if batched else ''} "
        f"with a {k}x{k} filter f, {bound} boundary: y[r][q] = epilogue(sum over a, b < {k} of f[{wi}] * "
        f"at(x, r + a - {off}, q + b - {off})) with epilogue(v) = {epi}, where at() reads x with the {bound} rule "
        f"outside the image; "
        f"the output is {ho.replace('H', 'h')} x {wo.replace('W', 'w')}.",
        configs=[cfg(64, 64, 2), cfg(127, 93, 3), cfg(256, 300, 1)], hidden=[cfg(101, 77, 2)],
        perf=[cfg(4096, 4096, 4) if batched else cfg(8192, 8192, 1)], reference=reference, implementations=impls,
        tolerance=_TOL[dtype],
    )


_C2_NAIVE = """
__global__ void conv_kernel(int h, int w, int ho, int wo, const T* x, const T* f, T* y) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y, ch = blockIdx.z;
  if (r >= ho || q >= wo) return;
  const T* img = x + (long)ch * h * w;
  T acc = 0;
  for (int a = 0; a < K; ++a)
    for (int b = 0; b < K; ++b) acc += f[widx(a, b)] * at(img, h, w, r + a - OFF, q + b - OFF);
  y[(long)ch * ho * wo + (long)r * wo + q] = epilogue(acc);
}
extern "C" void conv($sig) {
  dim3 block(16, 16), grid((wo + 15) / 16, (ho + 15) / 16, $chans);
  conv_kernel<<<grid, block>>>(h, w, ho, wo, x, f, y);
}
"""
_C2_SMEM = """
// A 16 x 16 output tile with its (K - 1) halo and the filter staged in shared memory.
constexpr int B = 16, SPAN = B + K - 1;
__global__ void conv_tile(int h, int w, int ho, int wo, const T* x, const T* f, T* y) {
  __shared__ T s[SPAN][SPAN + 1];
  __shared__ T sf[K * K];
  int ch = blockIdx.z, r0 = blockIdx.y * B, q0 = blockIdx.x * B;
  const T* img = x + (long)ch * h * w;
  for (int a = threadIdx.y; a < SPAN; a += B)
    for (int b = threadIdx.x; b < SPAN; b += B) s[a][b] = at(img, h, w, r0 + a - OFF, q0 + b - OFF);
  for (int j = threadIdx.y * B + threadIdx.x; j < K * K; j += B * B) sf[j] = f[widx(j / K, j % K)];
  __syncthreads();
  int r = r0 + threadIdx.y, q = q0 + threadIdx.x;
  if (r >= ho || q >= wo) return;
  T acc = 0;
  #pragma unroll
  for (int a = 0; a < K; ++a)
    #pragma unroll
    for (int b = 0; b < K; ++b) acc += sf[a * K + b] * s[threadIdx.y + a][threadIdx.x + b];
  y[(long)ch * ho * wo + (long)r * wo + q] = epilogue(acc);
}
extern "C" void conv($sig) {
  dim3 block(B, B), grid((wo + B - 1) / B, (ho + B - 1) / B, $chans);
  conv_tile<<<grid, block>>>(h, w, ho, wo, x, f, y);
}
"""
_C2_CONST = """
// The filter in constant memory (broadcast reads); 32-wide rows of threads, each computing 4 rows of a column.
constexpr int ROWS = 4;
__constant__ T cf[K * K];
__global__ void conv_strip(int h, int w, int ho, int wo, const T* x, T* y) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, ch = blockIdx.z;
  int r0 = (blockIdx.y * blockDim.y + threadIdx.y) * ROWS;
  if (q >= wo) return;
  const T* img = x + (long)ch * h * w;
  #pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    int r = r0 + k;
    if (r >= ho) break;
    T acc = 0;
    #pragma unroll
    for (int a = 0; a < K; ++a)
      #pragma unroll
      for (int b = 0; b < K; ++b) acc += cf[widx(a, b)] * at(img, h, w, r + a - OFF, q + b - OFF);
    y[(long)ch * ho * wo + (long)r * wo + q] = epilogue(acc);
  }
}
extern "C" void conv($sig) {
  cudaMemcpyToSymbol(cf, f, K * K * sizeof(T), 0, cudaMemcpyDeviceToDevice);
  dim3 block(32, 4), grid((wo + 31) / 32, (ho + 4 * ROWS - 1) / (4 * ROWS), $chans);
  conv_strip<<<grid, block>>>(h, w, ho, wo, x, y);
}
"""
