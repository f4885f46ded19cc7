"""Sparse matrix-vector products on CSR matrices over several semirings (sum-product, max-plus ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue, spell

# (element of a matrix entry v and the gathered x value xv, combine of p and q, identity), float32 spelling.
SEMIRINGS = {
    "sum": ("v * xv", "p + q", "0.0f"),
    "sum_abs": ("fabsf(v * xv)", "p + q", "0.0f"),
    "sum_sq": ("v * xv * xv", "p + q", "0.0f"),
    "max_plus": ("v + xv", "fmaxf(p, q)", "-INFINITY"),
    "min_plus": ("v + xv", "fminf(p, q)", "INFINITY"),
    "max_abs": ("fabsf(v * xv)", "fmaxf(p, q)", "0.0f"),
}
# (semiring, epilogue of alpha * acc, whether beta * yold is added: yold = y[i] on entry, y inout)
STRUCTURES = grid(("float32", "float64"), sorted(SEMIRINGS), range(len(FLOAT_EPILOGUES)), (False, True))
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-10}}


def spmv_csr(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = epilogue(combine over the row's entries e of elem(vals[e], x[colidx[e]])); empty rows give 0."""
    dtype, ring, index, inout = nth(variant, STRUCTURES)
    elem, comb, ident = (spell(s, dtype) for s in SEMIRINGS[ring])
    alpha = lit(float(rng.uniform(0.5, 2.0)), dtype)
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)), var=f"({alpha} * acc)")
    if inout:
        epi += f" + {lit(float(rng.uniform(-1.0, 1.0)), dtype)} * yold"
    t = CTYPE[dtype]
    sig = f"int m, int n, const int* rowptr, const int* colidx, const {t}* vals, const {t}* x, {t}* y"
    kw = {"T": t, "sig": sig, "ident": ident, "old": "y[i]" if inout else "0"}
    helpers = (f"$Q {t} elem({t} v, {t} xv) {{ return {elem}; }}\n$Q {t} comb({t} p, {t} q) {{ return {comb}; }}\n"
               f"$Q {t} finish({t} acc, {t} yold) {{ return {epi}; }}\n")  # fmt: skip
    reference = "#include <math.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw)
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-row", "scalar-csr"], head + fill(_SCALAR, **kw)),
        impl("warp_per_row", ["warp-per-row", "vector-csr", "warp-shuffle", "coalesced"], head + fill(_WARP, **kw)),
        impl("subwarp4", ["vector-csr", "warp-shuffle", "coalesced", "sub-warp-groups"], head + fill(_GROUP, **kw)),
    ]
    d = int(pick(rng, (3, 8, 24, 60)))  # mean entries per row
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N"),
            buffer("rowptr", "in", "int32", ["M + 1"], {"dist": "csr_rowptr", "nnz": "E"}),
            buffer("colidx", "in", "int32", ["E"], {"dist": "randint", "low": 0, "high": "N"}),
            buffer("vals", "in", dtype, ["E"]), buffer("x", "in", dtype, ["N"]),
            buffer("y", "inout" if inout else "out", dtype, ["M"])]  # fmt: skip
    return task(
        name="spmv_csr", family="spmv_csr", entry="spmv_csr", args=args,
        description=f"CSR sparse matrix-vector product over a semiring ({dtype}): A is m x n, row i holds vals[e] at "
        f"column colidx[e] for e in [rowptr[i], rowptr[i+1]) (rows may be empty, columns may repeat). "
        f"acc = combine over the row of elem(vals[e], x[colidx[e]]) with elem(v, xv) = {elem} and combine(p, q) = "
        f"{comb}; y[i] = {epi}{' (yold = y[i] on entry)' if inout else ''}, "
        f"and acc = 0 for an empty row"
        f". Any order of combining is accepted within the tolerance.",
        configs=[{"M": 19, "N": 13, "E": 19 * d + 5}, {"M": 1000, "N": 999, "E": 1000 * d + 11},
                 {"M": 12007, "N": 9001, "E": 12007 * d + 7}],
        hidden=[{"M": 1777, "N": 2999, "E": 1777 * d + 3}],
        perf=[{"M": 1 << 20, "N": 1 << 20, "E": (1 << 20) * d}, {"M": 262143, "N": 1 << 20, "E": 262143 * 4 * d}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
void spmv_csr($sig) {
  (void)n;
  for (int i = 0; i < m; ++i) {
    $T acc = $ident;
    for (int e = rowptr[i]; e < rowptr[i + 1]; ++e) acc = comb(acc, elem(vals[e], x[colidx[e]]));
    if (rowptr[i] == rowptr[i + 1]) acc = 0;
    y[i] = finish(acc, $old);
  }
}
"""
_SCALAR = """
// Scalar CSR: one thread per row; the loads of neighbouring threads are a row apart.
__global__ void spmv_scalar($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  int begin = rowptr[i], end = rowptr[i + 1];
  $T acc = $ident;
  for (int e = begin; e < end; ++e) acc = comb(acc, elem(vals[e], x[colidx[e]]));
  if (begin == end) acc = 0;
  y[i] = finish(acc, $old);
}
extern "C" void spmv_csr($sig) {
  spmv_scalar<<<(m + 255) / 256, 256>>>(m, n, rowptr, colidx, vals, x, y);
}
"""
_WARP = """
// Vector CSR: one warp per row, lanes read consecutive entries, butterfly shuffles combine.
__global__ void spmv_warp($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= m) return;  // uniform per warp
  int begin = rowptr[i], end = rowptr[i + 1];
  $T acc = $ident;
  for (int e = begin + lane; e < end; e += 32) acc = comb(acc, elem(vals[e], __ldg(&x[colidx[e]])));
  for (int off = 16; off > 0; off /= 2) acc = comb(acc, __shfl_xor_sync(0xffffffffu, acc, off));
  if (begin == end) acc = 0;
  if (lane == 0) y[i] = finish(acc, $old);
}
extern "C" void spmv_csr($sig) {
  spmv_warp<<<(m + 7) / 8, 256>>>(m, n, rowptr, colidx, vals, x, y);
}
"""
_GROUP = """
// Groups of 4 lanes per row: short rows keep most lanes busy; width-4 shuffles combine.
constexpr int G = 4;
__global__ void spmv_group($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / G, lane = threadIdx.x % G;
  bool active = i < m;  // no early return: all lanes of the warp take part in the shuffles
  int begin = active ? rowptr[i] : 0, end = active ? rowptr[i + 1] : 0;
  $T acc = $ident;
  for (int e = begin + lane; e < end; e += G) acc = comb(acc, elem(vals[e], x[colidx[e]]));
  for (int off = G / 2; off > 0; off /= 2) acc = comb(acc, __shfl_xor_sync(0xffffffffu, acc, off, G));
  if (begin == end) acc = 0;
  if (active && lane == 0) y[i] = finish(acc, $old);
}
extern "C" void spmv_csr($sig) {
  spmv_group<<<(m + 63) / 64, 256>>>(m, n, rowptr, colidx, vals, x, y);
}
"""
