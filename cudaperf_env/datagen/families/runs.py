"""Run-length encoding by a key: per run its first value, length, start or end, and the run count."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

# Keys whose changes split the input into runs, and what each run emits into which outputs.
RUN_KEYS = ("v", "v / 4", "v >> 1", "v & 12", "v % 3", "(v ^ (v >> 2)) & 3", "v > 8", "v * v / 16")
RUN_OUTPUTS = {
    "rle": (("vals", "T"), ("lens", "int")),
    "unique": (("vals", "T"),),
    "lengths": (("lens", "int"),),
    "starts": (("starts", "int"),),
    "ends": (("ends", "int"),),
}
_EMIT = {"vals": "vals[r] = x[s];", "lens": "lens[r] = e - s;", "starts": "starts[r] = s;", "ends": "ends[r] = e - 1;"}
RUN_STRUCTURES = grid(("int32", "uint8"), sorted(RUN_OUTPUTS), RUN_KEYS)
_RUN_INIT = ({"dist": "randint", "low": 0, "high": 16}, {"dist": "sorted_randint", "low": 0, "high": "N // 8 + 2"})


def run_length(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Run-length encoding by a key: per run its first value / length / start, zero padding, and the run count."""
    dtype, mode, key = nth(variant, RUN_STRUCTURES)
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
        "ends": "ends[r] = the index of its last element",
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
