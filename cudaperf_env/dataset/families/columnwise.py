"""Column-wise reductions and normalizations of row-major matrices: the coalesced column access pattern."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, lit, pick, scalar, task
from cudaperf_env.dataset.families.elementwise import to_double

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
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-10}}
CONFIGS = [{"M": 64, "N": 32}, {"M": 257, "N": 129}, {"M": 1023, "N": 301}]


def _spell(dtype: str, text: str) -> str:
    return to_double(text) if dtype == "float64" else text


def _parts(dtype: str, op: str) -> dict[str, str]:
    f, comb, ident, fin = (_spell(dtype, s) for s in OPS[op])
    return {"f": f, "comb": comb, "ident": ident, "fin": fin, "T": CTYPE[dtype]}


def _head(kw: dict[str, str], device: bool) -> str:
    q = "__device__ __forceinline__" if device else "static"
    return fill("""#include <math.h>
$q $T fmap($T v) { return $f; }
$q $T combine($T a, $T b) { return $comb; }
$q $T finish($T acc, $T acc2, int m) { return $fin; }
""", q=q, **kw)  # fmt: skip


def col_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[j] = finish(reduce_i f(a[i][j])) over the rows of an m x n row-major matrix."""
    op, dtype = pick(rng, sorted(OPS)), pick(rng, ("float32", "float64"))
    scaled = bool(rng.integers(0, 2))
    kw = _parts(dtype, op)
    kw["store"] = "out[j] = scale * finish(acc, acc2, m);" if scaled else "out[j] = finish(acc, acc2, m);"
    kw["sig"] = f"int m, int n, {kw['T'] + ' scale, ' if scaled else ''}const {kw['T']}* a, {kw['T']}* out"
    kw["call"] = f"m, n, {'scale, ' if scaled else ''}a, out"
    reference = _head(kw, False) + fill("""
void col_reduce($sig) {
  for (int j = 0; j < n; ++j) {
    $T acc = $ident, acc2 = 0;
    for (int i = 0; i < m; ++i) {
      $T v = a[(long)i * n + j];
      acc = combine(acc, fmap(v));
      acc2 += v * v;
    }
    $store
  }
}""", **kw)  # fmt: skip
    head = _head(kw, True)
    impls = [
        impl("thread_per_column", ["thread-per-output", "coalesced"], head + fill(_THREAD, **kw)),
        impl("row_split_smem", ["thread-per-output", "coalesced", "shared-memory", "tree-reduction", "2d-block"],
             head + fill(_SPLIT, **kw)),
        impl("warp_per_column", ["warp-per-output", "warp-shuffle", "strided"], head + fill(_WARP, **kw)),
    ]
    args = [scalar("m", "int32", "M"), scalar("n", "int32", "N")]
    if scaled:
        args.append(scalar("scale", dtype, round(float(rng.uniform(0.5, 2.0)), 3)))
    args += [buffer("a", "in", dtype, ["M", "N"]), buffer("out", "out", dtype, ["N"])]
    return task(
        name=f"col_reduce_{op}", family="col_reduce", entry="col_reduce", args=args,
        description=f"Column-wise {op} of an m x n row-major matrix a ({dtype}): for every column j, "
        f"out[j] = {'scale * ' if scaled else ''}finish(acc, acc2) where acc reduces f(v) = {kw['f']} with "
        f"combine(a, b) = {kw['comb']} (identity {kw['ident']}) over v = a[i * n + j], acc2 = sum of v * v, "
        f"and finish = {kw['fin']}.",
        configs=CONFIGS, hidden=[{"M": 511, "N": 97}], perf=[{"M": 16384, "N": 8192}, {"M": 1 << 20, "N": 64}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_THREAD = """
// Thread j walks down column j: at every step the warp reads 32 consecutive elements of one row.
__global__ void col_reduce_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  $T acc = $ident, acc2 = 0;
  for (int i = 0; i < m; ++i) {
    $T v = a[(long)i * n + j];
    acc = combine(acc, fmap(v));
    acc2 += v * v;
  }
  $store
}
extern "C" void col_reduce($sig) {
  col_reduce_kernel<<<(n + 127) / 128, 128>>>($call);
}
"""
_SPLIT = """
// 32 columns x 8 row groups per block: row groups read coalesced row segments, then combine in shared memory.
constexpr int COLS = 32, GROUPS = 8;
__global__ void col_reduce_kernel($sig) {
  __shared__ $T s1[GROUPS][COLS], s2[GROUPS][COLS];
  int j = blockIdx.x * COLS + threadIdx.x;
  $T acc = $ident, acc2 = 0;
  if (j < n)
    for (int i = threadIdx.y; i < m; i += GROUPS) {
      $T v = a[(long)i * n + j];
      acc = combine(acc, fmap(v));
      acc2 += v * v;
    }
  s1[threadIdx.y][threadIdx.x] = acc;
  s2[threadIdx.y][threadIdx.x] = acc2;
  __syncthreads();
  for (int half = GROUPS / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) {
      s1[threadIdx.y][threadIdx.x] = combine(s1[threadIdx.y][threadIdx.x], s1[threadIdx.y + half][threadIdx.x]);
      s2[threadIdx.y][threadIdx.x] += s2[threadIdx.y + half][threadIdx.x];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && j < n) {
    acc = s1[0][threadIdx.x];
    acc2 = s2[0][threadIdx.x];
    $store
  }
}
extern "C" void col_reduce($sig) {
  dim3 block(COLS, GROUPS);
  col_reduce_kernel<<<(n + COLS - 1) / COLS, block>>>($call);
}
"""
_WARP = """
// One warp per column: lanes take rows lane, lane + 32, ... (strided reads), shuffles combine.
__global__ void col_reduce_kernel($sig) {
  int j = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (j >= n) return;  // uniform per warp
  $T acc = $ident, acc2 = 0;
  for (int i = lane; i < m; i += 32) {
    $T v = a[(long)i * n + j];
    acc = combine(acc, fmap(v));
    acc2 += v * v;
  }
  for (int off = 16; off > 0; off /= 2) {
    acc = combine(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    acc2 += __shfl_xor_sync(0xffffffffu, acc2, off);
  }
  if (lane == 0) {
    $store
  }
}
extern "C" void col_reduce($sig) {
  col_reduce_kernel<<<(n + 7) / 8, 256>>>($call);
}
"""


def col_normalize(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[i][j] = g(a[i][j], column statistics of column j) for an m x n row-major matrix."""
    norm, dtype = pick(rng, sorted(NORMS)), pick(rng, ("float32", "float64"))
    op, expr = NORMS[norm]
    kw = _parts(dtype, op)
    post = fill(pick(rng, ("$e", "v + ($e)", "$c * ($e)")), e=expr, c=lit(float(rng.uniform(0.5, 2.0)), "float32"))
    kw["expr"] = _spell(dtype, post)
    t = kw["T"]
    kw["sig"] = f"int m, int n, const {t}* a, {t}* out"
    head = fill("$base$q $T normalize($T v, $T stat, $T mean) { return $expr; }\n", base=_head(kw, True),
                q="__device__ __forceinline__", **kw)  # fmt: skip
    reference = fill("$base$q $T normalize($T v, $T stat, $T mean) { return $expr; }\n", base=_head(kw, False),
                     q="static", **kw) + fill(_NORM_REF, **kw)  # fmt: skip
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
  $T acc = $ident, acc2 = 0, sum = 0;
  for (int i = 0; i < m; ++i) {
    $T v = a[(long)i * n + j];
    acc = combine(acc, fmap(v));
    acc2 += v * v;
    sum += v;
  }
  stat[j] = finish(acc, acc2, m);
  mean[j] = sum / m;
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
extern "C" void col_normalize($sig) {
  col_normalize_kernel<<<(n + 63) / 64, 64>>>(m, n, a, out);
}
"""
_NORM_BLOCK = """
// A 32-column strip per block: 8 row groups reduce in shared memory, then the whole block writes the strip.
constexpr int COLS = 32, GROUPS = 8;
__global__ void col_normalize_kernel($sig) {
  __shared__ $T s1[GROUPS][COLS], s2[GROUPS][COLS], s3[GROUPS][COLS];
  int j = blockIdx.x * COLS + threadIdx.x, g = threadIdx.y;
  $T acc = $ident, acc2 = 0, sum = 0;
  if (j < n)
    for (int i = g; i < m; i += GROUPS) {
      $T v = a[(long)i * n + j];
      acc = combine(acc, fmap(v));
      acc2 += v * v;
      sum += v;
    }
  s1[g][threadIdx.x] = acc;
  s2[g][threadIdx.x] = acc2;
  s3[g][threadIdx.x] = sum;
  __syncthreads();
  for (int half = GROUPS / 2; half > 0; half /= 2) {
    if (g < half) {
      s1[g][threadIdx.x] = combine(s1[g][threadIdx.x], s1[g + half][threadIdx.x]);
      s2[g][threadIdx.x] += s2[g + half][threadIdx.x];
      s3[g][threadIdx.x] += s3[g + half][threadIdx.x];
    }
    __syncthreads();
  }
  if (j >= n) return;
  $T stat = finish(s1[0][threadIdx.x], s2[0][threadIdx.x], m), mean = s3[0][threadIdx.x] / m;
  for (int i = g; i < m; i += GROUPS) out[(long)i * n + j] = normalize(a[(long)i * n + j], stat, mean);
}
extern "C" void col_normalize($sig) {
  dim3 block(COLS, GROUPS);
  col_normalize_kernel<<<(n + COLS - 1) / COLS, block>>>(m, n, a, out);
}
"""
