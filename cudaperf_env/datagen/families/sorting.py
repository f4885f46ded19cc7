"""Row sorts of a rows x cols matrix by a key, ties broken by index: values, argsort or both."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import spell

# Sort keys of a value v, per dtype kind (float32 spelling; float64 drops the f).
# Keys are exactly rounded on every device (no contractible a * b + c, no libm), so orders agree bit for bit.
FLOAT_KEYS = ("v", "fabsf(v)", "v * v", "fabsf(v - 1.0f)", "floorf(v * 4.0f)", "v * fabsf(v)", "fminf(v, 0.5f)",
              "fabsf(v) - v", "floorf(fabsf(v))")  # fmt: skip
INT_KEYS = ("v", "v % 7", "v >> 3", "(v * 37) & 63", "-v", "v & 15", "v * v", "(v ^ 5) % 11", "v / 4")
KEYS = [(d, k) for d in ("float32", "float64") for k in FLOAT_KEYS] + [("int32", k) for k in INT_KEYS]
OUTPUTS = ("values", "argsort", "both")
STRUCTURES = [(d, k, out, asc) for (d, k), out, asc in grid(KEYS, OUTPUTS, (True, False))]
MAX_COLS = 1024


def sort_rows(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Sort each row by key(x), ascending or descending, stable (ties by index); output sorted values and/or indices."""
    dtype, key, out_mode, ascending = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    key = spell(key, dtype)
    kt = "int" if dtype == "int32" else t
    cmp = "<" if ascending else ">"
    outs = []
    if out_mode != "argsort":
        outs.append(buffer("y", "out", dtype, ["R", "C"]))
    if out_mode != "values":
        outs.append(buffer("idx", "out", "int32", ["R", "C"]))
    sig = f"int rows, int cols, const {t}* x, " + ", ".join(f"{CTYPE[o['dtype']]}* {o['name']}" for o in outs)
    call = "rows, cols, x, " + ", ".join(o["name"] for o in outs)
    write = " ".join(
        ("y[base + $pos] = x[base + $src];" if o["name"] == "y" else "idx[base + $pos] = $src;") for o in outs
    )
    helpers = (f"$Q {kt} sort_key({t} v) {{ return {key}; }}\n"
               f"// Strict order of (key, index) pairs; indices >= cols (padding) come last.\n"
               f"$Q int before({kt} ka, int ia, {kt} kb, int ib, int cols) {{\n"
               f"  if (ia >= cols || ib >= cols) return ia < ib;\n"
               f"  return ka {cmp} kb || (ka == kb && ia < ib);\n}}\n")  # fmt: skip
    kw = {"T": t, "K": kt, "sig": sig, "call": call, "MAX": MAX_COLS,
          "write_ref": fill(write, pos="k", src="ord[k]"), "write_rank": fill(write, pos="rank", src="i"),
          "write_sh": fill(write, pos="k", src="si[k]")}  # fmt: skip
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-element", "rank-sort"], head + fill(_RANK, **kw)),
        impl(
            "odd_even_smem",
            ["block-per-row", "odd-even-transposition-sort", "shared-memory"],
            head + fill(_ODD_EVEN, **kw),
        ),
        impl("bitonic_smem", ["block-per-row", "bitonic-sort", "shared-memory"], head + fill(_BITONIC, **kw)),
    ]
    init = {"dist": "randint", "low": -50, "high": 50} if dtype == "int32" else {"dist": "normal", "mean": 0, "std": 2}
    args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C"), buffer("x", "in", dtype, ["R", "C"], init),
            *outs]  # fmt: skip
    produce = {
        "values": "y[r][k] = x[r][p_k]",
        "argsort": "idx[r][k] = p_k",
        "both": "y[r][k] = x[r][p_k] and idx[r][k] = p_k",
    }[out_mode]
    return task(
        name="sort_rows", family="sort_rows", entry="sort_rows", args=args,
        description=f"Stable row sort of a rows x cols row-major {dtype} matrix x (1 <= cols <= {MAX_COLS}): for "
        f"each row r, p is the permutation of 0..cols-1 ordering the row by sort_key(x[r][j]) = {key} "
        f"{'ascending' if ascending else 'descending'}, equal keys kept in index order; {produce}.",
        configs=[{"R": 5, "C": 7}, {"R": 33, "C": 100}, {"R": 64, "C": 256}, {"R": 9, "C": 1000}],
        hidden=[{"R": 13, "C": 513}], perf=[{"R": 65536, "C": 256}, {"R": 8191, "C": 1024}],
        reference="#include <math.h>\n#include <stdlib.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw),
        implementations=impls,
    )  # fmt: skip


_REF = """
void sort_rows($sig) {
  int* ord = (int*)malloc(sizeof(int) * (size_t)cols);
  $K* keys = ($K*)malloc(sizeof($K) * (size_t)cols);
  for (int r = 0; r < rows; ++r) {
    long base = (long)r * cols;
    for (int k = 0; k < cols; ++k) ord[k] = k;
    for (int k = 0; k < cols; ++k) keys[k] = sort_key(x[base + k]);
    for (int k = 1; k < cols; ++k) {  /* insertion sort: stable */
      int o = ord[k], p = k;
      while (p > 0 && before(keys[o], o, keys[ord[p - 1]], ord[p - 1], cols)) { ord[p] = ord[p - 1]; --p; }
      ord[p] = o;
    }
    for (int k = 0; k < cols; ++k) { $write_ref }
  }
  free(ord);
  free(keys);
}
"""
_RANK = """
// Rank sort: one thread per element; its output position is the number of elements ordered before it.
__global__ void rank_kernel($sig) {
  long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (t >= (long)rows * cols) return;
  int r = (int)(t / cols), i = (int)(t % cols);
  long base = (long)r * cols;
  $K ki = sort_key(x[base + i]);
  int rank = 0;
  for (int j = 0; j < cols; ++j) rank += before(sort_key(x[base + j]), j, ki, i, cols);
  $write_rank
}
extern "C" void sort_rows($sig) {
  long total = (long)rows * cols;
  rank_kernel<<<(unsigned)((total + 255) / 256), 256>>>($call);
}
"""
_ODD_EVEN = """
// Odd-even transposition sort, one block per row: cols phases of compare-exchanges in shared memory.
__global__ void odd_even_kernel($sig) {
  __shared__ $K sk[$MAX];
  __shared__ int si[$MAX];
  long base = (long)blockIdx.x * cols;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) { sk[k] = sort_key(x[base + k]); si[k] = k; }
  for (int phase = 0; phase < cols; ++phase) {
    __syncthreads();
    for (int a = 2 * threadIdx.x + (phase & 1); a + 1 < cols; a += 2 * blockDim.x) {
      if (before(sk[a + 1], si[a + 1], sk[a], si[a], cols)) {
        $K tk = sk[a]; sk[a] = sk[a + 1]; sk[a + 1] = tk;
        int ti = si[a]; si[a] = si[a + 1]; si[a + 1] = ti;
      }
    }
  }
  __syncthreads();
  for (int k = threadIdx.x; k < cols; k += blockDim.x) { $write_sh }
}
extern "C" void sort_rows($sig) {
  int threads = min(512, max(32, (cols + 1) / 2));
  odd_even_kernel<<<rows, threads>>>($call);
}
"""
_BITONIC = """
// Bitonic network in shared memory, one block per row, padded to a power of two P: log^2 P barriers.
__global__ void bitonic_kernel($sig, int p) {
  __shared__ $K sk[$MAX];
  __shared__ int si[$MAX];
  long base = (long)blockIdx.x * cols;
  for (int k = threadIdx.x; k < p; k += blockDim.x) { sk[k] = k < cols ? sort_key(x[base + k]) : ($K)0; si[k] = k; }
  for (int size = 2; size <= p; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      __syncthreads();
      for (int t = threadIdx.x; t < p / 2; t += blockDim.x) {
        int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
        bool up = (lo & size) == 0;
        if (before(sk[hi], si[hi], sk[lo], si[lo], cols) == up) {
          $K tk = sk[lo]; sk[lo] = sk[hi]; sk[hi] = tk;
          int ti = si[lo]; si[lo] = si[hi]; si[hi] = ti;
        }
      }
    }
  }
  __syncthreads();
  for (int k = threadIdx.x; k < cols; k += blockDim.x) { $write_sh }
}
extern "C" void sort_rows($sig) {
  int p = 1;
  while (p < cols) p *= 2;
  bitonic_kernel<<<rows, max(32, min(p / 2, 512))>>>($call, p);
}
"""
