"""Integral images (summed-area tables) and 2-D running maxima: a prefix scan along both axes of a grid.

out[r][c] combines f(x[i][j]) over i <= r and j <= c (inclusive) or i < r and j < c (exclusive; then row 0
and column 0 are the identity). Scans along rows and columns commute, so kernels choose the order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_SUM, buffer, fill, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, INT_EPILOGUES, float_epilogue, int_epilogue

COMB = {"sum": "p + q", "max": "q > p ? q : p"}
IDENT = {("sum", "int32"): "0", ("max", "int32"): "(-2147483647 - 1)", ("sum", "float32"): "0",
         ("sum", "float64"): "0", ("max", "float32"): "-INFINITY", ("max", "float64"): "-INFINITY"}  # fmt: skip
# (dtype, op, exclusive, map): a max scan is inclusive only (an exclusive one starts from -infinity).
STRUCTURES = [(d, op, ex, k) for d in ("float32", "float64", "int32") for op, ex in (("sum", False), ("sum", True),
              ("max", False)) for k in range(len(INT_EPILOGUES if d == "int32" else FLOAT_EPILOGUES))]  # fmt: skip
_INIT = {"int32": {"dist": "randint", "low": -100, "high": 100}, "float32": None, "float64": None}


def integral_image(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[r][c] = combine of f(x[i][j]) over the rectangle [0, r] x [0, c] (or [0, r) x [0, c))."""
    dtype, op, exclusive, index = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    if dtype == "int32":
        f = int_epilogue(index, int(rng.integers(2, 9)), int(rng.integers(1, 256)))
    else:
        f = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    # The element scanned at (r, c): f of x there, or (exclusive) of x at (r - 1, c - 1), identity on the border.
    elem = "r > 0 && c > 0 ? f(x[(long)(r - 1) * w + c - 1]) : IDENT" if exclusive else "f(x[(long)r * w + c])"
    kw = {"T": t, "f": f, "comb": COMB[op], "ident": IDENT[(op, dtype)], "elem": elem,
          "acc": "double" if dtype == "float32" and op == "sum" else t}  # fmt: skip
    helpers = fill("""#include <math.h>
#define IDENT (($T)$ident)
$Q $T f($T v) { return $f; }
$Q $T comb($T p, $T q) { return $comb; }
$Q $T elem(const $T* x, int w, int r, int c) { return $elem; }
""", Q="$Q", **kw)  # fmt: skip
    head = helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-row", "thread-per-column", "two-pass"], head + _ROW_SCAN + _COL_SCAN +
             _ENTRY.replace("$body", "  rows_kernel<<<(h + 127) / 128, 128>>>(h, w, x, out);\n"
                            "  cols_kernel<<<(w + 127) / 128, 128>>>(h, w, out);")),
        impl("warp_rows", ["warp-per-row", "warp-shuffle", "thread-per-column", "two-pass", "coalesced"],
             head + _WARP_ROW_SCAN + _COL_SCAN +
             _ENTRY.replace("$body", "  warp_rows_kernel<<<(h + 7) / 8, 256>>>(h, w, x, out);\n"
                            "  cols_kernel<<<(w + 127) / 128, 128>>>(h, w, out);")),
        impl("columns_first", ["thread-per-column", "warp-per-row", "warp-shuffle", "coalesced", "scratch-buffer"],
             head + _COL_FIRST + _WARP_ROWS_INPLACE +
             _ENTRY.replace("$body", "  cols_first_kernel<<<(w + 127) / 128, 128>>>(h, w, x, out);\n"
                            "  warp_rows_inplace<<<(h + 7) / 8, 256>>>(h, w, out);")),
    ]  # fmt: skip
    impls = [{**i, "source": fill(i["source"], T=t)} for i in impls]
    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), buffer("x", "in", dtype, ["H", "W"], _INIT[dtype]),
            buffer("out", "out", dtype, ["H", "W"])]  # fmt: skip
    rect = "i < r and j < c (the identity when r or c is 0)" if exclusive else "i <= r and j <= c"
    return task(
        name=f"integral_{op}", family="integral_image", entry="integral", args=args,
        description=f"{'Summed-area table' if op == 'sum' else '2-D running maximum'} of an h x w row-major {dtype} "
        f"grid x: out[r][c] = {op} of f(x[i][j]) over {rect}, with f(v) = {f}."
        + (" Any summation order is accepted within the tolerance." if op == "sum" else ""),
        configs=[{"H": 31, "W": 64}, {"H": 127, "W": 93}, {"H": 256, "W": 300}], hidden=[{"H": 101, "W": 77}],
        perf=[{"H": 8192, "W": 8192}], reference=helpers.replace("$Q", "static") + fill(_REF, **kw),
        implementations=impls, tolerance=TOL_SUM.get(dtype) if op == "sum" else None,
    )  # fmt: skip


_REF = """
void integral(int h, int w, const $T* x, $T* out) {
  for (int r = 0; r < h; ++r) {
    $acc run = IDENT;
    for (int c = 0; c < w; ++c) {
      run = comb(run, elem(x, w, r, c));
      out[(long)r * w + c] = r > 0 ? comb(out[(long)(r - 1) * w + c], ($T)run) : ($T)run;
    }
  }
}
"""
_ENTRY = """
extern "C" void integral(int h, int w, const $T* x, $T* out) {
$body
}
"""
_ROW_SCAN = """
// Pass 1: thread r scans row r into out (neighbouring threads read addresses a row apart).
__global__ void rows_kernel(int h, int w, const $T* x, $T* out) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= h) return;
  $T run = IDENT;
  for (int c = 0; c < w; ++c) {
    run = comb(run, elem(x, w, r, c));
    out[(long)r * w + c] = run;
  }
}
"""
_COL_SCAN = """
// Pass 2: thread c scans column c of out in place; a warp touches consecutive addresses at every step.
__global__ void cols_kernel(int h, int w, $T* out) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= w) return;
  $T run = IDENT;
  for (int r = 0; r < h; ++r) {
    run = comb(run, out[(long)r * w + c]);
    out[(long)r * w + c] = run;
  }
}
"""
_WARP_SCAN = """
// Inclusive scan of v across the warp (Hillis-Steele with shuffles).
__device__ __forceinline__ $T warp_scan($T v, int lane) {
  for (int off = 1; off < 32; off *= 2) {
    $T u = __shfl_up_sync(0xffffffffu, v, off);
    if (lane >= off) v = comb(u, v);
  }
  return v;
}
"""
_WARP_ROW_SCAN = _WARP_SCAN + """
// Pass 1: one warp per row scans 32 columns at a time, carrying the running total between chunks.
__global__ void warp_rows_kernel(int h, int w, const $T* x, $T* out) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= h) return;  // uniform per warp
  $T carry = IDENT;
  for (int c0 = 0; c0 < w; c0 += 32) {
    int c = c0 + lane;
    $T v = warp_scan(c < w ? elem(x, w, r, c) : IDENT, lane);
    v = comb(carry, v);
    if (c < w) out[(long)r * w + c] = v;
    carry = __shfl_sync(0xffffffffu, v, 31);
  }
}
"""
_COL_FIRST = """
// Pass 1: thread c scans column c of the element grid into out (coalesced across the warp).
__global__ void cols_first_kernel(int h, int w, const $T* x, $T* out) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= w) return;
  $T run = IDENT;
  for (int r = 0; r < h; ++r) {
    run = comb(run, elem(x, w, r, c));
    out[(long)r * w + c] = run;
  }
}
"""
_WARP_ROWS_INPLACE = _WARP_SCAN + """
// Pass 2: one warp per row scans out's row in place, 32 columns at a time.
__global__ void warp_rows_inplace(int h, int w, $T* out) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= h) return;  // uniform per warp
  $T carry = IDENT;
  for (int c0 = 0; c0 < w; c0 += 32) {
    int c = c0 + lane;
    $T v = warp_scan(c < w ? out[(long)r * w + c] : IDENT, lane);
    v = comb(carry, v);
    if (c < w) out[(long)r * w + c] = v;
    carry = __shfl_sync(0xffffffffu, v, 31);
  }
}
"""
