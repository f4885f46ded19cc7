"""One stable counting-sort pass: elements distributed into nb buckets by key, in bucket order, ties in input order.

This is the scatter step of an LSD radix sort (the bucket is a digit of the order-preserving key bits) or of a
bucket sort (key modulo nb, or a range of float keys). The kernels count per tile, scan the bucket-major count
matrix into destinations, and scatter each tile stably: serially, by warp match masks, or by prefix counts
in shared memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.encoding import KEY_BITS

_KEY_INIT = {"uint32": {"dist": "randint", "low": 0, "high": 4294967296},
             "int32": {"dist": "randint", "low": -100000, "high": 100000},
             "float32": {"dist": "normal", "mean": 0, "std": 100}, "float64": {"dist": "normal", "mean": 0, "std": 100}}
# output -> (output buffers (name, dtype or None for the keys'), statement for element i going to position p)
OUTPUTS = {
    "keys": ((("out_keys", None),), "out_keys[p] = keys[i];"),
    "keys_index": ((("out_keys", None), ("out_idx", "int32")), "out_keys[p] = keys[i]; out_idx[p] = i;"),
    "keys_payload": ((("out_keys", None), ("out_vals", "float32")), "out_keys[p] = keys[i]; out_vals[p] = vals[i];"),
    "index": ((("out_idx", "int32"),), "out_idx[p] = i;"),
    "ranks": ((("ranks", "int32"),), "ranks[i] = p;"),
}
# bucket of a key: a digit of its order-preserving bits, or (ints) the key modulo nb, or (floats) a value range.
BUCKETS = {
    "digit": "$K k = $key;\n  int b = (int)((k >> shift) & (unsigned)(nb - 1));",
    "mod": "int b = (int)((unsigned)v % (unsigned)nb);",
    "range": "int b = (int)((v - ($T)-300) * nb / ($T)600);\n  b = b < 0 ? 0 : (b >= nb ? nb - 1 : b);",
}
STRUCTURES = [(d, b, desc, out) for d in sorted(KEY_BITS)
              for b in ("digit", "range" if d.startswith("float") else "mod")
              for desc, out in grid((False, True), sorted(OUTPUTS))]  # fmt: skip


def bucket_pass(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Stable distribution of n keys into nb buckets: sorted keys, their source indices, payloads or ranks."""
    dtype, kind, descending, output = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    digit = kind == "digit"
    width = 64 if dtype == "float64" else 32
    bits = int(pick(rng, (4, 5, 6, 7, 8)))
    nb = 1 << bits if digit else int(rng.integers(7, 257))
    shift = bits * int(rng.integers(0, width // bits)) if digit else 0
    c_key, cu_key = KEY_BITS[dtype]
    outs, emit = OUTPUTS[output]
    payload = output == "keys_payload"
    params = [f"int n, int nb{', int shift' if digit else ''}", f"const {t}* keys"] + \
        (["const float* vals"] if payload else []) + [f"{CTYPE[d or dtype]}* {name}" for name, d in outs]
    sig = ", ".join(params)
    call = ", ".join(p.split()[-1].lstrip("*") for p in ", ".join(params).split(", "))
    body = BUCKETS[kind].replace("$T", t).replace("$K", "unsigned long long" if width == 64 else "unsigned int")
    ret = "return nb - 1 - b;" if descending else "return b;"
    bucket = f"$Q int bucket_of({t} v, int nb, int shift) {{\n  (void)shift;\n  {body}\n  {ret}\n}}\n"
    kw = {"T": t, "sig": sig, "call": call, "emit": emit, "shift": "shift" if digit else "0"}
    reference = ("#include <stdlib.h>\n#include <string.h>\n" + _BITS + fill(bucket, key=c_key, Q="static")
                 + fill(_REF, **kw))  # fmt: skip
    head = fill(bucket, key=cu_key, Q="__device__ __forceinline__") + fill(_COMMON, **kw)
    impls = [
        impl("tile_serial", ["per-tile-histograms", "serial-scan", "serial-scatter", "multi-pass"],
             head + fill(_SERIAL_SCATTER + _ENTRY, scan="scan_serial<<<1, 1>>>(nb * tiles, counts);",
                         scatter="scatter_serial<<<(tiles + 127) / 128, 128>>>($call, counts, tiles);", **kw)),
        impl("warp_match", ["per-tile-histograms", "block-scan", "warp-match", "shared-memory"],
             head + fill(_BLOCK_SCAN + _MATCH_SCATTER + _ENTRY, scan="scan_block<<<1, 1024>>>(nb * tiles, counts);",
                         scatter="scatter_match<<<tiles, TILE>>>($call, counts, tiles);", **kw)),
        impl("smem_prefix_count", ["per-tile-histograms", "serial-scan", "shared-memory", "tile-prefix-count"],
             head + fill(_PREFIX_SCATTER + _ENTRY, scan="scan_serial<<<1, 1>>>(nb * tiles, counts);",
                         scatter="scatter_prefix<<<tiles, TILE>>>($call, counts, tiles);", **kw)),
    ]  # fmt: skip
    impls = [{**i, "source": fill(i["source"], call=call)} for i in impls]
    args = [scalar("n", "int32", "N"), scalar("nb", "int32", nb)]
    if digit:
        args.append(scalar("shift", "int32", shift))
    args.append(buffer("keys", "in", dtype, ["N"], _KEY_INIT[dtype]))
    if payload:
        args.append(buffer("vals", "in", "float32", ["N"]))
    args += [buffer(name, "out", d or dtype, ["N"]) for name, d in outs]
    how = {"digit": f"digit (k >> shift) & (nb - 1) of the order-preserving {width}-bit key k ({c_key})",
           "mod": "(unsigned)key % nb", "range": "min(max((int)((key + 300) * nb / 600), 0), nb - 1)"}[kind]
    return task(
        name=f"bucket_pass_{kind}", family="bucket_pass", entry="bucket_pass", args=args,
        description=f"One stable counting-sort pass over n {dtype} keys into nb buckets: bucket b = {how}"
        f"{', then nb - 1 - b (descending)' if descending else ''}. Element i goes to position p = (number of keys "
        f"in smaller buckets) + (number of earlier keys in its bucket); then {emit}",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 100003}], hidden=[{"N": 30011}], perf=[{"N": 1 << 24}, {"N": 1 << 26}],
        reference=reference, implementations=impls,
    )  # fmt: skip


_BITS = """static unsigned int float_bits(float f) { unsigned int u; memcpy(&u, &f, sizeof u); return u; }
static unsigned long long double_bits(double f) { unsigned long long u; memcpy(&u, &f, sizeof u); return u; }
"""
_REF = """
void bucket_pass($sig) {
  int* start = (int*)calloc((size_t)nb + 1, sizeof(int));
  for (int i = 0; i < n; ++i) start[bucket_of(keys[i], nb, $shift) + 1] += 1;
  for (int b = 0; b < nb; ++b) start[b + 1] += start[b];
  for (int i = 0; i < n; ++i) {
    int p = start[bucket_of(keys[i], nb, $shift)]++;
    $emit
  }
  free(start);
}
"""
# Tile histograms into the bucket-major matrix counts[b * tiles + t]; its exclusive scan gives every
# (bucket, tile) its first destination.
_COMMON = """
constexpr int TILE = 256, MAXB = 256;
__global__ void tile_hist(int n, int nb, int shift, const $T* keys, int tiles, int* counts) {
  __shared__ int local[MAXB];
  for (int b = threadIdx.x; b < nb; b += TILE) local[b] = 0;
  __syncthreads();
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) atomicAdd(&local[bucket_of(keys[i], nb, shift)], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += TILE) counts[(long)b * tiles + blockIdx.x] = local[b];
}
__global__ void scan_serial(int total, int* counts) {
  int run = 0;
  for (int k = 0; k < total; ++k) {
    int c = counts[k];
    counts[k] = run;
    run += c;
  }
}
"""
_ENTRY = """
extern "C" void bucket_pass($sig) {
  int tiles = (n + TILE - 1) / TILE;
  int* counts;
  cudaMalloc(&counts, sizeof(int) * (size_t)nb * tiles);
  tile_hist<<<tiles, TILE>>>(n, nb, $shift, keys, tiles, counts);
  $scan
  $scatter
  cudaFree(counts);
}
"""
_SERIAL_SCATTER = """
// One thread per tile scatters the tile's elements in order, bumping its own copy of the destinations.
__global__ void scatter_serial($sig, const int* counts, int tiles) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  int next[MAXB];
  for (int b = 0; b < nb; ++b) next[b] = counts[(long)b * tiles + t];
  int end = min(n, (t + 1) * TILE);
  for (int i = t * TILE; i < end; ++i) {
    int p = next[bucket_of(keys[i], nb, $shift)]++;
    $emit
  }
}
"""
_BLOCK_SCAN = """
// Exclusive scan of counts by one block of 1024 threads, 1024 entries at a time with a running carry.
__global__ void scan_block(int total, int* counts) {
  __shared__ int warp_sum[32];
  __shared__ int carry;
  int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int base = 0; base < total; base += 1024) {
    int k = base + threadIdx.x, v = k < total ? counts[k] : 0, s = v;
    for (int off = 1; off < 32; off *= 2) {
      int u = __shfl_up_sync(0xffffffffu, s, off);
      if (lane >= off) s += u;
    }
    if (lane == 31) warp_sum[wid] = s;
    __syncthreads();
    if (wid == 0) {
      int ws = warp_sum[lane];
      for (int off = 1; off < 32; off *= 2) {
        int u = __shfl_up_sync(0xffffffffu, ws, off);
        if (lane >= off) ws += u;
      }
      warp_sum[lane] = ws;
    }
    __syncthreads();
    int incl = s + (wid > 0 ? warp_sum[wid - 1] : 0), before = carry;
    if (k < total) counts[k] = before + incl - v;
    __syncthreads();
    if (threadIdx.x == 1023) carry = before + incl;
    __syncthreads();
  }
}
"""
_MATCH_SCATTER = """
// A block per tile, a thread per element: lanes with the same bucket find each other with a match mask; the
// rank is the tile's destination plus the earlier warps' counts of that bucket plus the earlier matching lanes.
constexpr int WARPS = TILE / 32;
__global__ void scatter_match($sig, const int* counts, int tiles) {
  __shared__ int warp_count[WARPS][MAXB];
  int lane = threadIdx.x % 32, wid = threadIdx.x / 32, i = blockIdx.x * TILE + threadIdx.x;
  for (int k = threadIdx.x; k < WARPS * MAXB; k += TILE) warp_count[k / MAXB][k % MAXB] = 0;
  __syncthreads();
  int b = i < n ? bucket_of(keys[i], nb, $shift) : -1;
  unsigned peers = __match_any_sync(0xffffffffu, b);
  int rank = __popc(peers & ((1u << lane) - 1));
  if (b >= 0 && rank == 0) warp_count[wid][b] = __popc(peers);
  __syncthreads();
  if (b < 0) return;
  int p = counts[(long)b * tiles + blockIdx.x] + rank;
  for (int w = 0; w < wid; ++w) p += warp_count[w][b];
  $emit
}
"""
_PREFIX_SCATTER = """
// A block per tile: the tile's buckets go to shared memory, and each element counts the earlier elements
// of its bucket there.
__global__ void scatter_prefix($sig, const int* counts, int tiles) {
  __shared__ int sb[TILE];
  int i = blockIdx.x * TILE + threadIdx.x;
  sb[threadIdx.x] = i < n ? bucket_of(keys[i], nb, $shift) : -1;
  __syncthreads();
  int b = sb[threadIdx.x];
  if (b < 0) return;
  int rank = 0;
  for (int j = 0; j < threadIdx.x; ++j) rank += sb[j] == b;
  int p = counts[(long)b * tiles + blockIdx.x] + rank;
  $emit
}
"""
