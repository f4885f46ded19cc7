"""Prefix scans: inclusive or seeded exclusive, of sum / max / min over a mapped int or float input."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import to_double

IDENT = {
    ("sum", "float32"): "0.0f", ("sum", "float64"): "0.0", ("sum", "int32"): "0",
    ("max", "float32"): "-INFINITY", ("max", "float64"): "-INFINITY", ("max", "int32"): "(-2147483647 - 1)",
    ("min", "float32"): "INFINITY", ("min", "float64"): "INFINITY", ("min", "int32"): "2147483647",
}  # fmt: skip
COMB = {"sum": "p + q", "max": "q > p ? q : p", "min": "q < p ? q : p"}
# Element maps g(a); small int inputs (|a| <= 10) keep every int32 prefix sum in range up to 2^24 elements.
INT_ELEM = ("a", "a * a", "abs(a)", "a ^ (a >> 1)", "a % 3", "(a & 3) - 1")
FLOAT_ELEM = ("a", "a * a", "fabsf(a)", "a * 0.5f - 0.25f", "a > 0.0f ? a : 0.1f * a", "sinf(a)")
_INIT = {"int32": {"dist": "randint", "low": -10, "high": 11}, "float32": {"dist": "normal", "mean": 0, "std": 1},
         "float64": {"dist": "normal", "mean": 0, "std": 1}}  # fmt: skip
STRUCTURES = [(d, op, kind, e) for d in ("int32", "float32", "float64") for op in ("sum", "max", "min")
              for kind in ("inclusive", "exclusive") for e in (INT_ELEM if d == "int32" else FLOAT_ELEM)]
_TOL_SUM = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-2}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-9}}
_TOL_EXACT = {"float32": {"rtol": 1.0e-5, "atol": 1.0e-6}, "float64": {"rtol": 1.0e-12, "atol": 1.0e-12}}


def scan(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y = inclusive scan of g(x), or exclusive scan seeded with s0, under sum / max / min."""
    dtype, op, kind, elem = nth(variant, STRUCTURES)
    if dtype == "float64":
        elem = to_double(elem)
    t = CTYPE[dtype]
    acc = "double" if dtype != "int32" and op == "sum" else t
    ident = IDENT[(op, dtype)]
    exclusive = kind == "exclusive"
    sig = f"int n, {t} s0, const {t}* x, {t}* y" if exclusive else f"int n, const {t}* x, {t}* y"
    call_s0 = "s0" if exclusive else "IDENT"
    step = "y[i] = ($T)acc;\n    acc = comb(acc, elem(x[i]));" if exclusive else \
        "acc = comb(acc, elem(x[i]));\n    y[i] = ($T)acc;"  # fmt: skip
    reference = fill(
        """#include <math.h>
#include <stdlib.h>
static $T elem($T a) { return $elem; }
static $A comb($A p, $A q) { return $comb; }
void scan($sig) {
  $A acc = $start;
  for (int i = 0; i < n; ++i) {
    $step
  }
}""",
        T=t, A=acc, elem=elem, comb=COMB[op], sig=sig, start="s0" if exclusive else ident.replace("0.0f", "0.0"),
        step=fill(step, T=t),
    )
    head = fill(
        """#include <math.h>
typedef $T T;
#define IDENT ($ident)
__device__ __forceinline__ T elem(T a) { return $elem; }
__device__ __forceinline__ T comb(T p, T q) { return $comb; }
// The output at i from the inclusive and the exclusive prefix of g(x) at i.
__device__ __forceinline__ T out_of(T incl, T excl, T s0) { return $out; }
""",
        T=t, ident=ident, elem=elem, comb=COMB[op], out="comb(s0, excl)" if exclusive else "incl",
    )
    kw = {"sig": sig, "s0": call_s0}
    impls = [
        impl("naive", ["hillis-steele", "shared-memory", "three-pass"], head + fill(_NAIVE, **kw)),
        impl("reduce_then_scan", ["reduce-then-scan", "warp-shuffle", "multi-element-per-thread", "coalesced"],
             head + _BLOCK_SCAN + fill(_RTS, **kw)),
        impl("decoupled_lookback", ["decoupled-lookback", "single-pass", "warp-shuffle", "multi-element-per-thread"],
             head + _BLOCK_SCAN + fill(_LOOKBACK, **kw)),
    ]
    args = [scalar("n", "int32", "N")]
    if exclusive:
        seed = {"sum": 5, "max": -3, "min": 3}[op]
        args.append(scalar("s0", dtype, seed if dtype == "int32" else seed / 2))
    args += [buffer("x", "in", dtype, ["N"], _INIT[dtype]), buffer("y", "out", dtype, ["N"])]
    sym = {"sum": "+", "max": "max", "min": "min"}[op]
    what = (f"y[0] = s0 and y[i] = s0 {sym} g(x[0]) {sym} ... {sym} g(x[i-1])" if exclusive
            else f"y[i] = g(x[0]) {sym} g(x[1]) {sym} ... {sym} g(x[i])")  # fmt: skip
    tol = (_TOL_SUM if op == "sum" else _TOL_EXACT).get(dtype)
    return task(
        name="scan", family="scan", entry="scan", args=args,
        description=f"{kind.capitalize()} {op}-scan of n {dtype} values: {what}, with g(a) = {elem}. "
        "Any association order is accepted within the tolerance.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65537}], hidden=[{"N": 30011}],
        perf=[{"N": 1 << 24}], reference=reference, implementations=impls, tolerance=tol,
    )


_NAIVE = """
// Hillis-Steele scan of 512-element blocks, one block scanning the block totals, then a fix-up pass.
constexpr int B = 512;

__device__ void hs_scan(T (*buf)[B], int* src) {
  int t = threadIdx.x;
  for (int off = 1; off < B; off *= 2) {
    buf[1 - *src][t] = t >= off ? comb(buf[*src][t - off], buf[*src][t]) : buf[*src][t];
    __syncthreads();
    *src = 1 - *src;
  }
}

__global__ void block_scan(int n, const T* x, T* incl, T* sums) {
  __shared__ T buf[2][B];
  int t = threadIdx.x, i = blockIdx.x * B + t, src = 0;
  buf[0][t] = i < n ? elem(x[i]) : IDENT;
  __syncthreads();
  hs_scan(buf, &src);
  if (i < n) incl[i] = buf[src][t];
  if (t == B - 1) sums[blockIdx.x] = buf[src][t];
}

// One block: exclusive scan of the m block totals in place, B at a time, with a running carry.
__global__ void scan_sums(int m, T* sums) {
  __shared__ T buf[2][B];
  __shared__ T carry;
  int t = threadIdx.x;
  if (t == 0) carry = IDENT;
  for (int base = 0; base < m; base += B) {
    int i = base + t, src = 0;
    buf[0][t] = i < m ? sums[i] : IDENT;
    __syncthreads();
    hs_scan(buf, &src);
    T c = carry, last = buf[src][B - 1];
    if (i < m) sums[i] = t > 0 ? comb(c, buf[src][t - 1]) : c;
    __syncthreads();
    if (t == 0) carry = comb(c, last);
  }
}

__global__ void finalize(int n, T s0, const T* incl, const T* offs, T* y) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  T in = comb(offs[blockIdx.x], incl[i]);
  T ex = i == 0 ? IDENT : comb(offs[(i - 1) / B], incl[i - 1]);
  y[i] = out_of(in, ex, s0);
}

extern "C" void scan($sig) {
  int blocks = (n + B - 1) / B;
  T *incl = nullptr, *sums = nullptr;
  cudaMalloc(&incl, (size_t)n * sizeof(T));
  cudaMalloc(&sums, blocks * sizeof(T));
  block_scan<<<blocks, B>>>(n, x, incl, sums);
  scan_sums<<<1, B>>>(blocks, sums);
  finalize<<<blocks, B>>>(n, $s0, incl, sums, y);
  cudaFree(incl);
  cudaFree(sums);
}
"""
_BLOCK_SCAN = """
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ T warp_inclusive(T v) {
  int lane = threadIdx.x % 32;
  #pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    T other = __shfl_up_sync(FULL, v, off);
    if (lane >= off) v = comb(other, v);
  }
  return v;
}

// Exclusive scan of one value per thread across the block (warp shuffles); *total gets the block total.
__device__ T block_exclusive(T v, T* total) {
  __shared__ T warp_sums[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  T incl = warp_inclusive(v);
  T excl = __shfl_up_sync(FULL, incl, 1);
  if (lane == 0) excl = IDENT;
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) warp_sums[lane] = warp_inclusive(lane < nwarps ? warp_sums[lane] : IDENT);
  __syncthreads();
  T prefix = warp > 0 ? warp_sums[warp - 1] : IDENT;
  *total = warp_sums[nwarps - 1];
  __syncthreads();  // warp_sums is reused by the next call
  return comb(prefix, excl);
}

// Scans the tile staged in smem (ITEMS consecutive per thread) and writes the outputs back into it.
template <int ITEMS>
__device__ void scan_staged(T* tile, T offset, T s0, T* total) {
  T before[ITEMS], run = IDENT;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = threadIdx.x * ITEMS + k;
    before[k] = run;
    run = comb(run, tile[j + j / 32]);
  }
  T base = comb(offset, block_exclusive(run, total));
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = threadIdx.x * ITEMS + k;
    T ex = comb(base, before[k]);
    tile[j + j / 32] = out_of(comb(ex, tile[j + j / 32]), ex, s0);
  }
  __syncthreads();
}
"""
_RTS = """
// Tiles of 2048 (256 threads x 8): tile reductions, one block scans them, each tile is rescanned.
constexpr int THREADS = 256, ITEMS = 8, TILE = THREADS * ITEMS;

__global__ void tile_reduce(int n, const T* __restrict__ x, T* sums) {
  __shared__ T warp_tot[THREADS / 32];
  int base = blockIdx.x * TILE;
  T v = IDENT;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    if (i < n) v = comb(v, elem(x[i]));
  }
  for (int off = 16; off > 0; off /= 2) v = comb(v, __shfl_xor_sync(FULL, v, off));
  if (threadIdx.x % 32 == 0) warp_tot[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    T s = IDENT;
    for (int w = 0; w < THREADS / 32; ++w) s = comb(s, warp_tot[w]);
    sums[blockIdx.x] = s;
  }
}

__global__ void scan_tile_sums(int m, T* sums) {
  T carry = IDENT;
  for (int base = 0; base < m; base += blockDim.x) {
    int i = base + threadIdx.x;
    T total, ex = block_exclusive(i < m ? sums[i] : IDENT, &total);
    if (i < m) sums[i] = comb(carry, ex);
    carry = comb(carry, total);
  }
}

__global__ void scan_tiles(int n, T s0, const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ offs) {
  __shared__ T tile[TILE + TILE / 32];  // one pad word per 32: conflict-free strided access
  int base = blockIdx.x * TILE;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = k * THREADS + threadIdx.x, i = base + j;
    tile[j + j / 32] = i < n ? elem(x[i]) : IDENT;
  }
  __syncthreads();
  T total;
  scan_staged<ITEMS>(tile, offs[blockIdx.x], s0, &total);
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = k * THREADS + threadIdx.x, i = base + j;
    if (i < n) y[i] = tile[j + j / 32];
  }
}

extern "C" void scan($sig) {
  int tiles = (n + TILE - 1) / TILE;
  T* sums = nullptr;
  cudaMalloc(&sums, tiles * sizeof(T));
  tile_reduce<<<tiles, THREADS>>>(n, x, sums);
  scan_tile_sums<<<1, 1024>>>(tiles, sums);
  scan_tiles<<<tiles, THREADS>>>(n, $s0, x, y, sums);
  cudaFree(sums);
}
"""
_LOOKBACK = """
// Single pass: tiles take increasing ids from a ticket counter, publish their aggregate, and look back
// over their predecessors' published aggregates / inclusive prefixes (flag 1 / 2) for their offset.
constexpr int THREADS = 256, ITEMS = 4, TILE = THREADS * ITEMS;

__global__ void scan_lookback(int n, T s0, const T* __restrict__ x, T* __restrict__ y, int* ticket, int* flag,
                              T* agg, T* pre) {
  __shared__ T tile[TILE + TILE / 32];
  __shared__ int s_id;
  __shared__ T s_prefix;
  if (threadIdx.x == 0) s_id = atomicAdd(ticket, 1);
  __syncthreads();
  int b = s_id, base = b * TILE;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = k * THREADS + threadIdx.x, i = base + j;
    tile[j + j / 32] = i < n ? elem(x[i]) : IDENT;
  }
  __syncthreads();
  // Tile aggregate first (a cheap serial + block pass), so the tile can publish before looking back.
  T run = IDENT;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = threadIdx.x * ITEMS + k;
    run = comb(run, tile[j + j / 32]);
  }
  T total;
  block_exclusive(run, &total);
  if (threadIdx.x == 0) {
    volatile int* vflag = flag;
    volatile T* vagg = agg;
    volatile T* vpre = pre;
    T prefix = IDENT;
    if (b == 0) {
      vpre[0] = total;
      __threadfence();
      atomicExch(&flag[0], 2);
    } else {
      vagg[b] = total;
      __threadfence();
      atomicExch(&flag[b], 1);
      for (int j = b - 1;;) {
        int f = vflag[j];
        if (f == 0) continue;  // predecessor not published yet
        __threadfence();
        if (f == 2) {
          prefix = comb(vpre[j], prefix);
          break;
        }
        prefix = comb(vagg[j], prefix);
        --j;
      }
      vpre[b] = comb(prefix, total);
      __threadfence();
      atomicExch(&flag[b], 2);
    }
    s_prefix = prefix;
  }
  __syncthreads();
  scan_staged<ITEMS>(tile, s_prefix, s0, &total);
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int j = k * THREADS + threadIdx.x, i = base + j;
    if (i < n) y[i] = tile[j + j / 32];
  }
}

extern "C" void scan($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* state = nullptr;
  T* vals = nullptr;
  cudaMalloc(&state, (tiles + 1) * sizeof(int));
  cudaMalloc(&vals, 2 * (size_t)tiles * sizeof(T));
  cudaMemset(state, 0, (tiles + 1) * sizeof(int));  // ticket and flags start at 0
  scan_lookback<<<tiles, THREADS>>>(n, $s0, x, y, state, state + 1, vals, vals + tiles);
  cudaFree(state);
  cudaFree(vals);
}
"""
