"""Batched dynamic programming over pairs of short strings: edit distances, LCS, alignment scores, DTW.

Every metric fills D[i][j] (i <= la, j <= lb) from D[i-1][j], D[i][j-1], D[i-1][j-1] (and D[i-2][j-2] for
transpositions) with boundary rows and columns, then reads a corner, the best cell, or the best cell of the
last row. Kernels run a thread per pair over rolling rows, or a warp per pair along anti-diagonals (lane j owns
column j + 1 and gets its neighbours' cells from the previous steps by shuffles).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, pick, scalar, task

# name -> (cell from u = D[i-1][j], l = D[i][j-1], d = D[i-1][j-1], dd = D[i-2][j-2], symbols a, b (and the
#          previous ones pa, pb), row 0 value at j, column 0 value at i, result: corner / best / last_row_min)
METRICS = {
    "levenshtein": ("min3(u + 1, l + 1, d + (a != b))", "j", "i", "corner"),
    "lcs": ("a == b ? d + 1 : max2(u, l)", "0", "0", "corner"),
    "weighted": ("min3(u + 2, l + 2, d + iabs(a - b))", "2 * j", "2 * i", "corner"),
    "osa": ("min2(min3(u + 1, l + 1, d + (a != b)), i > 1 && j > 1 && a == pb && pa == b ? dd + 1 : BIG)",
            "j", "i", "corner"),
    "needleman_wunsch": ("max3(u - 2, l - 2, d + (a == b ? 1 : -1))", "-2 * j", "-2 * i", "corner"),
    "smith_waterman": ("max2(0, max3(u - 2, l - 2, d + (a == b ? 2 : -1)))", "0", "0", "best"),
    "longest_common_substring": ("a == b ? d + 1 : 0", "0", "0", "best"),
    "dtw": ("iabs(a - b) + min3(u, l, d)", "j == 0 ? 0 : BIG", "i == 0 ? 0 : BIG", "corner"),
    "banded_levenshtein": ("iabs(i - j) > 3 ? BIG : min3(u + 1, l + 1, d + (a != b))", "j", "i", "corner"),
    "semi_global": ("min3(u + 1, l + 1, d + (a != b))", "0", "i", "last_row_min"),
}
# Symbol maps applied to the bytes before comparing.
SYMBOLS = ("c", "c % 5", "c >> 1")
STRUCTURES = grid(sorted(METRICS), (False, True), SYMBOLS)
_HELPERS = """#define BIG (1 << 20)
$Q int min2(int p, int q) { return p < q ? p : q; }
$Q int max2(int p, int q) { return p > q ? p : q; }
$Q int min3(int p, int q, int r) { return min2(min2(p, q), r); }
$Q int max3(int p, int q, int r) { return max2(max2(p, q), r); }
$Q int iabs(int v) { return v < 0 ? -v : v; }
$Q int sym(int c) { return $sym; }
$Q int row0(int j) { return $row0; }
$Q int col0(int i) { return $col0; }
// Cell (i, j) from its neighbours and the symbols a = s(x[i-1]), b = s(y[j-1]) (pa, pb the ones before).
$Q int cell(int i, int j, int u, int l, int d, int dd, int a, int b, int pa, int pb) {
  (void)dd; (void)pa; (void)pb;
  return $cell;
}
"""


def edit_distance(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[p] = the metric of strings x[p][:la] and y[p][:lb] (la = lb = len, or the pair's own lengths)."""
    metric, own_lengths, symbol = nth(variant, STRUCTURES)
    cell, row0, col0, result = METRICS[metric]
    lens = "const int* la, const int* lb, " if own_lengths else ""
    sig = f"int pairs, int len, const unsigned char* x, const unsigned char* y, {lens}int* out"
    call = f"pairs, len, x, y, {'la, lb, ' if own_lengths else ''}out"
    kw = {"sig": sig, "call": call, "cell": cell, "row0": row0, "col0": col0, "sym": symbol,
          "na": "la[p]" if own_lengths else "len", "nb": "lb[p]" if own_lengths else "len",
          "init": {"corner": "0", "best": "0", "last_row_min": "BIG"}[result],
          "take": _TAKE[result], "final": _FINAL[result]}  # fmt: skip
    helpers = fill(_HELPERS, Q="$Q", **kw)
    reference = helpers.replace("$Q", "static") + fill(_REF, **kw)
    head = helpers.replace("$Q", "__device__ __forceinline__") + "constexpr int MAXL = 32;\n"
    impls = [
        impl("naive", ["thread-per-pair", "rolling-rows"], head + fill(_THREAD, **kw)),
        impl("smem_staged", ["thread-per-pair", "rolling-rows", "shared-memory", "coalesced"],
             head + fill(_STAGED, **kw)),
        impl("warp_wavefront", ["warp-per-pair", "anti-diagonal-wavefront", "warp-shuffle"],
             head + fill(_WAVEFRONT, **kw, lane_take=_LANE_TAKE[result], warp_final=_WARP_FINAL[result])),
    ]  # fmt: skip
    alphabet = int(pick(rng, (4, 10, 26)))
    text = {"dist": "randint", "low": 0, "high": alphabet}
    args = [scalar("pairs", "int32", "P"), scalar("len", "int32", "L"), buffer("x", "in", "uint8", ["P", "L"], text),
            buffer("y", "in", "uint8", ["P", "L"], text)]  # fmt: skip
    if own_lengths:
        args += [buffer(n, "in", "int32", ["P"], {"dist": "randint", "low": 0, "high": "L + 1"}) for n in ("la", "lb")]
    args.append(buffer("out", "out", "int32", ["P"]))
    what = {"corner": "D[la][lb]", "best": "the largest D[i][j] over all cells",
            "last_row_min": "the smallest D[la][j] over j <= lb"}[result]  # fmt: skip
    lengths = "la[p] and lb[p]" if own_lengths else "len (both)"
    return task(
        name=f"edit_distance_{metric}", family="edit_distance", entry="edit_distance", args=args,
        description=f"Batched '{metric.replace('_', ' ')}' dynamic program over pairs of byte strings (len <= 32): "
        f"pair p compares x[p][0:la] with y[p][0:lb] (rows of pairs x len arrays), lengths {lengths}. With "
        f"symbols a = s(x[p][i-1]), b = s(y[p][j-1]), s(c) = {symbol} (pa, pb the symbols at i-2, j-2): "
        f"D[0][j] = {row0}, D[i][0] = {col0}, D[i][j] = {cell} for u = D[i-1][j], l = D[i][j-1], d = D[i-1][j-1], "
        f"dd = D[i-2][j-2], in int with BIG = 1 << 20 and min2/min3/max2/max3/iabs the usual helpers; "
        f"out[p] = {what}.",
        configs=[{"P": 7, "L": 8}, {"P": 300, "L": 32}, {"P": 1001, "L": 17}], hidden=[{"P": 257, "L": 31}],
        perf=[{"P": 1 << 20, "L": 32}], reference=reference, implementations=impls,
    )  # fmt: skip


# How a finished cell v at (i, j) feeds the result, and the result after the table.
_TAKE = {"corner": "", "best": "best = max2(best, v);", "last_row_min": "if (i == na) best = min2(best, v);"}
_FINAL = {"corner": "prev[nb]", "best": "best", "last_row_min": "min2(best, col0(na))"}
_REF = """
void edit_distance($sig) {
  for (int p = 0; p < pairs; ++p) {
    const unsigned char* xs = x + (long)p * len;
    const unsigned char* ys = y + (long)p * len;
    int na = $na, nb = $nb, best = $init;
    int prev2[33], prev[33], cur[33];
    for (int j = 0; j <= nb; ++j) prev2[j] = prev[j] = row0(j);
    for (int i = 1; i <= na; ++i) {
      cur[0] = col0(i);
      for (int j = 1; j <= nb; ++j) {
        int pa = i > 1 ? sym(xs[i - 2]) : 0, pb = j > 1 ? sym(ys[j - 2]) : 0;
        int v = cell(i, j, prev[j], cur[j - 1], prev[j - 1], i > 1 && j > 1 ? prev2[j - 2] : 0, sym(xs[i - 1]),
                     sym(ys[j - 1]), pa, pb);
        cur[j] = v;
        $take
      }
      for (int j = 0; j <= nb; ++j) { prev2[j] = prev[j]; prev[j] = cur[j]; }
    }
    out[p] = $final;
  }
}
"""
_PAIR_BODY = """
  int best = $init;
  int prev2[MAXL + 1], prev[MAXL + 1], cur[MAXL + 1];
  for (int j = 0; j <= nb; ++j) prev2[j] = prev[j] = row0(j);
  for (int i = 1; i <= na; ++i) {
    cur[0] = col0(i);
    int a = sym(XS(i - 1)), pa = i > 1 ? sym(XS(i - 2)) : 0;
    for (int j = 1; j <= nb; ++j) {
      int pb = j > 1 ? sym(YS(j - 2)) : 0;
      int v = cell(i, j, prev[j], cur[j - 1], prev[j - 1], i > 1 && j > 1 ? prev2[j - 2] : 0, a, sym(YS(j - 1)),
                   pa, pb);
      cur[j] = v;
      $take
    }
    for (int j = 0; j <= nb; ++j) { prev2[j] = prev[j]; prev[j] = cur[j]; }
  }
  out[p] = $final;
"""
_THREAD = """
// One thread per pair: three rolling rows of the table in local memory, strings read from global memory.
#define XS(k) x[(long)p * len + (k)]
#define YS(k) y[(long)p * len + (k)]
__global__ void dp_kernel($sig) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pairs) return;
  int na = $na, nb = $nb;
""" + _PAIR_BODY + """}
extern "C" void edit_distance($sig) {
  dp_kernel<<<(pairs + 63) / 64, 64>>>($call);
}
"""
_STAGED = """
// The block's strings are first copied to shared memory with consecutive (coalesced) reads.
constexpr int PAIRS = 64;
#define XS(k) xs[threadIdx.x][k]
#define YS(k) ys[threadIdx.x][k]
__global__ void dp_kernel($sig) {
  __shared__ unsigned char xs[PAIRS][MAXL + 1], ys[PAIRS][MAXL + 1];
  int p0 = blockIdx.x * PAIRS, p = p0 + threadIdx.x;
  for (int k = threadIdx.x; k < PAIRS * len; k += PAIRS) {
    int q = k / len, c = k % len;
    if (p0 + q < pairs) {
      xs[q][c] = x[(long)(p0 + q) * len + c];
      ys[q][c] = y[(long)(p0 + q) * len + c];
    }
  }
  __syncthreads();
  if (p >= pairs) return;
  int na = $na, nb = $nb;
""" + _PAIR_BODY + """}
extern "C" void edit_distance($sig) {
  dp_kernel<<<(pairs + PAIRS - 1) / PAIRS, PAIRS>>>($call);
}
"""
# Warp wavefront: lane j owns column c = j + 1 and computes row i = t - j at step t. Its left neighbour
# (i, c - 1) is lane j - 1's cell of step t - 1, its diagonal (i - 1, c - 1) lane j - 1's of step t - 2, and
# (i - 2, c - 2) lane j - 2's of step t - 4; h1..h4 keep each lane's last four cells.
_LANE_TAKE = {"corner": "if (i == na && c == nb) best = v;", "best": "best = max2(best, v);",
              "last_row_min": "if (i == na) best = min2(best, v);"}
_WARP_FINAL = {"corner": "na == 0 || nb == 0 ? (na == 0 ? row0(nb) : col0(na)) : __shfl_sync(FULL, best, nb - 1)",
               "best": "warp_best(best, false)", "last_row_min": "min2(warp_best(best, true), col0(na))"}
_WAVEFRONT = """
constexpr unsigned FULL = 0xffffffffu;
__device__ __forceinline__ int warp_best(int v, bool smallest) {
  for (int off = 16; off > 0; off /= 2) {
    int o = __shfl_xor_sync(FULL, v, off);
    v = smallest ? min2(v, o) : max2(v, o);
  }
  return v;
}
__global__ void dp_kernel($sig) {
  int p = (blockIdx.x * blockDim.x + threadIdx.x) / 32, j = threadIdx.x % 32, c = j + 1;
  if (p >= pairs) return;  // uniform per warp
  int na = $na, nb = $nb;
  const unsigned char* xs = x + (long)p * len;
  int b = c <= nb ? sym(y[(long)p * len + c - 1]) : 0, pb = c > 1 && c <= nb ? sym(y[(long)p * len + c - 2]) : 0;
  int best = $init, h1 = 0, h2 = 0, h3 = 0, h4 = 0;
  for (int t = 1; t <= na + nb - 1; ++t) {
    int left = __shfl_up_sync(FULL, h1, 1), diag = __shfl_up_sync(FULL, h2, 1), dd = __shfl_up_sync(FULL, h4, 2);
    int i = t - j, v = h1;
    if (c <= nb && i >= 1 && i <= na) {
      int u = i > 1 ? h1 : row0(c);
      if (j == 0) { left = col0(i); diag = col0(i - 1); }
      else if (i == 1) diag = row0(c - 1);
      if (c == 2) dd = col0(i - 2);
      else if (i == 2) dd = row0(c - 2);
      int a = sym(xs[i - 1]), pa = i > 1 ? sym(xs[i - 2]) : 0;
      v = cell(i, c, u, left, diag, dd, a, b, pa, pb);
      $lane_take
    }
    h4 = h3; h3 = h2; h2 = h1; h1 = v;
  }
  int result = $warp_final;
  if (j == 0) out[p] = result;
}
extern "C" void edit_distance($sig) {
  dp_kernel<<<(pairs + 7) / 8, 256>>>($call);
}
"""
