"""Binary search of queries in a sorted array: lower / upper bound, count of matches, first match or -1."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, pick, scalar, task

# The answer for query v from bound(upper) (first index whose element is >= v, or > v when upper), per mode.
ANSWERS = {
    "lower_bound": "bound(a, n, v, false)",
    "upper_bound": "bound(a, n, v, true)",
    "count": "bound(a, n, v, true) - bound(a, n, v, false)",
    "find_first": "first_match(a, n, v, bound(a, n, v, false))",
    "find_last": "last_match(a, n, v, bound(a, n, v, true))",
    "count_range": "bound(a, n, v + $W, false) - bound(a, n, v, false)",
}
MEANING = {
    "lower_bound": "the first index i with a[i] >= v (n when there is none)",
    "upper_bound": "the first index i with a[i] > v (n when there is none)",
    "count": "the number of indices i with a[i] == v",
    "find_first": "the first index i with a[i] == v, or -1 when v does not occur",
    "find_last": "the last index i with a[i] == v, or -1 when v does not occur",
    "count_range": "the number of indices i with v <= a[i] < v + $W",
}
# Array value range per size n (many duplicates, about one per value, sparse).
DENSITY = ("N // 8 + 1", "N", "4 * N")


def sorted_search(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[j] = the lower bound / upper bound / match count / first match of queries[j] in the sorted array a."""
    dtype, mode, high = pick(rng, ("int32", "float32", "float64")), pick(rng, sorted(ANSWERS)), pick(rng, DENSITY)
    t = CTYPE[dtype]
    sig = f"int n, int q, const {t}* a, const {t}* queries, int* out"
    helpers = (f"$Q int first_match(const {t}* a, int n, {t} v, int lb) {{ return lb < n && a[lb] == v ? lb : -1; }}\n"
               f"$Q int last_match(const {t}* a, int n, {t} v, int ub) {{\n"
               f"  (void)n;\n  return ub > 0 && a[ub - 1] == v ? ub - 1 : -1;\n}}\n"
               f"// Does the search for v move right of a[m]? (a[m] < v for the lower bound, a[m] <= v for the upper)\n"
               f"$Q bool go_right({t} am, {t} v, bool upper) {{ return upper ? am <= v : am < v; }}\n")  # fmt: skip
    width = int(rng.integers(2, 9))
    kw = {"T": t, "sig": sig, "answer": fill(ANSWERS[mode], W=width)}
    head = helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-query", "binary-search"], head + fill(_NAIVE_BOUND, **kw) + fill(_THREAD, **kw)),
        impl("smem_splitters", ["thread-per-query", "shared-memory", "two-level-search", "grid-stride"],
             head + fill(_SPLITTERS, **kw)),
        impl("warp_kary", ["warp-per-query", "warp-ballot", "k-ary-search"], head + fill(_WARP, **kw)),
    ]  # fmt: skip
    init = {"dist": "sorted_randint", "low": 0, "high": high}
    args = [scalar("n", "int32", "N"), scalar("q", "int32", "Q"), buffer("a", "in", dtype, ["N"], init),
            buffer("queries", "in", dtype, ["Q"], {"dist": "randint", "low": -3, "high": f"{high} + 3"}),
            buffer("out", "out", "int32", ["Q"])]  # fmt: skip
    reference = "#include <stdbool.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw)
    return task(
        name="sorted_search", family="sorted_search", entry="sorted_search", args=args,
        description=f"Search q queries in a non-decreasing {dtype} array a of n >= 1 elements (duplicates are common): "
        f"out[j] is {fill(MEANING[mode], W=width)}, for v = queries[j].",
        configs=[{"N": 1000, "Q": 777}, {"N": 4097, "Q": 3001}, {"N": 100003, "Q": 4001}],
        hidden=[{"N": 30011, "Q": 2999}], perf=[{"N": 1 << 24, "Q": 1 << 22}, {"N": 1 << 20, "Q": 1 << 24}],
        reference=reference, implementations=impls,
    )  # fmt: skip


_REF = """
static int bound(const $T* a, int n, $T v, bool upper) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (go_right(a[mid], v, upper)) lo = mid + 1; else hi = mid;
  }
  return lo;
}
void sorted_search($sig) {
  for (int j = 0; j < q; ++j) {
    $T v = queries[j];
    out[j] = $answer;
  }
}
"""
_NAIVE_BOUND = """
// Plain binary search in global memory.
__device__ int bound(const $T* a, int n, $T v, bool upper) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (go_right(a[mid], v, upper)) lo = mid + 1; else hi = mid;
  }
  return lo;
}
"""
_THREAD = """
// One thread per query.
__global__ void search_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= q) return;
  $T v = queries[j];
  out[j] = $answer;
}
extern "C" void sorted_search($sig) {
  search_kernel<<<(q + 255) / 256, 256>>>(n, q, a, queries, out);
}
"""
_SPLITTERS = """
// Every block stages S evenly spaced splitters a[k * stride] in shared memory: the first levels of each
// search hit shared memory, the last log2(stride) steps global memory.
constexpr int S = 1024;
struct Splitters { const $T* s; int m, stride; };

__device__ int bound_splitters(const $T* a, int n, $T v, bool upper, Splitters sp) {
  int lo = 0, hi = sp.m;  // first splitter k where the search stops
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (go_right(sp.s[mid], v, upper)) lo = mid + 1; else hi = mid;
  }
  int k = lo;
  int begin = k == 0 ? 0 : (k - 1) * sp.stride + 1, end = k == sp.m ? n : k * sp.stride;
  while (begin < end) {
    int mid = begin + (end - begin) / 2;
    if (go_right(a[mid], v, upper)) begin = mid + 1; else end = mid;
  }
  return begin;
}
#define bound(a, n, v, upper) bound_splitters(a, n, v, upper, sp)

__global__ void search_kernel($sig) {
  __shared__ $T s[S];
  int stride = (n + S - 1) / S, m = (n + stride - 1) / stride;
  for (int k = threadIdx.x; k < m; k += blockDim.x) s[k] = a[k * stride];
  __syncthreads();
  Splitters sp = {s, m, stride};
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < q; j += gridDim.x * blockDim.x) {
    $T v = queries[j];
    out[j] = $answer;
  }
}
extern "C" void sorted_search($sig) {
  int blocks = min((q + 255) / 256, 1024);
  search_kernel<<<blocks, 256>>>(n, q, a, queries, out);
}
"""
_WARP = """
// One warp per query: each step the 32 lanes probe 32 evenly spaced positions of the remaining range and a
// ballot keeps the part between the last probe still left of the answer and the first one that is not.
constexpr unsigned FULL = 0xffffffffu;

__device__ int bound_warp(const $T* a, int n, $T v, bool upper) {
  int lane = threadIdx.x % 32, lo = 0, hi = n;  // the answer lies in [lo, hi]
  while (lo < hi) {
    int p = lo + (int)((long)lane * (hi - lo) / 32);
    unsigned right = __ballot_sync(FULL, go_right(a[p], v, upper));
    int c = __popc(right);  // probes left of the answer form a prefix of the lanes
    if (c == 0) { hi = lo; break; }
    int last = __shfl_sync(FULL, p, c - 1);
    int next = c < 32 ? __shfl_sync(FULL, p, c % 32) : hi;
    lo = last + 1;
    hi = next;
  }
  return lo;
}
#define bound(a, n, v, upper) bound_warp(a, n, v, upper)

__global__ void search_kernel($sig) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, warps = gridDim.x * blockDim.x / 32;
  for (int j = warp; j < q; j += warps) {  // uniform per warp: every lane takes part in the ballots
    $T v = queries[j];
    int r = $answer;
    if (threadIdx.x % 32 == 0) out[j] = r;
  }
}
extern "C" void sorted_search($sig) {
  int blocks = min((q + 7) / 8, 4096);
  search_kernel<<<blocks, 256>>>(n, q, a, queries, out);
}
"""
