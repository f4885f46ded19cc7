"""Pairwise distance matrices between two point sets (or a set and itself): eleven metrics, two layouts."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

_TOL = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-11}}
# name -> (accumulator init, per-coordinate step on acc with a = x_k, b = y_k, final value from acc)
METRICS = {
    "l1": ("acc += fabs(a - b);", "acc"),
    "l2": ("acc += (a - b) * (a - b);", "sqrt(acc)"),
    "sqeuclidean": ("acc += (a - b) * (a - b);", "acc"),
    "linf": ("acc = fmax(acc, fabs(a - b));", "acc"),
    "cosine": ("acc += a * b; na += a * a; nb += b * b;", "1 - acc / (sqrt(na * nb) + EPS)"),
    "canberra": ("acc += fabs(a - b) / (fabs(a) + fabs(b) + EPS);", "acc"),
    "minkowski3": ("acc += fabs(a - b) * (a - b) * (a - b);", "cbrt(acc)"),
    "bray_curtis": ("acc += fabs(a - b); na += fabs(a + b);", "acc / (na + EPS)"),
    "mismatch": ("acc += fabs(a - b) > 0.5 ? 1 : 0;", "acc"),
    "dot": ("acc += a * b;", "acc"),
    "rbf": ("acc += (a - b) * (a - b);", "exp(-0.5 * acc)"),
}
# Where coordinate k of point i lives: points one after another (aos) or one array per coordinate (soa).
LAYOUTS = {"aos": "[(long)($i) * D + (k)]", "soa": "[(long)(k) * $count + ($i)]"}
STRUCTURES = grid(sorted(METRICS), ("float32", "float64"), sorted(LAYOUTS), (False, True))


def _fns(dtype: str, text: str) -> str:
    """``text`` with the float32 spellings of the math functions when ``dtype`` is float32."""
    if dtype != "float32":
        return text
    for f in ("fabs", "sqrt", "fmax", "cbrt", "exp"):
        text = text.replace(f"{f}(", f"{f}f(")
    return text


def pairwise_distance(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """dist[i][j] = metric(x[i, :], y[j, :]) for x of m points and y of n points (or y = x) in D dimensions."""
    metric, dtype, layout, self_ = nth(variant, STRUCTURES)
    dim = int(pick(rng, (2, 3, 4, 5, 8, 12, 16, 32)))
    t = CTYPE[dtype]
    step, final = (_fns(dtype, s) for s in METRICS[metric])
    eps = "1e-12f" if dtype == "float32" else "1e-30"
    ysrc = "x" if self_ else "y"
    kw: dict[str, Any] = {"T": t, "D": dim, "step": step, "final": final, "EPS": eps,
          "xat": "x" + fill(LAYOUTS[layout], i="i", count="m"), "yat": ysrc + fill(LAYOUTS[layout], i="j", count="n"),
          "sig": "int m, const $T* x, $T* dist" if self_ else "int m, int n, const $T* x, const $T* y, $T* dist",
          "prelude": "int n = m;\n  const T* y = x;\n  " if self_ else ""}  # fmt: skip
    kw["sig"] = fill(kw["sig"], T=t)
    point = fill("""$T point_dist(const $T* p, const $T* q) {
  $T acc = 0, na = 0, nb = 0;
  for (int k = 0; k < D; ++k) {
    $T a = p[k], b = q[k];
    $step
  }
  (void)na; (void)nb;
  return $final;
}""", **kw)  # fmt: skip
    kw["point"] = point
    reference = fill("#include <math.h>\n#define D $D\n#define EPS $EPS\n#define XAT(i, k) $xat\n"
                     "#define YAT(j, k) $yat\nstatic $point\nvoid pdist($sig) {\n  $prelude$T p[D], q[D];\n"
                     "  for (int i = 0; i < m; ++i)\n    for (int j = 0; j < n; ++j) {\n"
                     "      for (int k = 0; k < D; ++k) { p[k] = XAT(i, k); q[k] = YAT(j, k); }\n"
                     "      dist[(long)i * n + j] = point_dist(p, q);\n    }\n}",
                     **{**kw, "prelude": kw["prelude"].replace("const T*", f"const {t}*")})  # fmt: skip
    head = fill("#include <math.h>\nconstexpr int D = $D;\n#define EPS $EPS\ntypedef $T T;\n#define XAT(i, k) $xat\n"
                "#define YAT(j, k) $yat\n__device__ __forceinline__ $point\n", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], head + fill(_NAIVE, **kw)),
        impl("smem_tile", ["shared-memory-tiling", "2d-grid", "coalesced"], head + fill(_SMEM, **kw)),
        impl("register_block", ["register-blocking", "multi-element-per-thread"], head + fill(_REG, **kw)),
    ]
    shape: list[list[str | int]] = [["M", dim], ["N", dim]] if layout == "aos" else [[dim, "M"], [dim, "N"]]
    args = [scalar("m", "int32", "M")] + ([] if self_ else [scalar("n", "int32", "N")]) + \
        [buffer("x", "in", dtype, shape[0])] + ([] if self_ else [buffer("y", "in", dtype, shape[1])]) + \
        [buffer("dist", "out", dtype, ["M", "M" if self_ else "N"])]  # fmt: skip
    return task(
        name=f"pdist_{metric}", family="pairwise_distance", entry="pdist", args=args,
        description=f"Pairwise {metric} distance matrix in {dtype}: x holds m points"
        f"{' (y = x, n = m)' if self_ else ' and y holds n points'} of {dim} coordinates, coordinate k of point i at "
        f"x{fill(LAYOUTS[layout], i='i', count='m')}; dist[i][j] (m x n, row-major) = point_dist(x[i], y[j]) "
        f"where, over "
        f"k = 0..{dim - 1} with a = x[i][k], b = y[j][k] and acc = na = nb = 0 at the start, each step does "
        f"`{step}` and the result is {final} (EPS = {eps}).",
        configs=[{"M": 64, "N": 48}, {"M": 127, "N": 93}, {"M": 300, "N": 257}], hidden=[{"M": 101, "N": 77}],
        perf=[{"M": 8192, "N": 8192}], reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_NAIVE = """
__global__ void pdist_kernel(int m, int n, const T* x, const T* y, T* dist) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  T p[D], q[D];
  for (int k = 0; k < D; ++k) { p[k] = XAT(i, k); q[k] = YAT(j, k); }
  dist[(long)i * n + j] = point_dist(p, q);
}
extern "C" void pdist($sig) {
  $prelude dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
  pdist_kernel<<<grid, block>>>(m, n, x, y, dist);
}
"""
_SMEM = """
// A 16 x 16 block stages its 16 x-points and 16 y-points (all D coordinates) in shared memory once.
constexpr int B = 16;
__global__ void pdist_tile(int m, int n, const T* x, const T* y, T* dist) {
  __shared__ T sx[B][D], sy[B][D];
  int tx = threadIdx.x, ty = threadIdx.y, i0 = blockIdx.y * B, j0 = blockIdx.x * B;
  for (int e = ty * B + tx; e < B * D; e += B * B) {
    int p = e / D, k = e % D;
    sx[p][k] = i0 + p < m ? XAT(i0 + p, k) : (T)0;
    sy[p][k] = j0 + p < n ? YAT(j0 + p, k) : (T)0;
  }
  __syncthreads();
  int i = i0 + ty, j = j0 + tx;
  if (i < m && j < n) dist[(long)i * n + j] = point_dist(sx[ty], sy[tx]);
}
extern "C" void pdist($sig) {
  $prelude dim3 block(B, B), grid((n + B - 1) / B, (m + B - 1) / B);
  pdist_tile<<<grid, block>>>(m, n, x, y, dist);
}
"""
_REG = """
// Each thread keeps one x-point in registers and computes 4 outputs of its row, 32 columns apart.
constexpr int ITEMS = 4;
__global__ void pdist_reg(int m, int n, const T* x, const T* y, T* dist) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j0 = blockIdx.x * 32 * ITEMS + threadIdx.x;
  if (i >= m) return;
  T p[D], q[D];
  #pragma unroll
  for (int k = 0; k < D; ++k) p[k] = XAT(i, k);
  #pragma unroll
  for (int t = 0; t < ITEMS; ++t) {
    int j = j0 + 32 * t;
    if (j >= n) continue;
    for (int k = 0; k < D; ++k) q[k] = YAT(j, k);
    dist[(long)i * n + j] = point_dist(p, q);
  }
}
extern "C" void pdist($sig) {
  $prelude dim3 block(32, 4), grid((n + 32 * ITEMS - 1) / (32 * ITEMS), (m + 3) / 4);
  pdist_reg<<<grid, block>>>(m, n, x, y, dist);
}
"""
