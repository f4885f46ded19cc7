"""Segmented reductions: sum / max / min of a mapped input over segments given by CSR-style offsets, then a
post-map of each segment's result."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_SUM, buffer, fill, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import (
    FLOAT_EPILOGUES,
    INT_EPILOGUES,
    float_epilogue,
    int_epilogue,
    to_double,
)
from cudaperf_env.datagen.families.scan import IDENT

COMB = {"sum": "p + q", "max": "q > p ? q : p", "min": "q < p ? q : p"}
INT_ELEM = ("v", "v * v", "abs(v)", "v & 7", "v % 5", "v > 0 ? v : 0")
# Maps that do not saturate over a long segment (max of v & 7 is 7 almost surely), for max / min.
INT_ELEM_ORDER = ("v", "v * v", "abs(v)", "v > 0 ? v : 0", "v / 3")
FLOAT_ELEM = ("v", "v * v", "fabsf(v)", "v > 0.0f ? v : 0.25f * v", "floorf(v * 2.0f)")
_INIT = {"int32": {"dist": "randint", "low": -50, "high": 51}, "float32": {"dist": "normal", "mean": 0.5, "std": 2},
         "float64": {"dist": "normal", "mean": 0.5, "std": 2}}  # fmt: skip
_INIT_WIDE = {"dist": "randint", "low": -1000, "high": 1001}
STRUCTURES = [(d, op, e, k) for d in ("int32", "float32", "float64") for op in ("sum", "max", "min")
              for e in (FLOAT_ELEM if d != "int32" else INT_ELEM if op == "sum" else INT_ELEM_ORDER)
              for k in range(len(INT_EPILOGUES if d == "int32" else FLOAT_EPILOGUES))]
_TOL_EXACT = {"float32": {"rtol": 1.0e-6, "atol": 1.0e-6}, "float64": {"rtol": 1.0e-12, "atol": 1.0e-12}}


def segmented_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[s] = op over the segment [offsets[s], offsets[s+1]) of g(x[e]); an empty segment gives 0."""
    dtype, op, elem, index = nth(variant, STRUCTURES)
    if dtype == "int32":
        post = int_epilogue(index, int(rng.integers(2, 9)), int(rng.integers(1, 256)))
    else:
        post = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    if dtype == "float64":
        elem = to_double(elem)
    t = CTYPE[dtype]
    sig = f"int s, int n, const int* offsets, const {t}* x, {t}* y"
    helpers = (f"$Q {t} elem({t} v) {{ return {elem}; }}\n$Q {t} comb({t} p, {t} q) {{ return {COMB[op]}; }}\n"
               f"$Q {t} post({t} v) {{ return {post}; }}\n#define IDENT ({IDENT[(op, dtype)]})\n")  # fmt: skip
    kw = {"T": t, "sig": sig}
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-segment"], head + fill(_THREAD, **kw)),
        impl("warp_per_segment", ["warp-per-segment", "warp-shuffle", "coalesced"], head + fill(_WARP, **kw)),
        impl("block_per_segment", ["block-per-segment", "shared-memory", "tree-reduction", "coalesced"],
             head + fill(_BLOCK, **kw)),
    ]  # fmt: skip
    d = int(pick(rng, (3, 12, 40, 150)))  # mean segment length
    args = [scalar("s", "int32", "S"), scalar("n", "int32", "E"),
            buffer("offsets", "in", "int32", ["S + 1"], {"dist": "csr_rowptr", "nnz": "E"}),
            buffer("x", "in", dtype, ["E"], _INIT_WIDE if dtype == "int32" and op != "sum" else _INIT[dtype]),
            buffer("y", "out", dtype, ["S"])]  # fmt: skip
    reference = "#include <math.h>\n#include <stdlib.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw)
    return task(
        name="segmented_reduce", family="segmented_reduce", entry="segmented_reduce", args=args,
        description=f"Segmented {op}-reduction of n {dtype} values in s segments: segment k is [offsets[k], "
        f"offsets[k+1]) (offsets non-decreasing, offsets[0] = 0, offsets[s] = n; segments may be empty or long). "
        f"y[k] = post(r) with r = {op} over the segment of g(x[e]), g(v) = {elem}, r = 0 for an empty segment, "
        f"and post(v) = {post}. "
        "Any association order is accepted within the tolerance.",
        configs=[{"S": 7, "E": 7 * d + 3}, {"S": 1000, "E": 1000 * d + 11}, {"S": 2003, "E": 2003 * d + 5}],
        hidden=[{"S": 1777, "E": 1777 * d + 1}],
        perf=[{"S": 1 << 20, "E": (1 << 20) * d}, {"S": 4099, "E": 4099 * 4096}],
        reference=reference, implementations=impls,
        tolerance=(TOL_SUM if op == "sum" else _TOL_EXACT).get(dtype),
    )  # fmt: skip


_REF = """
void segmented_reduce($sig) {
  (void)n;
  for (int k = 0; k < s; ++k) {
    $T acc = IDENT;
    for (int e = offsets[k]; e < offsets[k + 1]; ++e) acc = comb(acc, elem(x[e]));
    y[k] = post(offsets[k] == offsets[k + 1] ? ($T)0 : acc);
  }
}
"""
_THREAD = """
// One thread per segment: neighbouring threads read addresses a segment apart.
__global__ void seg_kernel($sig) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= s) return;
  int begin = offsets[k], end = offsets[k + 1];
  $T acc = IDENT;
  for (int e = begin; e < end; ++e) acc = comb(acc, elem(x[e]));
  y[k] = post(begin == end ? ($T)0 : acc);
}
extern "C" void segmented_reduce($sig) {
  seg_kernel<<<(s + 255) / 256, 256>>>(s, n, offsets, x, y);
}
"""
_WARP = """
// One warp per segment: lanes stride through it together, a butterfly of shuffles combines the lanes.
__global__ void seg_kernel($sig) {
  int k = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (k >= s) return;  // uniform per warp
  int begin = offsets[k], end = offsets[k + 1];
  $T acc = IDENT;
  for (int e = begin + lane; e < end; e += 32) acc = comb(acc, elem(x[e]));
  for (int off = 16; off > 0; off /= 2) acc = comb(acc, __shfl_xor_sync(0xffffffffu, acc, off));
  if (lane == 0) y[k] = post(begin == end ? ($T)0 : acc);
}
extern "C" void segmented_reduce($sig) {
  seg_kernel<<<(s + 7) / 8, 256>>>(s, n, offsets, x, y);
}
"""
_BLOCK = """
// One block per segment: a strided pass per thread, then a shared-memory tree.
constexpr int B = 64;
__global__ void seg_kernel($sig) {
  __shared__ $T part[B];
  int k = blockIdx.x, begin = offsets[k], end = offsets[k + 1];
  $T acc = IDENT;
  for (int e = begin + threadIdx.x; e < end; e += B) acc = comb(acc, elem(x[e]));
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int half = B / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] = comb(part[threadIdx.x], part[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) y[k] = post(begin == end ? ($T)0 : part[0]);
}
extern "C" void segmented_reduce($sig) {
  if (s > 0) seg_kernel<<<s, B>>>(s, n, offsets, x, y);
}
"""
