"""Encodings of a sequence: radix digit histograms of order-preserving key bits, and run-length encoding."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, pick, scalar, task

# Order-preserving unsigned key bits of a value v (C spelling, CUDA spelling): unsigned order = value order.
KEY_BITS = {
    "uint32": ("v", "v"),
    "int32": ("(unsigned int)v ^ 0x80000000u", "(unsigned int)v ^ 0x80000000u"),
    "float32": ("float_bits(v) & 0x80000000u ? ~float_bits(v) : float_bits(v) | 0x80000000u",
                "__float_as_uint(v) & 0x80000000u ? ~__float_as_uint(v) : __float_as_uint(v) | 0x80000000u"),
}  # fmt: skip
_OFFSETS = "; offsets[d] is the exclusive prefix sum of hist (the digit start in the sorted pass)"
_KEY_INIT = {"uint32": {"dist": "randint", "low": 0, "high": 4294967296},
             "int32": {"dist": "randint", "low": -2147483648, "high": 2147483648},
             "float32": {"dist": "normal", "mean": 0, "std": 100}}  # fmt: skip


def radix_histogram(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """hist[d] = how many keys have digit d at bit offset shift (and, optionally, the exclusive scan of hist)."""
    dtype, descending, with_offsets = pick(rng, sorted(KEY_BITS)), bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    bits = int(pick(rng, (4, 6, 8)))
    shift = bits * int(rng.integers(0, 32 // bits))
    t, radix = CTYPE[dtype], 1 << bits
    c_key, cu_key = KEY_BITS[dtype]
    flip = "~" if descending else ""
    outs = "int* hist, int* offsets" if with_offsets else "int* hist"
    sig = f"int n, int shift, const {t}* keys, {outs}"
    call = "n, shift, keys, hist" + (", offsets" if with_offsets else "")
    ref_head = fill("""#include <string.h>
#define RADIX $R
static unsigned int float_bits(float f) { unsigned int u; memcpy(&u, &f, sizeof u); return u; }
static int digit($T v, int shift) { unsigned int k = $flip($key); return (int)((k >> shift) & (RADIX - 1)); }
""", R=radix, T=t, flip=flip, key=c_key)  # fmt: skip
    head = fill("""#define RADIX $R
__device__ __forceinline__ int digit($T v, int shift) {
  unsigned int k = $flip($key);
  return (int)((k >> shift) & (RADIX - 1));
}
// Exclusive scan of the finished histogram, by one thread (RADIX is small).
__global__ void offsets_kernel(const int* hist, int* offsets) {
  int run = 0;
  for (int d = 0; d < RADIX; ++d) { offsets[d] = run; run += hist[d]; }
}
""", R=radix, T=t, flip=flip, key=cu_key)  # fmt: skip
    finish = "offsets_kernel<<<1, 1>>>(hist, offsets);" if with_offsets else ""
    ref_finish = "int run = 0;\n  for (int d = 0; d < RADIX; ++d) { offsets[d] = run; run += hist[d]; }" \
        if with_offsets else ""  # fmt: skip
    kw = {"T": t, "sig": sig, "call": call, "finish": finish}
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + fill(_GLOBAL_ATOMICS, **kw)),
        impl("smem_privatized", ["privatization", "shared-memory", "atomics", "grid-stride"],
             head + fill(_PRIVATE, **kw)),
        impl("per_warp_two_pass", ["per-warp-histograms", "shared-memory", "two-pass", "multi-element-per-thread"],
             head + fill(_PER_WARP, **kw)),
    ]  # fmt: skip
    args = [scalar("n", "int32", "N"), scalar("shift", "int32", shift), buffer("keys", "in", dtype, ["N"],
            _KEY_INIT[dtype]), buffer("hist", "out", "int32", [radix])]  # fmt: skip
    if with_offsets:
        args.append(buffer("offsets", "out", "int32", [radix]))
    key_text = {
        "uint32": "k = v",
        "int32": "k = v's bits with the sign bit flipped",
        "float32": "k = the float's bits, all flipped for negative values, else with the sign bit set",
    }[dtype]
    return task(
        name="radix_histogram", family="radix_histogram", entry="radix_histogram", args=args,
        description=f"Digit histogram of one radix-sort pass over n {dtype} keys: the order-preserving 32-bit key "
        f"of v is {key_text}{', then complemented (descending order)' if descending else ''}; its digit is "
        f"(k >> shift) & {radix - 1}. hist[d] ({radix} bins) counts the keys with digit d"
        f"{_OFFSETS if with_offsets else ''}.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 300007}], hidden=[{"N": 30011}],
        perf=[{"N": 1 << 24}, {"N": 1 << 26}], implementations=impls,
        reference=ref_head + fill(_REF, sig=sig, finish=ref_finish),
    )  # fmt: skip


_REF = """
void radix_histogram($sig) {
  for (int d = 0; d < RADIX; ++d) hist[d] = 0;
  for (int i = 0; i < n; ++i) hist[digit(keys[i], shift)] += 1;
  $finish
}
"""
_GLOBAL_ATOMICS = """
// Every key is one atomic increment of the global histogram.
__global__ void hist_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&hist[digit(keys[i], shift)], 1);
}
extern "C" void radix_histogram($sig) {
  cudaMemset(hist, 0, RADIX * sizeof(int));
  hist_kernel<<<(n + 255) / 256, 256>>>($call);
  $finish
}
"""
_PRIVATE = """
// A shared-memory histogram per block over a grid-stride range, merged into the global one at the end.
__global__ void hist_kernel($sig) {
  __shared__ int local[RADIX];
  for (int d = threadIdx.x; d < RADIX; d += blockDim.x) local[d] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[digit(keys[i], shift)], 1);
  __syncthreads();
  for (int d = threadIdx.x; d < RADIX; d += blockDim.x)
    if (local[d]) atomicAdd(&hist[d], local[d]);
}
extern "C" void radix_histogram($sig) {
  cudaMemset(hist, 0, RADIX * sizeof(int));
  hist_kernel<<<min((n + 255) / 256, 512), 256>>>($call);
  $finish
}
"""
_PER_WARP = """
// Pass 1: each warp counts into its own shared histogram (less contention), the block writes its column of
// partial counts; pass 2 sums the columns. No global atomics, a fixed summation order.
constexpr int THREADS = 256, WARPS = THREADS / 32, ITEMS = 16, TILE = THREADS * ITEMS;

__global__ void tile_hist(int n, int shift, const $T* __restrict__ keys, int* partial) {
  __shared__ int local[WARPS][RADIX];
  int warp = threadIdx.x / 32;
  for (int d = threadIdx.x; d < WARPS * RADIX; d += THREADS) local[d / RADIX][d % RADIX] = 0;
  __syncthreads();
  int base = blockIdx.x * TILE;
  #pragma unroll 4
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    if (i < n) atomicAdd(&local[warp][digit(keys[i], shift)], 1);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < RADIX; d += THREADS) {
    int sum = 0;
    for (int w = 0; w < WARPS; ++w) sum += local[w][d];
    partial[(long)blockIdx.x * RADIX + d] = sum;
  }
}
__global__ void sum_columns(int tiles, const int* partial, int* hist) {
  int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= RADIX) return;
  int sum = 0;
  for (int b = 0; b < tiles; ++b) sum += partial[(long)b * RADIX + d];
  hist[d] = sum;
}
extern "C" void radix_histogram($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* partial = nullptr;
  cudaMalloc(&partial, (size_t)max(tiles, 1) * RADIX * sizeof(int));
  if (tiles > 0) tile_hist<<<tiles, THREADS>>>(n, shift, keys, partial);
  sum_columns<<<(RADIX + 127) / 128, 128>>>(tiles, partial, hist);
  $finish
  cudaFree(partial);
}
"""


# Keys whose changes split the input into runs, and what each run emits into which outputs.
RUN_KEYS = ("v", "v / 4", "v >> 1", "v & 12")
RUN_OUTPUTS = {
    "rle": (("vals", "T"), ("lens", "int")),
    "unique": (("vals", "T"),),
    "lengths": (("lens", "int"),),
    "starts": (("starts", "int"),),
}
_EMIT = {"vals": "vals[r] = x[s];", "lens": "lens[r] = e - s;", "starts": "starts[r] = s;"}
_RUN_INIT = ({"dist": "randint", "low": 0, "high": 16}, {"dist": "sorted_randint", "low": 0, "high": "N // 8 + 2"})


def run_length(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Run-length encoding by a key: per run its first value / length / start, zero padding, and the run count."""
    dtype, mode, key = pick(rng, ("int32", "uint8")), pick(rng, sorted(RUN_OUTPUTS)), pick(rng, RUN_KEYS)
    init = pick(rng, _RUN_INIT)
    t = CTYPE[dtype]
    outs = RUN_OUTPUTS[mode]
    oparams = ", ".join(f"{ct.replace('T', t)}* {name}" for name, ct in outs)
    onames = ", ".join(name for name, _ in outs)
    sig = f"int n, const {t}* x, {oparams}, int* count"
    helpers = fill("""typedef $T T;
$Q int run_key(T v) { return $key; }
$Q int is_head(const T* x, int i) { return i == 0 || run_key(x[i]) != run_key(x[i - 1]); }
// Run r starts at s and ends before e.
$Q void emit(int r, int s, int e, const T* x, $op) { (void)x; (void)e; $emit }
$Q void pad(int r, $op) { $pad }
""", Q="$Q", T=t, key=key, op=oparams, emit=" ".join(_EMIT[name] for name, _ in outs),
                   pad=" ".join(f"{name}[r] = 0;" for name, _ in outs))  # fmt: skip
    head = helpers.replace("$Q", "__device__ __forceinline__") + fill(_EMIT_KERNEL, op=oparams, on=onames)
    kw = {"sig": sig, "on": onames, "op": oparams}
    impls = [
        impl("naive", ["head-flags", "single-block-scan", "scatter", "multi-pass"],
             head + _ONE_BLOCK_SCAN + fill(_FLAGS_SCAN, **kw)),
        impl("ballot_tiles", ["warp-ballot", "reduce-then-scan", "stream-compaction", "coalesced"],
             head + _ONE_BLOCK_SCAN + fill(_BALLOT, **kw)),
        impl("chunked_fused", ["multi-element-per-thread", "block-scan", "fused-emit", "two-pass"],
             head + _ONE_BLOCK_SCAN + fill(_CHUNKED, **kw)),
    ]  # fmt: skip
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N"], init),
            *(buffer(name, "out", dtype if ct == "T" else "int32", ["N"]) for name, ct in outs),
            buffer("count", "out", "int32", [1])]  # fmt: skip
    what = {
        "rle": "vals[r] = x[s_r] and lens[r] = its length",
        "unique": "vals[r] = x[s_r]",
        "lengths": "lens[r] = its length",
        "starts": "starts[r] = s_r",
    }[mode]
    return task(
        name="run_length", family="run_length", entry="run_length", args=args,
        description=f"Run-length encoding of n {dtype} values by run_key(v) = {key} (int arithmetic): a run is a "
        f"maximal stretch of consecutive elements with equal keys. For the r-th run (starting at index s_r), "
        f"{what}; entries r >= the number of runs R are 0 (every entry 0..n-1 is written), and count[0] = R.",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 200003}], hidden=[{"N": 30011}],
        perf=[{"N": 1 << 24}, {"N": 1 << 26}], implementations=impls,
        reference=helpers.replace("$Q", "static") + fill(_RLE_REF, **kw),
    )  # fmt: skip


_RLE_REF = """
void run_length($sig) {
  int r = 0;
  for (int i = 0; i < n; ++i) {
    if (!is_head(x, i)) continue;
    int e = i + 1;
    while (e < n && !is_head(x, e)) ++e;
    emit(r++, i, e, x, $on);
  }
  for (int q = r; q < n; ++q) pad(q, $on);
  count[0] = r;
}
"""
_EMIT_KERNEL = """
// Final pass: run r < R spans [heads[r], heads[r + 1]) (n for the last run); slots r >= R are zeroed.
__global__ void emit_kernel(int n, const T* x, const int* heads, const int* total, $op, int* count) {
  int r = blockIdx.x * blockDim.x + threadIdx.x, runs = *total;
  if (r == 0) *count = runs;
  if (r >= n) return;
  if (r < runs) emit(r, heads[r], r + 1 < runs ? heads[r + 1] : n, x, $on); else pad(r, $on);
}
"""
_ONE_BLOCK_SCAN = """
// Exclusive scan of v[0..m) in place by one block of 1024 threads: a serial chunk per thread and a
// Hillis-Steele scan of the chunk sums; *total gets the sum of all.
__global__ void scan_one_block(int m, int* v, int* total) {
  __shared__ int s[2][1024];
  int t = threadIdx.x, per = (m + 1023) / 1024, lo = min(m, t * per), hi = min(m, lo + per), sum = 0, src = 0;
  for (int i = lo; i < hi; ++i) sum += v[i];
  s[0][t] = sum;
  __syncthreads();
  for (int off = 1; off < 1024; off *= 2) {
    s[1 - src][t] = t >= off ? s[src][t - off] + s[src][t] : s[src][t];
    __syncthreads();
    src = 1 - src;
  }
  int run = s[src][t] - sum;
  for (int i = lo; i < hi; ++i) { int c = v[i]; v[i] = run; run += c; }
  if (t == 1023) *total = s[src][t];
}
"""
_FLAGS_SCAN = """
// Head flags, their exclusive scan (the run index of each head), a scatter of head positions, then emit.
__global__ void flag_kernel(int n, const T* x, int* rank) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) rank[i] = is_head(x, i);
}
__global__ void scatter_kernel(int n, const T* x, const int* rank, int* heads) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && is_head(x, i)) heads[rank[i]] = i;
}
extern "C" void run_length($sig) {
  int *rank = nullptr, *heads = nullptr, *total = nullptr, blocks = (n + 255) / 256;
  cudaMalloc(&rank, (size_t)n * sizeof(int));
  cudaMalloc(&heads, (size_t)n * sizeof(int));
  cudaMalloc(&total, sizeof(int));
  flag_kernel<<<blocks, 256>>>(n, x, rank);
  scan_one_block<<<1, 1024>>>(n, rank, total);
  scatter_kernel<<<blocks, 256>>>(n, x, rank, heads);
  emit_kernel<<<blocks, 256>>>(n, x, heads, total, $on, count);
  cudaFree(rank);
  cudaFree(heads);
  cudaFree(total);
}
"""
_BALLOT = """
// Tiles of 1024: pass 1 counts each tile's heads (__syncthreads_count), the tile counts are scanned, and
// pass 2 ranks heads inside warps with ballots + popc and writes head positions in order; then emit.
constexpr int THREADS = 256, ITEMS = 4, TILE = THREADS * ITEMS;
__global__ void count_tiles(int n, const T* x, int* tile_count) {
  int base = blockIdx.x * TILE, c = 0;
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    c += __syncthreads_count(i < n && is_head(x, i));
  }
  if (threadIdx.x == 0) tile_count[blockIdx.x] = c;
}
__global__ void write_heads(int n, const T* x, const int* tile_offset, int* heads) {
  __shared__ int warp_count[THREADS / 32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, base = blockIdx.x * TILE, next = tile_offset[blockIdx.x];
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS + threadIdx.x;
    bool h = i < n && is_head(x, i);
    unsigned mask = __ballot_sync(0xffffffffu, h);
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    int before = next;
    for (int w = 0; w < warp; ++w) before += warp_count[w];
    if (h) heads[before + __popc(mask & ((1u << lane) - 1u))] = i;
    for (int w = 0; w < THREADS / 32; ++w) next += warp_count[w];
    __syncthreads();
  }
}
extern "C" void run_length($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int *tile_offset = nullptr, *heads = nullptr, *total = nullptr;
  cudaMalloc(&tile_offset, (size_t)tiles * sizeof(int));
  cudaMalloc(&heads, (size_t)n * sizeof(int));
  cudaMalloc(&total, sizeof(int));
  count_tiles<<<tiles, THREADS>>>(n, x, tile_offset);
  scan_one_block<<<1, 1024>>>(tiles, tile_offset, total);
  write_heads<<<tiles, THREADS>>>(n, x, tile_offset, heads);
  emit_kernel<<<(n + 255) / 256, 256>>>(n, x, heads, total, $on, count);
  cudaFree(tile_offset);
  cudaFree(heads);
  cudaFree(total);
}
"""
_CHUNKED = """
// Each thread owns ITEMS consecutive elements. Pass 1 counts heads per tile; after the tile-count scan, pass 2
// ranks heads with a block scan of per-thread counts and emits each run directly, reading ahead to its end.
constexpr int THREADS = 128, ITEMS = 8, TILE = THREADS * ITEMS;
__device__ int chunk_heads(int n, const T* x, int lo) {
  int c = 0;
  for (int i = lo; i < min(lo + ITEMS, n); ++i) c += is_head(x, i);
  return c;
}
__global__ void count_tiles(int n, const T* x, int* tile_count) {
  __shared__ int c;
  if (threadIdx.x == 0) c = 0;
  __syncthreads();
  atomicAdd(&c, chunk_heads(n, x, blockIdx.x * TILE + threadIdx.x * ITEMS));
  __syncthreads();
  if (threadIdx.x == 0) tile_count[blockIdx.x] = c;
}
__global__ void emit_runs(int n, const T* x, const int* tile_offset, $op) {
  __shared__ int s[2][THREADS];
  int t = threadIdx.x, lo = blockIdx.x * TILE + t * ITEMS, mine = chunk_heads(n, x, lo), src = 0;
  s[0][t] = mine;
  __syncthreads();
  for (int off = 1; off < THREADS; off *= 2) {
    s[1 - src][t] = t >= off ? s[src][t - off] + s[src][t] : s[src][t];
    __syncthreads();
    src = 1 - src;
  }
  int r = tile_offset[blockIdx.x] + s[src][t] - mine;
  for (int i = lo; i < min(lo + ITEMS, n); ++i) {
    if (!is_head(x, i)) continue;
    int e = i + 1;
    while (e < n && !is_head(x, e)) ++e;
    emit(r++, i, e, x, $on);
  }
}
__global__ void pad_kernel(int n, const int* total, $op, int* count) {
  int r = blockIdx.x * blockDim.x + threadIdx.x, runs = *total;
  if (r == 0) *count = runs;
  if (r >= runs && r < n) pad(r, $on);
}
extern "C" void run_length($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int *tile_offset = nullptr, *total = nullptr;
  cudaMalloc(&tile_offset, (size_t)tiles * sizeof(int));
  cudaMalloc(&total, sizeof(int));
  count_tiles<<<tiles, THREADS>>>(n, x, tile_offset);
  scan_one_block<<<1, 1024>>>(tiles, tile_offset, total);
  emit_runs<<<tiles, THREADS>>>(n, x, tile_offset, $on);
  pad_kernel<<<(n + 255) / 256, 256>>>(n, total, $on, count);
  cudaFree(tile_offset);
  cudaFree(total);
}
"""
