"""Stream compaction by a predicate: order-keeping select, select of indices, or a two-ended partition."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import to_double

FLOAT_PRED = ("v > 0.0f", "fabsf(v) > 1.0f", "v > -0.5f && v < 0.5f", "sinf(3.0f * v) > 0.2f",
              "v * v - v < 0.5f", "floorf(v * 2.0f) == 1.0f || v < -1.5f", "fabsf(v) < 0.25f || fabsf(v) > 2.0f",
              "v > 1.0f || (v < 0.0f && v > -1.0f)", "fmodf(fabsf(v), 1.0f) < 0.5f", "(int)(v * 4.0f) % 2 == 0")
INT_PRED = ("v % 3 == 0", "(v & 4) != 0", "v > 500", "v % 7 < 3", "((v ^ (v >> 3)) & 1) == 1",
            "v < 200 || v >= 900", "(v >> 2) % 3 == 1", "v > 300 && v < 600", "(v & 12) == 8", "v * v % 10 < 5")
# mode -> (what is written for a kept element, output dtype or None for x's, tail fill, description)
MODES = {
    "select": ("v", None, "0", "the kept elements of x, in order, then zeros"),
    "select_index": ("i", "int32", "-1", "the indices i of the kept elements, in increasing order, then -1"),
    "partition": ("v", None, "", "the kept elements of x in order, then the rejected ones in reverse order "
                  "(rejected element number r, counting from 0 in input order, goes to out[n - 1 - r])"),
}  # fmt: skip


STRUCTURES = grid(("float32", "float64"), sorted(MODES), FLOAT_PRED) + grid(("int32",), sorted(MODES), INT_PRED)


def compact(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out = x's elements (or indices) passing keep(x[i]), order kept; count[0] = how many passed."""
    dtype, mode, pred = nth(variant, STRUCTURES)
    if dtype == "float64":
        pred = to_double(pred)
    value, out_dtype, fill_v, what = MODES[mode]
    t, ot = CTYPE[dtype], CTYPE[out_dtype or dtype]
    sig = f"int n, const {t}* x, {ot}* out, int* count"
    if mode == "partition":
        body = "  int c = 0, r = 0;\n  for (int i = 0; i < n; ++i) {\n    if (keep(x[i])) out[c++] = x[i];\n" \
               "    else out[n - 1 - r++] = x[i];\n  }"  # fmt: skip
    else:
        body = fill("  int c = 0;\n  for (int i = 0; i < n; ++i)\n    if (keep(x[i])) out[c++] = $val;\n"
                    "  for (int i = c; i < n; ++i) out[i] = $fill;", val="x[i]" if value == "v" else "i",
                    fill=fill_v)  # fmt: skip
    reference = fill("#include <math.h>\nstatic int keep($T v) { return $pred; }\nvoid compact($sig) {\n"
                     "$body\n  count[0] = c;\n}", T=t, pred=pred, sig=sig, body=body)  # fmt: skip
    place = ("out[keep_flag ? kb : n - 1 - (i - kb)] = v;" if mode == "partition"
             else f"if (keep_flag) out[kb] = {value};")  # fmt: skip
    head = fill(
        """#include <math.h>
typedef $T T;
typedef $OT OT;
__device__ __forceinline__ bool keep(T v) { return $pred; }
// Element i (value v, kept or not) with kb kept elements before it goes to its place in out.
__device__ __forceinline__ void place(int n, OT* out, int i, T v, bool keep_flag, int kb) { $place }
""",
        T=t, OT=ot, pred=pred, place=place,
    )
    tail = "" if mode == "partition" else \
        "zero_tail<<<min((n + 255) / 256, 1024), 256>>>(n, count, out);  // the rest of out: the fill value"
    tail_kernel = "" if mode == "partition" else fill(_TAIL, fill=fill_v)
    kw = {"sig": sig, "tail": tail}
    impls = [
        impl("naive", ["shared-memory", "hillis-steele", "serial-block-scan", "atomics"],
             head + tail_kernel + fill(_NAIVE, **kw)),
        impl("ballot_tiles", ["warp-ballot", "reduce-then-scan", "multi-element-per-thread", "coalesced"],
             head + tail_kernel + _WARP + fill(_BALLOT, **kw)),
        impl("decoupled_lookback", ["decoupled-lookback", "single-pass", "warp-ballot", "multi-element-per-thread"],
             head + tail_kernel + _WARP + fill(_LOOKBACK, **kw)),
    ]
    init = {"dist": "randint", "low": 0, "high": 1000} if dtype == "int32" else None
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N"], init),
            buffer("out", "out", out_dtype or dtype, ["N"]), buffer("count", "out", "int32", [1])]  # fmt: skip
    return task(
        name="compaction", family="compaction", entry="compact", args=args,
        description=f"Stream compaction of n {dtype} values by keep(v) = {pred}: out (length n) holds {what}; "
        "count[0] = number of kept elements.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65537}], hidden=[{"N": 30011}], perf=[{"N": 1 << 25}],
        reference=reference, implementations=impls,
    )


_TAIL = """
__global__ void zero_tail(int n, const int* count, OT* out) {
  for (int i = *count + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = $fill;
}
"""
_NAIVE = """
// 1) kept count per 256-element block (shared atomics), 2) one thread scans the counts,
// 3) each block ranks its flags with a Hillis-Steele scan in shared memory and scatters.
#define B 256

__global__ void count_blocks(int n, const T* x, int* counts) {
  __shared__ int c;
  if (threadIdx.x == 0) c = 0;
  __syncthreads();
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n && keep(x[i])) atomicAdd(&c, 1);
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

__global__ void scan_counts_serial(int blocks, int* counts, int* total) {
  int s = 0;
  for (int b = 0; b < blocks; ++b) {
    int c = counts[b];
    counts[b] = s;
    s += c;
  }
  *total = s;
}

__global__ void scatter_blocks(int n, const T* x, const int* offsets, OT* out) {
  __shared__ int pos[B];
  int t = threadIdx.x, i = blockIdx.x * B + t;
  T v = i < n ? x[i] : (T)0;
  bool k = i < n && keep(v);
  pos[t] = k ? 1 : 0;
  __syncthreads();
  for (int off = 1; off < B; off *= 2) {
    int add = t >= off ? pos[t - off] : 0;
    __syncthreads();
    pos[t] += add;
    __syncthreads();
  }
  if (i < n) place(n, out, i, v, k, offsets[blockIdx.x] + pos[t] - (k ? 1 : 0));
}

extern "C" void compact($sig) {
  int blocks = (n + B - 1) / B;
  int* counts = nullptr;
  cudaMalloc(&counts, blocks * sizeof(int));
  count_blocks<<<blocks, B>>>(n, x, counts);
  scan_counts_serial<<<1, 1>>>(blocks, counts, count);
  scatter_blocks<<<blocks, B>>>(n, x, counts, out);
  $tail
  cudaFree(counts);
}
"""
_WARP = """
// Tiles of 2048 = 8 slices of 256 threads; an element's rank inside its tile comes from per-(slice, warp)
// ballot counts scanned by warp 0 (2 per lane) plus the popcount of the lanes below it.
constexpr int THREADS = 256, ITEMS = 8, TILE = THREADS * ITEMS, WARPS = THREADS / 32;
constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ int warp_inclusive_scan(int v) {
  int lane = threadIdx.x % 32;
  #pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    int other = __shfl_up_sync(FULL, v, off);
    if (lane >= off) v += other;
  }
  return v;
}

// Loads the tile, ballots the flags, leaves the exclusive (slice, warp) prefixes in pre; returns the tile total.
__device__ int rank_tile(int n, const T* __restrict__ x, int base, T* v, unsigned* ballot, int* pre) {
  __shared__ int total;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    v[k] = i < n ? x[i] : (T)0;
    ballot[k] = __ballot_sync(FULL, i < n && keep(v[k]));
    if (lane == 0) pre[k * WARPS + warp] = __popc(ballot[k]);
  }
  __syncthreads();
  if (warp == 0) {
    int a = pre[2 * lane], b = pre[2 * lane + 1];
    int incl = warp_inclusive_scan(a + b);
    pre[2 * lane] = incl - a - b;
    pre[2 * lane + 1] = incl - b;
    if (lane == 31) total = incl;
  }
  __syncthreads();
  return total;
}

__device__ void scatter_tile(int n, int base, int tile_off, const T* v, const unsigned* ballot, const int* pre,
                             OT* out) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned below = (1u << lane) - 1u;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    if (i < n) {
      bool kf = (ballot[k] >> lane) & 1u;
      place(n, out, i, v[k], kf, tile_off + pre[k * WARPS + warp] + __popc(ballot[k] & below));
    }
  }
}
"""
_BALLOT = """
__global__ void tile_counts(int n, const T* __restrict__ x, int* counts) {
  __shared__ int warp_counts[WARPS];
  int base = blockIdx.x * TILE, c = 0;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    c += (i < n && keep(x[i])) ? 1 : 0;
  }
  c = __reduce_add_sync(FULL, c);
  if (threadIdx.x % 32 == 0) warp_counts[threadIdx.x / 32] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int w = 0; w < WARPS; ++w) s += warp_counts[w];
    counts[blockIdx.x] = s;
  }
}

// One block of 1024 threads: exclusive scan of the tile counts in place, chunk by chunk; writes the total.
__global__ void scan_tile_counts(int tiles, int* counts, int* total) {
  __shared__ int warp_sums[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  int carry = 0;
  for (int base = 0; base < tiles; base += blockDim.x) {
    int i = base + threadIdx.x;
    int v = i < tiles ? counts[i] : 0;
    int incl = warp_inclusive_scan(v);
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) warp_sums[lane] = warp_inclusive_scan(lane < nwarps ? warp_sums[lane] : 0);
    __syncthreads();
    int prefix = carry + (warp > 0 ? warp_sums[warp - 1] : 0);
    if (i < tiles) counts[i] = prefix + incl - v;
    carry += warp_sums[nwarps - 1];
    __syncthreads();
  }
  if (threadIdx.x == 0) *total = carry;
}

__global__ void tile_scatter(int n, const T* __restrict__ x, const int* __restrict__ offsets, OT* out) {
  __shared__ int pre[ITEMS * WARPS];
  T v[ITEMS];
  unsigned ballot[ITEMS];
  int base = blockIdx.x * TILE;
  rank_tile(n, x, base, v, ballot, pre);
  scatter_tile(n, base, offsets[blockIdx.x], v, ballot, pre, out);
}

extern "C" void compact($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* counts = nullptr;
  cudaMalloc(&counts, tiles * sizeof(int));
  tile_counts<<<tiles, THREADS>>>(n, x, counts);
  scan_tile_counts<<<1, 1024>>>(tiles, counts, count);
  tile_scatter<<<tiles, THREADS>>>(n, x, counts, out);
  $tail
  cudaFree(counts);
}
"""
_LOOKBACK = """
// Single pass: tiles take ids from a ticket, publish their count (flag 1) or inclusive prefix (flag 2),
// and look back over predecessors for their offset; the last tile writes the total.
__global__ void compact_lookback(int n, const T* __restrict__ x, OT* out, int* count, int* ticket, int* flag,
                                 int* agg, int* pre_sum) {
  __shared__ int pre[ITEMS * WARPS];
  __shared__ int s_id, s_off;
  if (threadIdx.x == 0) s_id = atomicAdd(ticket, 1);
  __syncthreads();
  int b = s_id, base = b * TILE;
  T v[ITEMS];
  unsigned ballot[ITEMS];
  int total = rank_tile(n, x, base, v, ballot, pre);
  if (threadIdx.x == 0) {
    volatile int* vflag = flag;
    volatile int* vagg = agg;
    volatile int* vpre = pre_sum;
    int off = 0;
    if (b > 0) {
      vagg[b] = total;
      __threadfence();
      atomicExch(&flag[b], 1);
      for (int j = b - 1;;) {
        int f = vflag[j];
        if (f == 0) continue;  // predecessor not published yet
        __threadfence();
        if (f == 2) {
          off += vpre[j];
          break;
        }
        off += vagg[j];
        --j;
      }
    }
    vpre[b] = off + total;
    __threadfence();
    atomicExch(&flag[b], 2);
    if (b == gridDim.x - 1) *count = off + total;
    s_off = off;
  }
  __syncthreads();
  scatter_tile(n, base, s_off, v, ballot, pre, out);
}

extern "C" void compact($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* state = nullptr;
  cudaMalloc(&state, (3 * (size_t)tiles + 1) * sizeof(int));
  cudaMemset(state, 0, (tiles + 1) * sizeof(int));  // ticket and flags start at 0
  compact_lookback<<<tiles, THREADS>>>(n, x, out, count, state, state + 1, state + 1 + tiles,
                                       state + 1 + 2 * tiles);
  $tail
  cudaFree(state);
}
"""
