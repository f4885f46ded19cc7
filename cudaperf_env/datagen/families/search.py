"""Binary search of queries in sorted data (one array or sorted rows): bounds, counts, matches, nearest."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

# The answer for query v in array A from lower(A, n, v) and upper(A, n, v), the first index whose element is
# >= v (> v for upper).
ANSWERS = {
    "lower_bound": "lower($A, n, v)",
    "upper_bound": "upper($A, n, v)",
    "count": "upper($A, n, v) - lower($A, n, v)",
    "find_first": "first_match($A, n, v, lower($A, n, v))",
    "find_last": "last_match($A, n, v, upper($A, n, v))",
    "count_range": "lower($A, n, v + $W) - lower($A, n, v)",
    "contains": "first_match($A, n, v, lower($A, n, v)) >= 0",
    "nearest": "nearest($A, n, v, lower($A, n, v))",
}
MEANING = {
    "lower_bound": "the first index i with a[i] >= v (n when there is none)",
    "upper_bound": "the first index i with a[i] > v (n when there is none)",
    "count": "the number of indices i with a[i] == v",
    "find_first": "the first index i with a[i] == v, or -1 when v does not occur",
    "find_last": "the last index i with a[i] == v, or -1 when v does not occur",
    "count_range": "the number of indices i with v <= a[i] < v + $W",
    "contains": "1 when v occurs in a, else 0",
    "nearest": "the index i minimizing |a[i] - v| (the lower index on ties)",
}
# Array value range per size n (many duplicates, about one per value, sparse).
DENSITY = ("N // 8 + 1", "N", "4 * N")
STRUCTURES = grid(sorted(ANSWERS), ("int32", "float32", "float64"), ("flat", "rows"))
_HELPERS = """$Q int first_match(const $T* a, int n, $T v, int lb) { return lb < n && a[lb] == v ? lb : -1; }
$Q int last_match(const $T* a, int n, $T v, int ub) {
  (void)n;
  return ub > 0 && a[ub - 1] == v ? ub - 1 : -1;
}
$Q int nearest(const $T* a, int n, $T v, int lb) {
  if (lb == 0 || lb == n) return lb == 0 ? 0 : n - 1;
  return v - a[lb - 1] <= a[lb] - v ? lb - 1 : lb;
}
"""
# Does the search for v move right of a[m]? (a[m] < v for the lower bound, a[m] <= v for the upper)
_GO_RIGHT = "__device__ __forceinline__ bool go_right($T am, $T v, bool upper) { return upper ? am <= v : am < v; }\n"


def sorted_search(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[j] = a bound, match count, match position, membership or nearest index of queries[j] in sorted a."""
    mode, dtype, layout = nth(variant, STRUCTURES)
    high = pick(rng, DENSITY)
    t = CTYPE[dtype]
    rows = layout == "rows"
    ksig = f"int rows, int n, int q, const {t}* a, const {t}* queries, int* out"
    width = int(rng.integers(2, 9))
    kw = {"T": t, "sig": ksig if rows else ksig.replace("int rows, ", ""), "ksig": ksig,
          "kcall": f"{'rows' if rows else '1'}, n, q, a, queries, out", "kcall_rows": "rows" if rows else "1",
          "answer": fill(ANSWERS[mode], W=width, A="ar")}  # fmt: skip
    helpers = fill(_HELPERS, T=t, Q="$Q")
    head = helpers.replace("$Q", "__device__ __forceinline__") + fill(_GO_RIGHT, T=t) + _BOUNDS
    impls = [
        impl("naive", ["thread-per-query", "binary-search"], head + fill(_NAIVE_BOUND, **kw) + fill(_THREAD, **kw)),
        impl("smem_splitters", ["thread-per-query", "shared-memory", "two-level-search", "grid-stride"],
             head + fill(_SPLITTERS, **kw)),
        impl("warp_kary", ["warp-per-query", "warp-ballot", "k-ary-search"], head + fill(_WARP, **kw)),
    ]  # fmt: skip
    init = {"dist": "sorted_randint", "low": 0, "high": high}
    lead = ["R"] if rows else []
    args = [*([scalar("rows", "int32", "R")] if rows else []), scalar("n", "int32", "N"), scalar("q", "int32", "Q"),
            buffer("a", "in", dtype, [*lead, "N"], init),
            buffer("queries", "in", dtype, [*lead, "Q"], {"dist": "randint", "low": -3, "high": f"{high} + 3"}),
            buffer("out", "out", "int32", [*lead, "Q"])]  # fmt: skip
    body = _REF_ROWS if rows else _REF_FLAT
    reference = helpers.replace("$Q", "static") + fill(_REF_BOUND + body, **kw)
    where = ("each of the rows x n row-major array's rows is non-decreasing; the q queries of row r are "
             "queries[r * q + j] and search that row (a below is the row), answers at out[r * q + j]") if rows else \
        "a is a non-decreasing array"  # fmt: skip
    shapes = [(1000, 777), (4097, 3001), (100003, 4001), (30011, 2999), (1 << 24, 1 << 22), (1 << 20, 1 << 24)]
    cfg = [{"N": n // 16 + 1, "Q": q // 16 + 1, "R": 16} if rows else {"N": n, "Q": q} for n, q in shapes]
    return task(
        name="sorted_search", family="sorted_search", entry="sorted_search", args=args,
        description=f"Search {dtype} queries in sorted data ({where}; n >= 1, duplicates are common): out[j] is "
        f"{fill(MEANING[mode], W=width)}, for v = queries[j].",
        configs=cfg[:3], hidden=cfg[3:4], perf=cfg[4:], reference=reference, implementations=impls,
    )  # fmt: skip


_REF_BOUND = """
static int lower(const $T* a, int n, $T v) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] < v) lo = mid + 1; else hi = mid;
  }
  return lo;
}
static int upper(const $T* a, int n, $T v) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] <= v) lo = mid + 1; else hi = mid;
  }
  return lo;
}
"""
# The kernels share one search, bound(a, n, v, upper), that each implementation defines its own way.
_BOUNDS = """#define lower(a, n, v) bound(a, n, v, false)
#define upper(a, n, v) bound(a, n, v, true)
"""
_REF_FLAT = """
void sorted_search($sig) {
  const $T* ar = a;
  for (int j = 0; j < q; ++j) {
    $T v = queries[j];
    out[j] = $answer;
  }
}
"""
_REF_ROWS = """
void sorted_search($sig) {
  for (int r = 0; r < rows; ++r) {
    const $T* ar = a + (long)r * n;
    for (int j = 0; j < q; ++j) {
      $T v = queries[(long)r * q + j];
      out[(long)r * q + j] = $answer;
    }
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
// One thread per query (queries of all rows in one flat range).
__global__ void search_kernel($ksig) {
  long j = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (j >= (long)rows * q) return;
  const $T* ar = a + j / q * n;
  $T v = queries[j];
  out[j] = $answer;
}
extern "C" void sorted_search($sig) {
  search_kernel<<<(unsigned)(((long)$kcall_rows * q + 255) / 256), 256>>>($kcall);
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

// blockIdx.y is the row.
__global__ void search_kernel($ksig) {
  __shared__ $T s[S];
  const $T* ar = a + (long)blockIdx.y * n;
  int stride = (n + S - 1) / S, m = (n + stride - 1) / stride;
  for (int k = threadIdx.x; k < m; k += blockDim.x) s[k] = ar[k * stride];
  __syncthreads();
  Splitters sp = {s, m, stride};
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < q; j += gridDim.x * blockDim.x) {
    $T v = queries[(long)blockIdx.y * q + j];
    out[(long)blockIdx.y * q + j] = $answer;
  }
}
extern "C" void sorted_search($sig) {
  dim3 grid(min((q + 255) / 256, 1024), $kcall_rows);
  search_kernel<<<grid, 256>>>($kcall);
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

__global__ void search_kernel($ksig) {
  long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32, warps = gridDim.x * (long)blockDim.x / 32;
  for (long j = warp; j < (long)rows * q; j += warps) {  // uniform per warp: every lane takes part in the ballots
    const $T* ar = a + j / q * n;
    $T v = queries[j];
    int r = $answer;
    if (threadIdx.x % 32 == 0) out[j] = r;
  }
}
extern "C" void sorted_search($sig) {
  int blocks = (int)min(((long)$kcall_rows * q + 7) / 8, 4096L);
  search_kernel<<<blocks, 256>>>($kcall);
}
"""
