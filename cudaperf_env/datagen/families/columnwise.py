"""Column-wise reductions and normalizations of row-major matrices: the coalesced column access pattern.

Both families reduce every column to its statistics (a combined map f(v), the sum of squares and the sum)
in one of three ways, shared as device helpers: a thread walks its column, a block strip of row groups
reduces through shared memory, or a warp strides the column and shuffles. A reduction then stores
epilogue(finish(stats)); a normalization maps every element with the column's statistics.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue, spell

# op -> (mapped value f(v), combine of a and b, identity, finalize of (acc, acc2, m)); acc2 = sum of v * v.
OPS: dict[str, tuple[str, str, str, str]] = {
    "sum": ("v", "a + b", "0", "acc"),
    "mean": ("v", "a + b", "0", "acc / m"),
    "l2norm": ("v * v", "a + b", "0", "sqrtf(acc)"),
    "abssum": ("fabsf(v)", "a + b", "0", "acc"),
    "max": ("v", "fmaxf(a, b)", "-INFINITY", "acc"),
    "min": ("v", "fminf(a, b)", "INFINITY", "acc"),
    "absmax": ("fabsf(v)", "fmaxf(a, b)", "0", "acc"),
    "var": ("v", "a + b", "0", "fmaxf(acc2 / m - (acc / m) * (acc / m), 0.0f)"),
    "std": ("v", "a + b", "0", "sqrtf(fmaxf(acc2 / m - (acc / m) * (acc / m), 0.0f))"),
}
# Normalizations: out[i][j] = expression of v = a[i][j] and the column's statistics.
NORMS: dict[str, tuple[str, str]] = {
    "center": ("mean", "v - stat"),
    "standardize": ("std", "(v - mean) / (stat + 1e-5f)"),
    "maxabs_scale": ("absmax", "v / (stat + 1e-6f)"),
    "l2_normalize": ("l2norm", "v / fmaxf(stat, 1e-6f)"),
    "sub_max": ("max", "expf(v - stat)"),
}
_EPILOGUES = range(len(FLOAT_EPILOGUES))
REDUCE_STRUCTURES = grid(sorted(OPS), ("float32", "float64"), _EPILOGUES)
NORMALIZE_STRUCTURES = grid(sorted(NORMS), ("float32", "float64"), _EPILOGUES)
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-10}}
CONFIGS = [{"M": 64, "N": 32}, {"M": 257, "N": 129}, {"M": 1023, "N": 301}]


def _parts(dtype: str, op: str) -> dict[str, str]:
    f, comb, ident, fin = (spell(s, dtype) for s in OPS[op])
    return {"f": f, "comb": comb, "ident": ident, "fin": fin, "T": CTYPE[dtype]}


def _head(kw: dict[str, str], device: bool) -> str:
    q = "__device__ __forceinline__" if device else "static"
    return fill("""#include <math.h>
$q $T fmap($T v) { return $f; }
$q $T combine($T a, $T b) { return $comb; }
$q $T finish($T acc, $T acc2, int m) { return $fin; }
$q $T epilogue($T v) { return $epi; }
""", q=q, **kw) + (fill(_STATS, **kw) if device else "")  # fmt: skip


# The statistics of a column and the three ways of reducing one (thread, block strip, warp).
_STATS = """
struct Stats { $T acc, acc2, sum; };
__device__ __forceinline__ Stats stats_start() { return Stats{$ident, 0, 0}; }
__device__ __forceinline__ void stats_add(Stats& s, $T v) {
  s.acc = combine(s.acc, fmap(v));
  s.acc2 += v * v;
  s.sum += v;
}
__device__ __forceinline__ void stats_merge(Stats& s, const Stats& o) {
  s.acc = combine(s.acc, o.acc);
  s.acc2 += o.acc2;
  s.sum += o.sum;
}
// Thread j walks down column j: at every step the warp reads consecutive elements of one row.
__device__ Stats thread_stats(int m, int n, const $T* a, int j) {
  Stats s = stats_start();
  for (int i = 0; i < m; ++i) stats_add(s, a[(long)i * n + j]);
  return s;
}
// A block of COLS columns x GROUPS row groups: each group reads coalesced row segments, then the groups
// combine in shared memory; every thread gets its column's statistics.
constexpr int COLS = 32, GROUPS = 8;
__device__ Stats strip_stats(int m, int n, const $T* a, int j) {
  __shared__ Stats part[GROUPS][COLS];
  int g = threadIdx.y, c = threadIdx.x;
  Stats s = stats_start();
  if (j < n)
    for (int i = g; i < m; i += GROUPS) stats_add(s, a[(long)i * n + j]);
  part[g][c] = s;
  __syncthreads();
  for (int half = GROUPS / 2; half > 0; half /= 2) {
    if (g < half) stats_merge(part[g][c], part[g + half][c]);
    __syncthreads();
  }
  return part[0][c];
}
// One warp per column: lanes take rows lane, lane + 32, ... (strided reads), butterfly shuffles combine.
__device__ Stats warp_stats(int m, int n, const $T* a, int j) {
  Stats s = stats_start();
  for (int i = threadIdx.x % 32; i < m; i += 32) stats_add(s, a[(long)i * n + j]);
  for (int off = 16; off > 0; off /= 2) {
    s.acc = combine(s.acc, __shfl_xor_sync(0xffffffffu, s.acc, off));
    s.acc2 += __shfl_xor_sync(0xffffffffu, s.acc2, off);
    s.sum += __shfl_xor_sync(0xffffffffu, s.sum, off);
  }
  return s;
}
"""


def col_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[j] = epilogue(finish(reduce_i f(a[i][j]))) over the rows of an m x n row-major matrix."""
    op, dtype, index = nth(variant, REDUCE_STRUCTURES)
    kw = _parts(dtype, op)
    kw["epi"] = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    kw["sig"] = f"int m, int n, const {kw['T']}* a, {kw['T']}* out"
    reference = _head(kw, False) + fill(_REDUCE_REF, **kw)
    head = _head(kw, True)
    impls = [
        impl("thread_per_column", ["thread-per-output", "coalesced"], head + fill(_REDUCE_THREAD, **kw)),
        impl("row_split_smem", ["thread-per-output", "coalesced", "shared-memory", "tree-reduction", "2d-block"],
             head + fill(_REDUCE_STRIP, **kw)),
        impl("warp_per_column", ["warp-per-output", "warp-shuffle", "strided"], head + fill(_REDUCE_WARP, **kw)),
    ]
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N"), buffer("a", "in", dtype, ["M", "N"]),
            buffer("out", "out", dtype, ["N"])]  # fmt: skip
    return task(
        name=f"col_reduce_{op}", family="col_reduce", entry="col_reduce", args=args,
        description=f"Column-wise {op} of an m x n row-major matrix a ({dtype}): for every column j, "
        f"out[j] = epilogue(finish(acc, acc2)) where acc reduces f(v) = {kw['f']} with combine(a, b) = {kw['comb']} "
        f"(identity {kw['ident']}) over v = a[i * n + j], acc2 = sum of v * v, finish = {kw['fin']} and "
        f"epilogue(v) = {kw['epi']}.",
        configs=CONFIGS, hidden=[{"M": 511, "N": 97}], perf=[{"M": 16384, "N": 8192}, {"M": 1 << 20, "N": 64}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REDUCE_REF = """
void col_reduce($sig) {
  for (int j = 0; j < n; ++j) {
    $T acc = $ident, acc2 = 0;
    for (int i = 0; i < m; ++i) {
      $T v = a[(long)i * n + j];
      acc = combine(acc, fmap(v));
      acc2 += v * v;
    }
    out[j] = epilogue(finish(acc, acc2, m));
  }
}
"""
_REDUCE_THREAD = """
__global__ void col_reduce_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  Stats s = thread_stats(m, n, a, j);
  out[j] = epilogue(finish(s.acc, s.acc2, m));
}
extern "C" void col_reduce($sig) {
  col_reduce_kernel<<<(n + 127) / 128, 128>>>(m, n, a, out);
}
"""
_REDUCE_STRIP = """
__global__ void col_reduce_kernel($sig) {
  int j = blockIdx.x * COLS + threadIdx.x;
  Stats s = strip_stats(m, n, a, j);
  if (threadIdx.y == 0 && j < n) out[j] = epilogue(finish(s.acc, s.acc2, m));
}
extern "C" void col_reduce($sig) {
  dim3 block(COLS, GROUPS);
  col_reduce_kernel<<<(n + COLS - 1) / COLS, block>>>(m, n, a, out);
}
"""
_REDUCE_WARP = """
__global__ void col_reduce_kernel($sig) {
  int j = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (j >= n) return;  // uniform per warp
  Stats s = warp_stats(m, n, a, j);
  if (threadIdx.x % 32 == 0) out[j] = epilogue(finish(s.acc, s.acc2, m));
}
extern "C" void col_reduce($sig) {
  col_reduce_kernel<<<(n + 7) / 8, 256>>>(m, n, a, out);
}
"""


def col_normalize(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[i][j] = epilogue(g(a[i][j], column statistics of column j)) for an m x n row-major matrix."""
    norm, dtype, index = nth(variant, NORMALIZE_STRUCTURES)
    op, expr = NORMS[norm]
    kw = _parts(dtype, op)
    kw["epi"] = "v"
    kw["expr"] = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)), var=f"({spell(expr, dtype)})")
    t = kw["T"]
    kw["sig"] = f"int m, int n, const {t}* a, {t}* out"
    norm_fn = "$q $T normalize($T v, $T stat, $T mean) { return $expr; }\n"
    head = _head(kw, True) + fill(norm_fn, q="__device__ __forceinline__", **kw)
    reference = _head(kw, False) + fill(norm_fn, q="static", **kw) + fill(_NORM_REF, **kw)
    impls = [
        impl("stats_then_map", ["thread-per-column", "two-pass", "coalesced", "thread-per-element"],
             head + fill(_NORM_TWO, **kw)),
        impl("thread_per_column_fused", ["thread-per-column", "fused", "coalesced"], head + fill(_NORM_FUSED, **kw)),
        impl("block_strip_fused", ["block-per-column-strip", "shared-memory", "tree-reduction", "fused"],
             head + fill(_NORM_BLOCK, **kw)),
    ]
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N"), buffer("a", "in", dtype, ["M", "N"]),
            buffer("out", "out", dtype, ["M", "N"])]  # fmt: skip
    return task(
        name=f"col_normalize_{norm}", family="col_normalize", entry="col_normalize", args=args,
        description=f"Column-wise normalization '{norm}' of an m x n row-major matrix a ({dtype}): for every column "
        f"j, stat = finish(acc, acc2) where acc reduces f(v) = {kw['f']} with combine(a, b) = {kw['comb']} "
        f"(identity {kw['ident']}), acc2 = sum of v * v, finish = {kw['fin']}, and mean = (sum of v) / m over "
        f"v = a[i * n + j]; then out[i * n + j] = {kw['expr']} with v = a[i * n + j].",
        configs=CONFIGS, hidden=[{"M": 511, "N": 97}], perf=[{"M": 16384, "N": 8192}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_NORM_REF = """
void col_normalize($sig) {
  for (int j = 0; j < n; ++j) {
    $T acc = $ident, acc2 = 0, sum = 0;
    for (int i = 0; i < m; ++i) {
      $T v = a[(long)i * n + j];
      acc = combine(acc, fmap(v));
      acc2 += v * v;
      sum += v;
    }
    $T stat = finish(acc, acc2, m), mean = sum / m;
    for (int i = 0; i < m; ++i) out[(long)i * n + j] = normalize(a[(long)i * n + j], stat, mean);
  }
}
"""
_NORM_TWO = """
// Pass 1: one thread per column writes its statistics to scratch; pass 2: one thread per element.
__global__ void stats_kernel(int m, int n, const $T* a, $T* stat, $T* mean) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  Stats s = thread_stats(m, n, a, j);
  stat[j] = finish(s.acc, s.acc2, m);
  mean[j] = s.sum / m;
}
__global__ void map_kernel(int m, int n, const $T* a, const $T* stat, const $T* mean, $T* out) {
  long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (t >= (long)m * n) return;
  int j = (int)(t % n);
  out[t] = normalize(a[t], stat[j], mean[j]);
}
extern "C" void col_normalize($sig) {
  $T* scratch;
  cudaMalloc(&scratch, 2 * sizeof($T) * n);
  stats_kernel<<<(n + 127) / 128, 128>>>(m, n, a, scratch, scratch + n);
  long total = (long)m * n;
  map_kernel<<<(unsigned)((total + 255) / 256), 256>>>(m, n, a, scratch, scratch + n, out);
  cudaFree(scratch);
}
"""
_NORM_FUSED = """
// Thread j reads column j twice (stats, then map); each step of the warp touches one row segment.
__global__ void col_normalize_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  Stats s = thread_stats(m, n, a, j);
  $T stat = finish(s.acc, s.acc2, m), mean = s.sum / m;
  for (int i = 0; i < m; ++i) out[(long)i * n + j] = normalize(a[(long)i * n + j], stat, mean);
}
extern "C" void col_normalize($sig) {
  col_normalize_kernel<<<(n + 63) / 64, 64>>>(m, n, a, out);
}
"""
_NORM_BLOCK = """
// A 32-column strip per block: 8 row groups reduce in shared memory, then the whole block writes the strip.
__global__ void col_normalize_kernel($sig) {
  int j = blockIdx.x * COLS + threadIdx.x;
  Stats s = strip_stats(m, n, a, j);
  if (j >= n) return;
  $T stat = finish(s.acc, s.acc2, m), mean = s.sum / m;
  for (int i = threadIdx.y; i < m; i += GROUPS) out[(long)i * n + j] = normalize(a[(long)i * n + j], stat, mean);
}
extern "C" void col_normalize($sig) {
  dim3 block(COLS, GROUPS);
  col_normalize_kernel<<<(n + COLS - 1) / COLS, block>>>(m, n, a, out);
}
"""
