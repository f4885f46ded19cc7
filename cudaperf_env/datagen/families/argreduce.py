"""Arg-reductions: the index (and value) of the largest or smallest g(x[i]), first or last index on ties."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import to_double

FLOAT_KEYS = ("a", "fabsf(a)", "-fabsf(a - 0.5f)", "sinf(3.0f * a)", "a * a - 2.0f * a", "a * expf(-a * a)",
              "cosf(2.0f * a) * a", "tanhf(a) - 0.3f * a", "a * a * a - a", "fminf(a, 1.5f)", "1.0f / (1.0f + a * a)",
              "fabsf(a) * (a > 0.0f ? 1.0f : 0.5f)")  # fmt: skip
INT_KEYS = ("a", "a % 97", "(a * 7) ^ 1234", "-(a > 500000 ? a - 500000 : 500000 - a)", "(a >> 4) & 4095",
            "a & 0xffff", "(a ^ (a >> 7)) % 1000", "a / 1000", "(a * 13) % 65537", "a > 700000 ? 0 : a")  # fmt: skip
_KEYS = [("float32", k) for k in range(len(FLOAT_KEYS))] + [("float64", k) for k in range(len(FLOAT_KEYS))] + \
    [("int32", k) for k in range(len(INT_KEYS))]  # fmt: skip
# (key, extreme, ties to the first or the last index, also output the extreme value)
STRUCTURES = [(d, k, op, tie, value) for (d, k), op, tie, value in grid(_KEYS, ("max", "min"), ("first", "last"),
                                                                         (False, True))]  # fmt: skip


def argreduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[0] = the first (or last) i with the largest (or smallest) g(x[i]); optionally best[0] = that value."""
    dtype, index, op, tie, value = nth(variant, STRUCTURES)
    key = INT_KEYS[index] if dtype == "int32" else FLOAT_KEYS[index]
    if dtype == "float64":
        key = to_double(key)
    t = CTYPE[dtype]
    cmp = ">" if op == "max" else "<"
    int_init = {"dist": "randint", "low": 0, "high": 1000000}
    init = int_init if dtype == "int32" else {"dist": "normal", "mean": 0, "std": 1}
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N"], init), buffer("out", "out", "int32", [1])]
    if value:
        args.append(buffer("val", "out", dtype, [1]))
    sig = f"int n, const {t}* x, int* out{f', {t}* val' if value else ''}"
    tie_cmp = "<" if tie == "first" else ">"
    reference = fill(
        """#include <math.h>
static $T key($T a) { return $key; }
void argreduce($sig) {
  int best = 0;
  $T best_v = key(x[0]);
  for (int i = 1; i < n; ++i) {
    $T v = key(x[i]);
    if (v $cmp$eq best_v) { best_v = v; best = i; }
  }
  out[0] = best;$store_ref
}""",
        T=t, key=key, sig=sig, cmp=cmp, eq="" if tie == "first" else "=",
        store_ref="\n  val[0] = best_v;" if value else "",
    )
    head = fill(
        """#include <math.h>
constexpr int THREADS = 256;
__device__ __forceinline__ $T key($T a) { return $key; }
// (v, i) beats (bv, bi) when strictly better, or equal with a $which index.
__device__ __forceinline__ bool better($T v, int i, $T bv, int bi) { return v $cmp bv || (v == bv && i $tie bi); }
""",
        T=t, key=key, cmp=cmp, tie=tie_cmp, which="smaller" if tie == "first" else "larger",
    )
    kw = {"T": t, "sig": sig, "val": f", {t}* val" if value else "", "val_arg": ", val" if value else "",
          "store": "out[0] = si[0];" + (" val[0] = sv[0];" if value else "")}
    impls = [
        impl("naive", ["tree-reduction", "shared-memory", "two-pass"], head + fill(_NAIVE, **kw)),
        impl("grid_shuffle", ["grid-stride", "warp-shuffle", "two-pass"], head + fill(_SHUFFLE, **kw)),
        impl("unroll4", ["multi-element-per-thread", "loop-unrolling", "shared-memory"], head + fill(_UNROLL, **kw)),
    ]
    description = (
        f"Arg-{op} of n {dtype} values: out[0] = the {'smallest' if tie == 'first' else 'largest'} index i at which "
        f"g(x[i]) is the {'largest' if op == 'max' else 'smallest'}, with g(a) = {key}"
        + ("; val[0] = that extreme value of g." if value else ".")
    )
    return task(
        name="argreduce", family="argreduce", description=description, entry="argreduce", args=args,
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65536}], hidden=[{"N": 30011}], perf=[{"N": 1 << 25}],
        reference=reference, implementations=impls,
    )


_FINISH = """
// One block combines the per-block winners (better() breaks ties).
__global__ void finish(int m, const $T* pv, const int* pi, int* out$val) {
  __shared__ $T sv[THREADS];
  __shared__ int si[THREADS];
  $T v = pv[0];
  int i = pi[0];
  for (int j = threadIdx.x; j < m; j += THREADS)
    if (better(pv[j], pi[j], v, i)) { v = pv[j]; i = pi[j]; }
  sv[threadIdx.x] = v;
  si[threadIdx.x] = i;
  __syncthreads();
  for (int st = THREADS / 2; st > 0; st /= 2) {
    if (threadIdx.x < st && better(sv[threadIdx.x + st], si[threadIdx.x + st], sv[threadIdx.x], si[threadIdx.x])) {
      sv[threadIdx.x] = sv[threadIdx.x + st];
      si[threadIdx.x] = si[threadIdx.x + st];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) { $store }
}
"""
_LAUNCH = """
extern "C" void argreduce($sig) {
  int blocks = $blocks;
  $T* pv = nullptr;
  int* pi = nullptr;
  cudaMalloc(&pv, blocks * sizeof($T));
  cudaMalloc(&pi, blocks * sizeof(int));
  partials<<<blocks, THREADS>>>(n, x, pv, pi);
  finish<<<1, THREADS>>>(blocks, pv, pi, out$val_arg);
  cudaFree(pv);
  cudaFree(pi);
}
"""
_TREE = """
  sv[threadIdx.x] = v;
  si[threadIdx.x] = best;
  __syncthreads();
  for (int st = THREADS / 2; st > 0; st /= 2) {
    if (threadIdx.x < st && better(sv[threadIdx.x + st], si[threadIdx.x + st], sv[threadIdx.x], si[threadIdx.x])) {
      sv[threadIdx.x] = sv[threadIdx.x + st];
      si[threadIdx.x] = si[threadIdx.x + st];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) { pv[blockIdx.x] = sv[0]; pi[blockIdx.x] = si[0]; }
}
"""
_NAIVE = (
    """
__global__ void partials(int n, const $T* x, $T* pv, int* pi) {
  __shared__ $T sv[THREADS];
  __shared__ int si[THREADS];
  int i = blockIdx.x * THREADS + threadIdx.x;
  int best = i < n ? i : n - 1;  // out-of-range threads repeat the last element
  $T v = key(x[best]);
"""
    + _TREE + _FINISH
    + _LAUNCH.replace("$blocks", "(n + THREADS - 1) / THREADS")
)
_UNROLL = (
    """
constexpr int ITEMS = 4;

__global__ void partials(int n, const $T* x, $T* pv, int* pi) {
  __shared__ $T sv[THREADS];
  __shared__ int si[THREADS];
  int base = blockIdx.x * THREADS * ITEMS + threadIdx.x;
  int best = min(base, n - 1);
  $T v = key(x[best]);
  #pragma unroll
  for (int k = 1; k < ITEMS; ++k) {
    int i = base + k * THREADS;
    if (i < n) {
      $T w = key(x[i]);
      if (better(w, i, v, best)) { v = w; best = i; }
    }
  }
"""
    + _TREE + _FINISH
    + _LAUNCH.replace("$blocks", "(n + THREADS * ITEMS - 1) / (THREADS * ITEMS)")
)
_SHUFFLE = (
    """
// Grid-stride scan in registers, then (value, index) pairs reduced with warp shuffles.
__global__ void partials(int n, const $T* x, $T* pv, int* pi) {
  __shared__ $T wv[THREADS / 32];
  __shared__ int wi[THREADS / 32];
  int tid = blockIdx.x * THREADS + threadIdx.x;
  int best = min(tid, n - 1);
  $T v = key(x[best]);
  for (int i = tid + gridDim.x * THREADS; i < n; i += gridDim.x * THREADS) {
    $T w = key(x[i]);
    if (better(w, i, v, best)) { v = w; best = i; }
  }
  for (int off = 16; off > 0; off /= 2) {
    $T ov = __shfl_down_sync(0xffffffffu, v, off);
    int oi = __shfl_down_sync(0xffffffffu, best, off);
    if (better(ov, oi, v, best)) { v = ov; best = oi; }
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) { wv[warp] = v; wi[warp] = best; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < THREADS / 32; ++w)
      if (better(wv[w], wi[w], v, best)) { v = wv[w]; best = wi[w]; }
    pv[blockIdx.x] = v;
    pi[blockIdx.x] = best;
  }
}
"""
    + _FINISH
    + _LAUNCH.replace("$blocks", "max(1, min((n + THREADS - 1) / THREADS, 512))")
)
