"""Batched tiny linear systems: 2x2/3x3 determinants, inverses and solves."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-11}}
# Where element (r, c) of item bb lives: items one after another (aos) or one plane per entry (soa).
_AT = {"aos": "((long)bb * $KK + $rc)", "soa": "((long)($rc) * batch + bb)"}


def _cofactor(k: int) -> str:
    """C code of the (r, c) cofactor of the k x k matrix m (k = 2 or 3)."""
    if k == 2:
        return "((r + c) % 2 ? -m[1 - r][1 - c] : m[1 - r][1 - c])"
    return ("(m[(r + 1) % 3][(c + 1) % 3] * m[(r + 2) % 3][(c + 2) % 3]"
            " - m[(r + 1) % 3][(c + 2) % 3] * m[(r + 2) % 3][(c + 1) % 3])")  # fmt: skip


# How M[r][c] is built from v = a's entry: diagonal dominance comes from a shift, a scaling or |a| on the diagonal.
ENTRIES = {
    "shift": "v + (r == c ? ($T)$SHIFT : ($T)0)",
    "scaled": "(r == c ? ($T)1 : ($T)0) + ($T)0.3 * v",
    "abs_diag": "r == c ? ($T)$SHIFT + FABS(v) : v",
}
# kind -> (extra columns of the Gauss-Jordan augment, the augment, output shape, takes a right-hand side).
KINDS: dict[str, tuple[str, str, str, bool]] = {
    "det": ("0", "", "item", False),
    "logdet": ("0", "", "item", False),
    "inverse": ("K", "m[r][K + c] = r == c;", "matrix", False),
    "inverse_diag": ("K", "m[r][K + c] = r == c;", "vector", False),
    "solve": ("1", "m[r][K] = rhs[$v_at];", "vector", True),
    "solve_t": ("1", "m[r][K] = rhs[$v_at];", "vector", True),
    "quad": ("1", "m[r][K] = rhs[$v_at];", "item", True),
}
STRUCTURES = grid(sorted(KINDS), ("aos", "soa"), ("float32", "float64"), sorted(ENTRIES))


def small_solve(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Per item of a batch of k x k diagonally dominant matrices M: det, log det, inverse (or its diagonal),
    the solution of M x = r or M^T x = r, or the quadratic form r^T M^-1 r."""
    kind, layout, dtype, entry = nth(variant, STRUCTURES)
    k = int(pick(rng, (2, 3)))
    t = CTYPE[dtype]
    shift = f"{k + 1}.0{'f' if dtype == 'float32' else ''}"
    at = _AT[layout]
    nr, aug, out_kind, rhs = KINDS[kind]
    rc_m = "c * K + r" if kind == "solve_t" else "r * K + c"  # M^T x = r: load M transposed
    kw: dict[str, str] = {"T": t, "K": str(k), "KK": str(k * k), "SHIFT": shift, "cof": _cofactor(k),
          "a_at": fill(at, KK=k * k, rc="r * $K + c").replace("$K", str(k)), "rc_m": rc_m,
          "m_at": fill(at, KK=k * k, rc=rc_m).replace("K", str(k)), "v_at": fill(at, KK=k, rc="r"),
          "nr": nr.replace("K", str(k))}  # fmt: skip
    kw["sig"] = f"int batch, const {t}* a, {f'const {t}* rhs, ' if rhs else ''}{t}* out"
    kw["call"] = f"batch, a, {'rhs, ' if rhs else ''}out"
    kw["aug"] = fill(aug, **kw)
    kw["entry"] = fill(ENTRIES[entry], T=t, SHIFT=shift).replace("FABS", "fabsf" if dtype == "float32" else "fabs")
    kw["ref_entry"] = fill(ENTRIES[entry], T="double", SHIFT=f"{k + 1}.0").replace("FABS", "fabs")
    kw["log"] = "logf(fabsf(det))" if dtype == "float32" else "log(fabs(det))"
    for key, table in (("ref_store", _REF_STORE), ("store", _STORE), ("gauss_store", _GAUSS_STORE)):
        kw[key] = fill(table[kind], **kw)
    head = fill(_HEAD, **kw)
    impls = [
        impl("cofactor", ["thread-per-item", "closed-form", "registers"], head + fill(_COF, **kw)),
        impl("gauss", ["thread-per-item", "gaussian-elimination"], head + fill(_GAUSS, **kw)),
        impl("smem_staged", ["thread-per-item", "closed-form", "shared-memory", "coalesced"],
             head + fill(_SMEM_STAGE[layout], **kw) + fill(_SMEM, **kw)),
    ]
    shape: list[str | int] = ["B", k, k] if layout == "aos" else [k, k, "B"]
    vshape: list[str | int] = ["B", k] if layout == "aos" else [k, "B"]
    args = [scalar("batch", "int32", "B"), buffer("a", "in", dtype, shape, {"dist": "uniform", "low": -1, "high": 1})]
    if rhs:
        args.append(buffer("rhs", "in", dtype, vshape))
    out_shapes: dict[str, list[str | int]] = {"item": ["B"], "matrix": shape, "vector": vshape}
    args.append(buffer("out", "out", dtype, out_shapes[out_kind]))
    x_at, r_at = f"out[{kw['v_at']}]", f"rhs[{kw['v_at']}]"
    what = {"det": "out[bb] = det(M)", "logdet": "out[bb] = log |det(M)|",
            "inverse": f"out holds inverse(M) with a's layout, entry (r, c) at out[{kw['a_at']}]",
            "inverse_diag": f"out holds the diagonal of inverse(M), entry r at {x_at}",
            "solve": f"out holds x with M x = b, x[r] at {x_at} and b[r] = {r_at}",
            "solve_t": f"out holds x with M^T x = b (M transposed), x[r] at {x_at} and b[r] = {r_at}",
            "quad": f"out[bb] = b^T inverse(M) b with b[r] = {r_at}"}[kind]  # fmt: skip
    return task(
        name=f"small_{kind}_{k}x{k}", family="small_solve", entry="small_solve", args=args,
        description=f"Batched {k}x{k} {kind} ({dtype}, {layout} layout): for item bb < batch let M[r][c] = "
        f"entry(a[{kw['a_at']}], r, c) with entry(v, r, c) = {kw['entry']} (entries of a lie in [-1, 1], so M is "
        f"strictly diagonally dominant); {what}.",
        configs=[{"B": 33}, {"B": 1000}, {"B": 4097}], hidden=[{"B": 777}], perf=[{"B": 1 << 22}],
        reference=fill(_REF, **kw), implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
#include <math.h>
#define K $K
#define NR $nr
static double entry(double v, int r, int c) { return $ref_entry; }
void small_solve($sig) {
  for (long bb = 0; bb < batch; ++bb) {
    double m[K][K + NR + 1], det = 1;  /* Gauss-Jordan on [M | augment], no pivoting (M is dominant) */
    for (int r = 0; r < K; ++r) {
      for (int c = 0; c < K; ++c) m[r][c] = entry(a[$m_at], r, c);
      for (int c = 0; c < NR; ++c) { $aug }
    }
    for (int p = 0; p < K; ++p) {
      double piv = m[p][p];
      det *= piv;
      for (int c = 0; c < K + NR; ++c) m[p][c] /= piv;
      for (int r = 0; r < K; ++r) {
        if (r == p) continue;
        double f = m[r][p];
        for (int c = 0; c < K + NR; ++c) m[r][c] -= f * m[p][c];
      }
    }
    $ref_store
  }
}
"""
_REF_STORE = {
    "det": "out[bb] = det;",
    "logdet": "out[bb] = log(fabs(det));",
    "inverse": "for (int r = 0; r < K; ++r) for (int c = 0; c < K; ++c) out[$a_at] = m[r][K + c];",
    "inverse_diag": "for (int r = 0; r < K; ++r) out[$v_at] = m[r][K + r];",
    "solve": "for (int r = 0; r < K; ++r) out[$v_at] = m[r][K];",
    "solve_t": "for (int r = 0; r < K; ++r) out[$v_at] = m[r][K];",
    "quad": "double q = 0;\n    for (int r = 0; r < K; ++r) q += rhs[$v_at] * m[r][K];\n    out[bb] = q;",
}
_HEAD = """
#include <math.h>
constexpr int K = $K;
__device__ __forceinline__ $T entry($T v, int r, int c) { return $entry; }
__device__ __forceinline__ $T cofactor(const $T (&m)[K][K], int r, int c) { return $cof; }
"""
# Closed form from the cofactors C: det = sum_c m[0][c] C[0][c], inverse[r][c] = C[c][r] / det.
_DET = "$T det = 0;\n    for (int c = 0; c < K; ++c) det += m[0][c] * cofactor(m, 0, c);"
# x = inverse(M) b from the cofactors: x[r] = sum_c C[c][r] b[c] / det.
_SOLVE = _DET + """
    $T v[K];
    for (int r = 0; r < K; ++r) v[r] = rhs[$v_at];"""
_STORE = {
    "det": _DET + "\n    out[bb] = det;",
    "logdet": _DET + "\n    out[bb] = $log;",
    "inverse": _DET + """
    $T inv = ($T)1 / det;
    for (int r = 0; r < K; ++r)
      for (int c = 0; c < K; ++c) out[$a_at] = cofactor(m, c, r) * inv;""",
    "inverse_diag": _DET + """
    $T inv = ($T)1 / det;
    for (int r = 0; r < K; ++r) out[$v_at] = cofactor(m, r, r) * inv;""",
    "solve": _SOLVE + """
    for (int r = 0; r < K; ++r) {
      $T s = 0;
      for (int c = 0; c < K; ++c) s += cofactor(m, c, r) * v[c];
      out[$v_at] = s / det;
    }""",
    "quad": _SOLVE + """
    $T q = 0;
    for (int r = 0; r < K; ++r) {
      $T s = 0;
      for (int c = 0; c < K; ++c) s += cofactor(m, c, r) * v[c];
      q += v[r] * s;
    }
    out[bb] = q / det;""",
}
_STORE["solve_t"] = _STORE["solve"]
_COF = """
__global__ void small_kernel($sig) {
  long bb = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (bb >= batch) return;
  $T m[K][K];
  #pragma unroll
  for (int r = 0; r < K; ++r)
    #pragma unroll
    for (int c = 0; c < K; ++c) m[r][c] = entry(a[$m_at], r, c);
  $store
}
extern "C" void small_solve($sig) {
  small_kernel<<<(batch + 127) / 128, 128>>>($call);
}
"""
_GAUSS_STORE = {**_REF_STORE, "logdet": "out[bb] = $log;",
                "quad": "$T q = 0;\n  for (int r = 0; r < K; ++r) q += rhs[$v_at] * m[r][K];\n  out[bb] = q;"}
_GAUSS = """
// Gauss-Jordan elimination in registers on [M | augment]; fully unrolled for the fixed size.
constexpr int NR = $nr;
__global__ void small_kernel($sig) {
  long bb = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (bb >= batch) return;
  $T m[K][K + NR + 1], det = 1;
  #pragma unroll
  for (int r = 0; r < K; ++r) {
    #pragma unroll
    for (int c = 0; c < K; ++c) m[r][c] = entry(a[$m_at], r, c);
    #pragma unroll
    for (int c = 0; c < NR; ++c) { $aug }
  }
  #pragma unroll
  for (int p = 0; p < K; ++p) {
    $T inv = ($T)1 / m[p][p];
    det *= m[p][p];
    #pragma unroll
    for (int c = 0; c < K + NR; ++c) m[p][c] *= inv;
    #pragma unroll
    for (int r = 0; r < K; ++r) {
      if (r == p) continue;
      $T f = m[r][p];
      #pragma unroll
      for (int c = 0; c < K + NR; ++c) m[r][c] -= f * m[p][c];
    }
  }
  $gauss_store
}
extern "C" void small_solve($sig) {
  small_kernel<<<(batch + 127) / 128, 128>>>($call);
}
"""
# Staging of a block's matrices: s[e * ITEMS + local] holds entry e = r * K + c of item local.
_SMEM_STAGE = {
    "aos": """
constexpr int ITEMS = 128;
__device__ __forceinline__ void stage(const $T* a, int batch, long b0, $T* s) {
  int count = (int)min((long)ITEMS, batch - b0);
  for (int t = threadIdx.x; t < count * K * K; t += ITEMS) s[(t % (K * K)) * ITEMS + t / (K * K)] = a[b0 * K * K + t];
}
""",
    "soa": """
constexpr int ITEMS = 128;
__device__ __forceinline__ void stage(const $T* a, int batch, long b0, $T* s) {
  if (b0 + threadIdx.x < batch)
    for (int e = 0; e < K * K; ++e) s[e * ITEMS + threadIdx.x] = a[(long)e * batch + b0 + threadIdx.x];
}
""",
}
_SMEM = """
// The block's matrices are loaded with contiguous (coalesced) reads into shared memory first.
__global__ void small_kernel($sig) {
  __shared__ $T s[K * K * ITEMS];
  long b0 = (long)blockIdx.x * ITEMS, bb = b0 + threadIdx.x;
  stage(a, batch, b0, s);
  __syncthreads();
  if (bb >= batch) return;
  $T m[K][K];
  for (int r = 0; r < K; ++r)
    for (int c = 0; c < K; ++c) m[r][c] = entry(s[($rc_m) * ITEMS + threadIdx.x], r, c);
  $store
}
extern "C" void small_solve($sig) {
  small_kernel<<<(batch + ITEMS - 1) / ITEMS, ITEMS>>>($call);
}
"""
