"""Stable merge of two sorted arrays by a monotone key: merged values and/or source indices, ties a- or b-first."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import spell

OUTPUTS = ("values", "source", "both")
# Value range of both inputs per total size (many ties, about one tie per value, few ties).
DENSITY = ("(M + N) // 8 + 1", "M + N", "8 * (M + N)")
# Merge keys, non-decreasing functions of the value (so sorted inputs stay sorted by key): int and float spellings.
KEYS = {"value": ("x", "x"), "coarse": ("x >> 2", "floorf(x * 0.25f)"),
        "capped": ("x < $cap ? x : $cap", "fminf(x, $cap.0f)")}
STRUCTURES = grid(("int32", "float32", "float64"), OUTPUTS, (True, False), sorted(KEYS))


def merge_sorted(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """c = the stable merge of sorted a (m) and b (n) by key(x); src[k] = i for a[i], m + j for b[j]."""
    dtype, out_mode, a_first, key_name = nth(variant, STRUCTURES)
    high = pick(rng, DENSITY)
    t = CTYPE[dtype]
    key = fill(KEYS[key_name][dtype != "int32"], cap=int(rng.integers(200, 2000)))
    key = spell(key, dtype)
    outs = ([f"{t}* c"] if out_mode != "source" else []) + (["int* src"] if out_mode != "values" else [])
    sig = f"int m, int n, const {t}* a, const {t}* b, " + ", ".join(outs)
    call = "m, n, a, b, " + ", ".join(o.split("* ")[1] for o in outs)
    store = " ".join((["c[$o] = $v;"] if out_mode != "source" else []) + (["src[$o] = $f;"] if out_mode != "values"
                                                                           else []))  # fmt: skip
    helpers = (f"#include <math.h>\n$Q {t} key({t} x) {{ return {key}; }}\n"
               f"// Does a's element x go before b's element y in the merged output?\n"
               f"$Q int take_a({t} x, {t} y) {{ return key(x) {'<=' if a_first else '<'} key(y); }}\n")  # fmt: skip
    head = helpers.replace("$Q", "__device__ __forceinline__") + _MERGE_PATH
    kw = {"T": t, "sig": sig, "call": call}
    impls = [
        impl("naive", ["thread-per-element", "binary-search", "scatter"],
             head + fill(_RANKS, **kw, store_a=fill(store, o="i + r", v="a[i]", f="i"),
                         store_b=fill(store, o="j + r", v="b[j]", f="m + j"))),
        impl("merge_path", ["merge-path", "multi-element-per-thread", "thread-per-output"],
             head + fill(_PATH, **kw, store=fill(store, o="d", v="v", f="f"))),
        impl("tiled_merge_path", ["merge-path", "shared-memory", "two-level-partition", "coalesced"],
             head + fill(_TILED, **kw, store=fill(store, o="d0 + k", v="sv[k]", f="sf[k]"))),
    ]  # fmt: skip
    init = {"dist": "sorted_randint", "low": 0, "high": high}
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N"), buffer("a", "in", dtype, ["M"], init),
            buffer("b", "in", dtype, ["N"], init)]  # fmt: skip
    if out_mode != "source":
        args.append(buffer("c", "out", dtype, ["M + N"]))
    if out_mode != "values":
        args.append(buffer("src", "out", "int32", ["M + N"]))
    produce = {
        "values": "c[k] is its value",
        "source": "src[k] is its source (i for a[i], m + j for b[j])",
        "both": "c[k] is its value and src[k] its source (i for a[i], m + j for b[j])",
    }[out_mode]
    return task(
        name="merge_sorted", family="merge_sorted", entry="merge_sorted", args=args,
        description=f"Stable merge by key(x) = {key} of two {dtype} arrays a (m >= 1 elements) and b (n >= 1), "
        f"both non-decreasing (so also by key): the k-th output element (k < m + n) is the k-th of the merged "
        f"order, which keeps each input's order and on equal keys puts {'a' if a_first else 'b'}'s elements "
        f"first; {produce}.",
        configs=[{"M": 1000, "N": 777}, {"M": 4097, "N": 5003}, {"M": 100003, "N": 65537}],
        hidden=[{"M": 30011, "N": 9999}], perf=[{"M": 1 << 24, "N": 1 << 24}, {"M": 1 << 25, "N": 1 << 20}],
        reference=helpers.replace("$Q", "static") + fill(_REF, sig=sig, store=fill(store, o="k", v="v", f="f"), T=t),
        implementations=impls,
    )  # fmt: skip


_REF = """
void merge_sorted($sig) {
  int i = 0, j = 0;
  for (int k = 0; k < m + n; ++k) {
    $T v;
    int f;
    if (j >= n || (i < m && take_a(a[i], b[j]))) { v = a[i]; f = i; ++i; } else { v = b[j]; f = m + j; ++j; }
    $store
  }
}
"""
_MERGE_PATH = """
// Merge path: how many of the first d merged outputs come from a (the rest come from b).
template <typename T>
__device__ int path_split(const T* a, int m, const T* b, int n, int d) {
  int lo = max(0, d - n), hi = min(d, m);
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (take_a(a[mid], b[d - 1 - mid])) lo = mid + 1; else hi = mid;
  }
  return lo;
}
"""
_RANKS = """
// One thread per input element: its output slot is its own index plus its rank in the other array
// (a binary search), so every element is scattered straight to its place.
__global__ void rank_kernel($sig) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < m) {
    int i = t, lo = 0, hi = n;  // r = elements of b before a[i]
    while (lo < hi) { int mid = (lo + hi) / 2; if (!take_a(a[i], b[mid])) lo = mid + 1; else hi = mid; }
    int r = lo;
    $store_a
  } else if (t < m + n) {
    int j = t - m, lo = 0, hi = m;  // r = elements of a before b[j]
    while (lo < hi) { int mid = (lo + hi) / 2; if (take_a(a[mid], b[j])) lo = mid + 1; else hi = mid; }
    int r = lo;
    $store_b
  }
}
extern "C" void merge_sorted($sig) {
  rank_kernel<<<(m + n + 255) / 256, 256>>>($call);
}
"""
_PATH = """
// Each thread finds where its ITEMS consecutive outputs start on the merge path, then merges them serially.
constexpr int ITEMS = 8;
__global__ void path_kernel($sig) {
  int d = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS, total = m + n;
  if (d >= total) return;
  int i = path_split(a, m, b, n, d), j = d - i, end = min(d + ITEMS, total);
  for (; d < end; ++d) {
    $T v;
    int f;
    if (j >= n || (i < m && take_a(a[i], b[j]))) { v = a[i]; f = i; ++i; } else { v = b[j]; f = m + j; ++j; }
    $store
  }
}
extern "C" void merge_sorted($sig) {
  int threads = (m + n + ITEMS - 1) / ITEMS;
  path_kernel<<<(threads + 127) / 128, 128>>>($call);
}
"""
_TILED = """
// Each block owns TILE outputs: it splits the merge path at its tile's ends, stages the two input ranges in
// shared memory with coalesced loads, merges ITEMS per thread from shared memory and writes the tile back.
constexpr int THREADS = 128, ITEMS = 8, TILE = THREADS * ITEMS;
__global__ void tile_kernel($sig) {
  __shared__ $T sa[TILE], sb[TILE], sv[TILE];
  __shared__ int sf[TILE], split[2];
  int total = m + n, d0 = blockIdx.x * TILE, d1 = min(d0 + TILE, total);
  if (threadIdx.x < 2) split[threadIdx.x] = path_split(a, m, b, n, threadIdx.x == 0 ? d0 : d1);
  __syncthreads();
  int i0 = split[0], j0 = d0 - i0, la = split[1] - i0, lb = (d1 - split[1]) - j0;
  for (int k = threadIdx.x; k < la; k += THREADS) sa[k] = a[i0 + k];
  for (int k = threadIdx.x; k < lb; k += THREADS) sb[k] = b[j0 + k];
  __syncthreads();
  int ld = threadIdx.x * ITEMS;
  if (ld < la + lb) {
    int i = path_split(sa, la, sb, lb, ld), j = ld - i, end = min(ld + ITEMS, la + lb);
    for (int k = ld; k < end; ++k) {
      if (j >= lb || (i < la && take_a(sa[i], sb[j]))) { sv[k] = sa[i]; sf[k] = i0 + i; ++i; }
      else { sv[k] = sb[j]; sf[k] = m + j0 + j; ++j; }
    }
  }
  __syncthreads();
  for (int k = threadIdx.x; k < d1 - d0; k += THREADS) { $store }
}
extern "C" void merge_sorted($sig) {
  tile_kernel<<<(m + n + TILE - 1) / TILE, THREADS>>>($call);
}
"""
