"""Reductions to one value: sums/max/min of mapped elements, norms, dot-like pairs, arg-max/arg-min."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.elementwise import INT_UNARY, binary_expr, unary_chain
from cudaperf_env.datagen.families.operators import to_double

_IDENT = {
    ("sum", "float32"): "0.0f", ("sum", "float64"): "0.0", ("sum", "int32"): "0",
    ("max", "float32"): "-INFINITY", ("max", "float64"): "-INFINITY", ("max", "int32"): "(-2147483647 - 1)",
    ("min", "float32"): "INFINITY", ("min", "float64"): "INFINITY", ("min", "int32"): "2147483647",
}  # fmt: skip
_COMB = {"sum": "p + q", "max": "q > p ? q : p", "min": "q < p ? q : p"}
# name -> (element of a, final of v and n, combine); float32 spelling.
NORMS = {
    "l1": ("fabsf(a)", "v", "sum"), "l2": ("a * a", "sqrtf(v)", "sum"), "linf": ("fabsf(a)", "v", "max"),
    "rms": ("a * a", "sqrtf(v / n)", "sum"), "l3": ("fabsf(a) * a * a", "cbrtf(v)", "sum"),
    "mean_abs": ("fabsf(a)", "v / n", "sum"), "log_sum_sq": ("a * a", "logf(1.0f + v)", "sum"),
    "min_abs": ("fabsf(a)", "v", "min"), "l4": ("a * a * a * a", "sqrtf(sqrtf(v))", "sum"),
    "huber": ("fabsf(a) <= 1.0f ? 0.5f * a * a : fabsf(a) - 0.5f", "v", "sum"),
    "log_cosh": ("logf(coshf(a))", "v / n", "sum"), "geomean_abs": ("logf(fabsf(a) + 1e-3f)", "expf(v / n)", "sum"),
    "logsumexp": ("expf(a)", "logf(v)", "sum"),
}  # fmt: skip
# The vector a norm is taken of: x, the difference x - y, or the elementwise product x * y.
NORM_INPUTS = {"x": "a", "diff": "(a - b)", "product": "(a * b)"}
NORM_STRUCTURES = grid(sorted(NORMS), ("float32", "float64"), sorted(NORM_INPUTS))
_INPUT = {"float32": {"dist": "normal", "mean": 0, "std": 1}, "float64": {"dist": "normal", "mean": 0, "std": 1},
          "int32": {"dist": "randint", "low": 0, "high": 1000}}  # fmt: skip
_INT_FREE = {"int32": "", "float32": "#include <math.h>\n", "float64": "#include <math.h>\n"}


def reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[0] = combine over i of g(x[i]) with combine in {sum, max, min} and g a random map."""
    dtype, op = pick(rng, ("float32", "float64", "int32")), pick(rng, ("sum", "max", "min"))
    op = "sum" if dtype == "int32" else op  # the max of bounded int maps over many draws is their bound: a constant
    depth = 2 if dtype == "int32" else int(rng.integers(1, 3))  # int maps are fewer: chain two
    if dtype == "int32":
        elem = "a"
        for _ in range(depth):
            elem = fill(pick(rng, INT_UNARY), x=elem, k=int(rng.integers(2, 9)), m=int(rng.integers(1, 256)))
    else:
        elem = unary_chain(rng, "a", depth, "float32")
    return _reduce_task("reduce", dtype, ["x"], elem, "v", op)


def norm(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """A vector norm or norm-like statistic of x (or of x - y)."""
    name, dtype, form = nth(variant, NORM_STRUCTURES)
    elem, final, op = NORMS[name]
    ins = ["x"] if form == "x" else ["x", "y"]
    return _reduce_task("norm", dtype, ins, re.sub(r"\ba\b", NORM_INPUTS[form], elem), final, op)


def dot_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[0] = combine over i of g(x[i], y[i]): dot products, distances and their relatives."""
    dtype, op = pick(rng, ("float32", "float64", "int32")), pick(rng, ("sum", "sum", "max", "min"))
    op = "sum" if dtype == "int32" else op  # the max of bounded int maps over many draws is their bound: a constant
    return _reduce_task("dot_reduce", dtype, ["x", "y"], binary_expr(rng, dtype), "v", op)


def _reduce_task(family: str, dtype: str, ins: list[str], elem: str, final: str, op: str) -> dict[str, Any]:
    if dtype == "float64":
        elem, final = to_double(elem), to_double(final)
    t = CTYPE[dtype]
    acc_ref = "double" if dtype != "int32" else "int"
    vars_ = ["a", "b"][: len(ins)]
    args = [scalar("n", "int32", "N"), *(buffer(v, "in", dtype, ["N"], _INPUT[dtype]) for v in ins)]
    args.append(buffer("out", "out", dtype, [1]))
    sig = ", ".join(["int n", *(f"const {t}* {v}" for v in ins), f"{t}* out"])
    fparams = ", ".join(f"{t} {v}" for v in vars_)
    load = f"elem({', '.join(f'{v}[i]' for v in ins)})"
    ident = _IDENT[(op, dtype)]
    comb = _COMB[op]
    reference = fill(
        """$inc
static $T elem($fparams) { return $elem; }
static $R fin($R v, int n) { return $final; }
void reduce($sig) {
  $R acc = $ident;
  for (int i = 0; i < n; ++i) {
    $R q = elem($refload), p = acc;
    acc = $comb;
  }
  out[0] = ($T)fin(acc, n);
}""",
        inc=_INT_FREE[dtype] + ("#include <limits.h>\n" if dtype == "int32" else ""), T=t, R=acc_ref,
        fparams=fparams, elem=elem, final=re.sub(r"\b(sqrt|cbrt|log|exp)f\b", r"\1", final),
        sig=sig, ident=ident.replace("f", "") if dtype != "int32" and op == "sum" else ident, refload=load[5:-1],
        comb=comb,
    )
    head = fill(
        """#include <math.h>
constexpr int THREADS = 256;
__device__ __forceinline__ $T elem($fparams) { return $elem; }
__device__ __forceinline__ $T comb($T p, $T q) { return $comb; }
__device__ __forceinline__ $T fin($T v, int n) { return $final; }
#define IDENT ($ident)
""",
        T=t, fparams=fparams, elem=elem, comb=comb, final=final, ident=ident,
    )
    kw = {"T": t, "sig": sig, "load": load, "inparams": ", ".join(f"const {t}* {v}" for v in ins),
          "innames": ", ".join(ins)}  # fmt: skip
    impls = [
        impl("naive", ["tree-reduction", "shared-memory", "two-pass"], head + fill(_NAIVE, **kw)),
        impl("grid_shuffle", ["grid-stride", "warp-shuffle", "two-pass"], head + fill(_SHUFFLE, **kw)),
        impl("unroll4", ["multi-element-per-thread", "loop-unrolling", "shared-memory", "warp-shuffle"],
             head + fill(_UNROLL, **kw)),
    ]
    what = f"{op} over i of g({', '.join(v + '[i]' for v in ins)}), g({', '.join(vars_)}) = {elem}"
    description = f"Reduce n {dtype} values to one: out[0] = h(v, n) with v = {what}, and h(v, n) = {final}."
    sum_tol = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-2}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-8}}
    return task(
        name=family, family=family, description=description, entry="reduce", args=args,
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65536}], hidden=[{"N": 30011}], perf=[{"N": 1 << 25}],
        reference=reference, implementations=impls, tolerance=sum_tol.get(dtype),
    )


_FINISH = """
__global__ void finish(int m, int n, const $T* partial, $T* out) {
  __shared__ $T s[THREADS];
  $T v = IDENT;
  for (int j = threadIdx.x; j < m; j += THREADS) v = comb(v, partial[j]);
  s[threadIdx.x] = v;
  __syncthreads();
  for (int st = THREADS / 2; st > 0; st /= 2) {
    if (threadIdx.x < st) s[threadIdx.x] = comb(s[threadIdx.x], s[threadIdx.x + st]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = fin(s[0], n);
}
"""
_NAIVE = (
    """
// One element per thread, a shared-memory tree per block, then one block combines the partials.
__global__ void partials(int n, $inparams, $T* partial) {
  __shared__ $T s[THREADS];
  int i = blockIdx.x * THREADS + threadIdx.x;
  s[threadIdx.x] = i < n ? $load : IDENT;
  __syncthreads();
  for (int st = THREADS / 2; st > 0; st /= 2) {
    if (threadIdx.x < st) s[threadIdx.x] = comb(s[threadIdx.x], s[threadIdx.x + st]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
"""
    + _FINISH
    + """
extern "C" void reduce($sig) {
  int blocks = (n + THREADS - 1) / THREADS;
  $T* partial = nullptr;
  cudaMalloc(&partial, blocks * sizeof($T));
  partials<<<blocks, THREADS>>>(n, $innames, partial);
  finish<<<1, THREADS>>>(blocks, n, partial, out);
  cudaFree(partial);
}
"""
)
_WARP = """
__device__ __forceinline__ $T warp_reduce($T v) {
  for (int off = 16; off > 0; off /= 2) v = comb(v, __shfl_down_sync(0xffffffffu, v, off));
  return v;
}
"""
_SHUFFLE = (
    _WARP
    + """
// Grid-stride accumulation in registers, warp shuffles, one partial per block.
__global__ void partials(int n, $inparams, $T* partial) {
  __shared__ $T warp_totals[THREADS / 32];
  $T v = IDENT;
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS) v = comb(v, $load);
  v = warp_reduce(v);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? warp_totals[lane] : IDENT;
    v = warp_reduce(v);
    if (lane == 0) partial[blockIdx.x] = v;
  }
}
"""
    + _FINISH
    + """
extern "C" void reduce($sig) {
  int blocks = max(1, min((n + THREADS - 1) / THREADS, 512));
  $T* partial = nullptr;
  cudaMalloc(&partial, blocks * sizeof($T));
  partials<<<blocks, THREADS>>>(n, $innames, partial);
  finish<<<1, THREADS>>>(blocks, n, partial, out);
  cudaFree(partial);
}
"""
)
_UNROLL = (
    _WARP
    + """
// Four elements per thread (unrolled, coalesced), a shared-memory tree down to one warp, then shuffles.
constexpr int ITEMS = 4;

__global__ void partials(int n, $inparams, $T* partial) {
  __shared__ $T s[THREADS];
  int base = blockIdx.x * THREADS * ITEMS + threadIdx.x;
  $T v = IDENT;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS;
    if (i < n) v = comb(v, $load);
  }
  s[threadIdx.x] = v;
  __syncthreads();
  for (int st = THREADS / 2; st >= 32; st /= 2) {
    if (threadIdx.x < st) s[threadIdx.x] = comb(s[threadIdx.x], s[threadIdx.x + st]);
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    v = warp_reduce(s[threadIdx.x]);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
  }
}
"""
    + _FINISH
    + """
extern "C" void reduce($sig) {
  int blocks = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
  $T* partial = nullptr;
  cudaMalloc(&partial, blocks * sizeof($T));
  partials<<<blocks, THREADS>>>(n, $innames, partial);
  finish<<<1, THREADS>>>(blocks, n, partial, out);
  cudaFree(partial);
}
"""
)
