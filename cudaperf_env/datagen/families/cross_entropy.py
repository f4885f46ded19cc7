"""Classification losses per row of logits with integer labels: cross-entropy, label smoothing, focal, hinge.

Every row needs its log-sum-exp (or hinge sum) over the classes and the logit of its label: a row-wise
reduction that gathers one element by an index. Rows whose label is -1 are ignored (loss 0, and left out
of the mean). The kernels keep an online (max, sum of exp) pair, merged across threads, warps or a block.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import spell

# loss of a row from lse (log-sum-exp of z), zl (the label's z), sum (of z over the row), hinge, c (classes).
LOSSES = {
    "ce": "lse - zl",
    "smoothed": "(1.0f - $eps) * (lse - zl) + $eps * (lse - sum / c)",
    "focal": "-(1.0f - expf(zl - lse)) * (1.0f - expf(zl - lse)) * (zl - lse)",
    "hinge": "hinge",
    "label_prob": "expf(zl - lse)",
}
# z = the scaled logit of a raw logit v.
SCALINGS = {"plain": "v", "temperature": "v * $inv_t"}
STRUCTURES = grid(sorted(LOSSES), ("per_row", "mean"), (False, True), ("float32", "float64"), sorted(SCALINGS))
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-12}}


def cross_entropy(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[r] (or the mean over counted rows) = loss(logits row r, labels[r])."""
    loss, output, ignore, dtype, scaling = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    consts = {"eps": lit(float(rng.uniform(0.05, 0.3)), "float32"),
              "inv_t": lit(float(rng.uniform(0.3, 2.0)), "float32")}
    kw = {"T": t, "z": spell(fill(SCALINGS[scaling], **consts), dtype),
          "loss": spell(fill(LOSSES[loss], **consts), dtype),
          "exp": spell("expf", dtype), "log": spell("logf", dtype), "fmax": spell("fmaxf", dtype),
          "skip": "if (label < 0) return 0;\n  " if ignore else ""}  # fmt: skip
    head = fill(_HEAD, **kw) + (_MEAN_KERNEL if output == "mean" else "")
    dst = "dst" if output == "mean" else "out"
    kw.update(alloc=_ALLOC if output == "mean" else "", finish=_FINISH_MEAN if output == "mean" else "", dst=dst)
    impls = [
        impl("naive", ["thread-per-row", "online-softmax"], head + fill(_THREAD, **kw)),
        impl("warp_per_row", ["warp-per-row", "warp-shuffle", "online-softmax", "coalesced"], head + fill(_WARP, **kw)),
        impl("block_per_row", ["block-per-row", "shared-memory", "tree-reduction", "online-softmax", "coalesced"],
             head + fill(_BLOCK, **kw)),
    ]
    low = -1 if ignore else 0
    args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C"),
            buffer("x", "in", dtype, ["R", "C"], {"dist": "normal", "mean": 0, "std": 2}),
            buffer("labels", "in", "int32", ["R"], {"dist": "randint", "low": low, "high": "C"}),
            buffer("out", "out", dtype, ["R"] if output == "per_row" else [1])]  # fmt: skip
    reference = fill(_REF_ROW, **kw) + fill(_REF_MEAN if output == "mean" else _REF_PER_ROW, **kw)
    what = "out[r] = loss(r)" if output == "per_row" else \
        "out[0] = the mean of loss(r) over the rows whose label is not -1 (0 when there is none)"  # fmt: skip
    return task(
        name=f"cross_entropy_{loss}", family="cross_entropy", entry="cross_entropy", args=args,
        description=f"Classification loss '{loss}' over a rows x cols row-major {dtype} matrix of logits x with "
        f"labels[r] in [{low}, cols): with z_j = {kw['z']} for v = x[r][j], lse = log(sum_j exp(z_j)), zl = z at "
        f"j = labels[r], sum = sum_j z_j, hinge = sum over j != labels[r] of max(0, 1 + z_j - zl) and c = cols, "
        f"loss(r) = {kw['loss']}{' (0 when labels[r] is -1)' if ignore else ''}; {what}.",
        configs=[{"R": 4, "C": 10}, {"R": 33, "C": 257}, {"R": 128, "C": 1000}], hidden=[{"R": 77, "C": 301}],
        perf=[{"R": 16384, "C": 8192}, {"R": 4096, "C": 32001}], reference=reference, implementations=impls,
        tolerance=_TOL[dtype],
    )  # fmt: skip


_REF_ROW = """#include <math.h>
static $T scaled($T v) { return $z; }
static $T row_loss(const $T* xr, int c, int label) {
  ${skip}$T m = -INFINITY, s = 0, sum = 0, hinge = 0, zl = scaled(xr[label]);
  for (int j = 0; j < c; ++j) m = $fmax(m, scaled(xr[j]));
  for (int j = 0; j < c; ++j) {
    $T z = scaled(xr[j]);
    s += $exp(z - m);
    sum += z;
    if (j != label) hinge += $fmax(($T)0, 1 + z - zl);
  }
  $T lse = m + $log(s);
  return $loss;
}
"""
_REF_PER_ROW = """void cross_entropy(int rows, int cols, const $T* x, const int* labels, $T* out) {
  for (int r = 0; r < rows; ++r) out[r] = row_loss(x + (long)r * cols, cols, labels[r]);
}
"""
_REF_MEAN = """void cross_entropy(int rows, int cols, const $T* x, const int* labels, $T* out) {
  double total = 0;
  int counted = 0;
  for (int r = 0; r < rows; ++r) {
    if (labels[r] < 0) continue;
    total += row_loss(x + (long)r * cols, cols, labels[r]);
    ++counted;
  }
  out[0] = counted ? ($T)(total / counted) : ($T)0;
}
"""
# Online statistics of a row: m = max z, s = sum of exp(z - m), sum of z, hinge sum; merged in any order.
_HEAD = """#include <math.h>
typedef $T T;
__device__ __forceinline__ T scaled(T v) { return $z; }
struct Acc { T m, s, sum, hinge; };
__device__ __forceinline__ Acc acc_start() { return Acc{-INFINITY, 0, 0, 0}; }
__device__ __forceinline__ void acc_add(Acc& a, T z, T zl, bool other) {
  if (z > a.m) { a.s = a.s * $exp(a.m - z) + 1; a.m = z; } else { a.s += $exp(z - a.m); }
  a.sum += z;
  if (other) a.hinge += $fmax((T)0, 1 + z - zl);
}
__device__ __forceinline__ void acc_merge(Acc& a, const Acc& b) {
  if (b.m == -INFINITY) return;
  if (a.m == -INFINITY) { a = b; return; }
  T m = $fmax(a.m, b.m);
  a.s = a.s * $exp(a.m - m) + b.s * $exp(b.m - m);
  a.m = m;
  a.sum += b.sum;
  a.hinge += b.hinge;
}
__device__ __forceinline__ Acc acc_shfl(const Acc& a, int off) {
  return Acc{__shfl_xor_sync(0xffffffffu, a.m, off), __shfl_xor_sync(0xffffffffu, a.s, off),
             __shfl_xor_sync(0xffffffffu, a.sum, off), __shfl_xor_sync(0xffffffffu, a.hinge, off)};
}
__device__ __forceinline__ T loss_of(const Acc& a, T zl, int c, int label) {
  ${skip}T lse = a.m + $log(a.s), sum = a.sum, hinge = a.hinge;
  return $loss;
}
"""
_ALLOC = """  T* dst;  // per-row losses, averaged by mean_kernel
  cudaMalloc(&dst, sizeof(T) * rows);
"""
_FINISH_MEAN = """  mean_kernel<<<1, 256>>>(rows, labels, dst, out);
  cudaFree(dst);
"""
_MEAN_KERNEL = """
// One block averages the per-row losses of the rows whose label is not -1.
__global__ void mean_kernel(int rows, const int* labels, const T* loss, T* out) {
  __shared__ double total[256];
  __shared__ int counted[256];
  double t = 0;
  int k = 0;
  for (int r = threadIdx.x; r < rows; r += 256)
    if (labels[r] >= 0) { t += loss[r]; ++k; }
  total[threadIdx.x] = t;
  counted[threadIdx.x] = k;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      total[threadIdx.x] += total[threadIdx.x + half];
      counted[threadIdx.x] += counted[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = counted[0] ? (T)(total[0] / counted[0]) : (T)0;
}
"""
_THREAD = """
// One thread per row: a single pass with the online (max, sum of exp) pair.
__global__ void loss_kernel(int rows, int cols, const T* x, const int* labels, T* dst) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const T* xr = x + (long)r * cols;
  int label = labels[r];
  T zl = scaled(xr[label < 0 ? 0 : label]);
  Acc a = acc_start();
  for (int j = 0; j < cols; ++j) acc_add(a, scaled(xr[j]), zl, j != label);
  dst[r] = loss_of(a, zl, cols, label);
}
extern "C" void cross_entropy(int rows, int cols, const T* x, const int* labels, T* out) {
$alloc  loss_kernel<<<(rows + 127) / 128, 128>>>(rows, cols, x, labels, $dst);
$finish}
"""
_WARP = """
// One warp per row: lanes stride the row (coalesced), butterfly shuffles merge the lanes' statistics.
__global__ void loss_kernel(int rows, int cols, const T* x, const int* labels, T* dst) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= rows) return;  // uniform per warp
  const T* xr = x + (long)r * cols;
  int label = labels[r];
  T zl = scaled(xr[label < 0 ? 0 : label]);
  Acc a = acc_start();
  for (int j = lane; j < cols; j += 32) acc_add(a, scaled(xr[j]), zl, j != label);
  for (int off = 16; off > 0; off /= 2) acc_merge(a, acc_shfl(a, off));
  if (lane == 0) dst[r] = loss_of(a, zl, cols, label);
}
extern "C" void cross_entropy(int rows, int cols, const T* x, const int* labels, T* out) {
$alloc  loss_kernel<<<(rows + 7) / 8, 256>>>(rows, cols, x, labels, $dst);
$finish}
"""
_BLOCK = """
// One block of 256 threads per row: strided accumulation, then a tree merge in shared memory.
constexpr int THREADS = 256;
__global__ void loss_kernel(int rows, int cols, const T* x, const int* labels, T* dst) {
  __shared__ Acc part[THREADS];
  int r = blockIdx.x;
  const T* xr = x + (long)r * cols;
  int label = labels[r];
  T zl = scaled(xr[label < 0 ? 0 : label]);
  Acc a = acc_start();
  for (int j = threadIdx.x; j < cols; j += THREADS) acc_add(a, scaled(xr[j]), zl, j != label);
  part[threadIdx.x] = a;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) acc_merge(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) dst[r] = loss_of(part[0], zl, cols, label);
}
extern "C" void cross_entropy(int rows, int cols, const T* x, const int* labels, T* out) {
$alloc  loss_kernel<<<rows, THREADS>>>(rows, cols, x, labels, $dst);
$finish}
"""
