"""Batched tiny linear systems: 2x2/3x3 determinants, inverses and solves, and batched tridiagonal solves."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, pick, scalar, task

_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-11}}
# Where element (r, c) of item bb lives: items one after another (aos) or one plane per entry (soa).
_AT = {"aos": "((long)bb * $KK + $rc)", "soa": "((long)($rc) * batch + bb)"}


def _cofactor(k: int) -> str:
    """C code of the (r, c) cofactor of the k x k matrix m (k = 2 or 3)."""
    if k == 2:
        return "((r + c) % 2 ? -m[1 - r][1 - c] : m[1 - r][1 - c])"
    return ("(m[(r + 1) % 3][(c + 1) % 3] * m[(r + 2) % 3][(c + 2) % 3]"
            " - m[(r + 1) % 3][(c + 2) % 3] * m[(r + 2) % 3][(c + 1) % 3])")  # fmt: skip


def small_solve(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Per item of a batch of k x k matrices M = A + shift * I: det(M), inverse(M) or the solution of M x = r."""
    kind, k = pick(rng, ("det", "inverse", "solve")), int(pick(rng, (2, 3)))
    layout, dtype = pick(rng, ("aos", "soa")), pick(rng, ("float32", "float64"))
    t = CTYPE[dtype]
    shift = f"{k + 1}.0{'f' if dtype == 'float32' else ''}"
    at = _AT[layout]
    kw: dict[str, str] = {"T": t, "K": str(k), "KK": str(k * k), "SHIFT": shift, "cof": _cofactor(k),
          "a_at": fill(at, KK=k * k, rc="r * $K + c").replace("$K", str(k)),
          "v_at": fill(at, KK=k, rc="r")}  # fmt: skip
    rhs = kind == "solve"
    kw["sig"] = f"int batch, const {t}* a, {f'const {t}* rhs, ' if rhs else ''}{t}* out"
    kw["call"] = f"batch, a, {'rhs, ' if rhs else ''}out"
    kw["nr"] = str({"det": 0, "inverse": k, "solve": 1}[kind])
    kw["aug"] = {"det": "", "inverse": "m[r][K + c] = r == c;", "solve": "m[r][K] = rhs[$v_at];"}[kind]
    kw["aug"] = fill(kw["aug"], **kw)
    kw["ref_store"] = fill(_REF_STORE[kind], **kw)
    kw["store"] = fill(_STORE[kind], **kw)
    kw["gauss_store"] = fill(_GAUSS_STORE[kind], **kw)
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
    out_shape: dict[str, list[str | int]] = {"det": ["B"], "inverse": shape, "solve": vshape}
    args.append(buffer("out", "out", dtype, out_shape[kind]))
    what = {"det": "out[bb] = det(M)", "inverse": f"out holds inverse(M) with a's layout, entry (r, c) at "
            f"out[{kw['a_at']}]", "solve": f"out holds x with M x = r, x[r] at out[{kw['v_at']}] and r[r] = "
            f"rhs[{kw['v_at']}]"}[kind]  # fmt: skip
    return task(
        name=f"small_{kind}_{k}x{k}", family="small_solve", entry="small_solve", args=args,
        description=f"Batched {k}x{k} {kind} ({dtype}, {layout} layout): for item bb < batch let M[r][c] = "
        f"a[{kw['a_at']}] + (r == c ? {shift} : 0) (entries of a lie in [-1, 1], so M is strictly diagonally "
        f"dominant); {what}.",
        configs=[{"B": 33}, {"B": 1000}, {"B": 4097}], hidden=[{"B": 777}], perf=[{"B": 1 << 22}],
        reference=fill(_REF, **kw), implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
#define K $K
#define NR $nr
void small_solve($sig) {
  for (long bb = 0; bb < batch; ++bb) {
    double m[K][K + NR + 1], det = 1;  /* Gauss-Jordan on [M | augment], no pivoting (M is dominant) */
    for (int r = 0; r < K; ++r) {
      for (int c = 0; c < K; ++c) m[r][c] = a[$a_at] + (r == c ? $SHIFT : 0);
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
    "inverse": "for (int r = 0; r < K; ++r) for (int c = 0; c < K; ++c) out[$a_at] = m[r][K + c];",
    "solve": "for (int r = 0; r < K; ++r) out[$v_at] = m[r][K];",
}
_HEAD = """
constexpr int K = $K;
__device__ __forceinline__ $T cofactor(const $T (&m)[K][K], int r, int c) { return $cof; }
"""
# Closed form from the cofactors C: det = sum_c m[0][c] C[0][c], inverse[r][c] = C[c][r] / det.
_STORE = {
    "det": """$T det = 0;
    for (int c = 0; c < K; ++c) det += m[0][c] * cofactor(m, 0, c);
    out[bb] = det;""",
    "inverse": """$T det = 0;
    for (int c = 0; c < K; ++c) det += m[0][c] * cofactor(m, 0, c);
    $T inv = ($T)1 / det;
    for (int r = 0; r < K; ++r)
      for (int c = 0; c < K; ++c) out[$a_at] = cofactor(m, c, r) * inv;""",
    "solve": """$T det = 0, v[K];
    for (int c = 0; c < K; ++c) det += m[0][c] * cofactor(m, 0, c);
    for (int r = 0; r < K; ++r) v[r] = rhs[$v_at];
    for (int r = 0; r < K; ++r) {
      $T s = 0;
      for (int c = 0; c < K; ++c) s += cofactor(m, c, r) * v[c];
      out[$v_at] = s / det;
    }""",
}
_COF = """
__global__ void small_kernel($sig) {
  long bb = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (bb >= batch) return;
  $T m[K][K];
  #pragma unroll
  for (int r = 0; r < K; ++r)
    #pragma unroll
    for (int c = 0; c < K; ++c) m[r][c] = a[$a_at] + (r == c ? ($T)$SHIFT : ($T)0);
  $store
}
extern "C" void small_solve($sig) {
  small_kernel<<<(batch + 127) / 128, 128>>>($call);
}
"""
_GAUSS_STORE = {
    "det": "out[bb] = det;",
    "inverse": "for (int r = 0; r < K; ++r) for (int c = 0; c < K; ++c) out[$a_at] = m[r][K + c];",
    "solve": "for (int r = 0; r < K; ++r) out[$v_at] = m[r][K];",
}
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
    for (int c = 0; c < K; ++c) m[r][c] = a[$a_at] + (r == c ? ($T)$SHIFT : ($T)0);
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
    for (int c = 0; c < K; ++c) m[r][c] = s[(r * K + c) * ITEMS + threadIdx.x] + (r == c ? ($T)$SHIFT : ($T)0);
  $store
}
extern "C" void small_solve($sig) {
  small_kernel<<<(batch + ITEMS - 1) / ITEMS, ITEMS>>>($call);
}
"""


# Coefficients of row k of system s: per system (full), one set for all systems (shared), or scalars (toeplitz).
_COEF = {
    "full": ("sub[$idx]", "diag[$idx]", "sup[$idx]"),
    "shared": ("sub[k]", "diag[k]", "sup[k]"),
    "toeplitz": ("lower", "center", "upper"),
}
_IDX = {"contiguous": "((long)s * n + k)", "interleaved": "((long)k * batch + s)"}


def tridiag(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """x solves the tridiagonal system of every item of a batch (Thomas algorithm in the reference)."""
    coef, layout, dtype = pick(rng, sorted(_COEF)), pick(rng, sorted(_IDX)), pick(rng, ("float32", "float64"))
    t = CTYPE[dtype]
    idx = _IDX[layout]
    sub, dia, sup = (fill(c, idx=idx) for c in _COEF[coef])
    args: list[dict[str, Any]] = [scalar("batch", "int32", "B"), scalar("n", "int32", "N")]
    off, center = {"dist": "uniform", "low": -1, "high": 1}, {"dist": "uniform", "low": 2.5, "high": 4}
    if coef == "toeplitz":
        args += [scalar("lower", dtype, round(float(rng.uniform(-1.0, 1.0)), 3)),
                 scalar("center", dtype, round(float(rng.uniform(2.5, 4.0)), 3)),
                 scalar("upper", dtype, round(float(rng.uniform(-1.0, 1.0)), 3))]  # fmt: skip
    else:
        shape = ["B", "N"] if coef == "full" and layout == "contiguous" else ["N", "B"] if coef == "full" else ["N"]
        args += [buffer("sub", "in", dtype, shape, off), buffer("diag", "in", dtype, shape, center),
                 buffer("sup", "in", dtype, shape, off)]  # fmt: skip
    vshape = ["B", "N"] if layout == "contiguous" else ["N", "B"]
    args += [buffer("d", "in", dtype, vshape), buffer("x", "out", dtype, vshape)]
    names_ = [a["name"] for a in args]
    sig = ", ".join(f"int {a['name']}" if a["dtype"] == "int32" else f"{t} {a['name']}" if a["role"] == "scalar"
                    else f"{'const ' if a['role'] == 'in' else ''}{t}* {a['name']}" for a in args)  # fmt: skip
    kw = {"T": t, "sig": sig, "call": ", ".join(names_), "idx": idx, "sub": sub, "dia": dia, "sup": sup,
          "coef_args": sig.split(", ", 2)[2].rsplit(", ", 2)[0], "coef_call": ", ".join(names_[2:-2])}  # fmt: skip
    head = fill(_TRI_HEAD, **kw)
    impls = [
        impl("thomas", ["thread-per-system", "thomas", "global-scratch"], head + fill(_THOMAS, **kw)),
        impl("thomas_interleaved_scratch", ["thread-per-system", "thomas", "interleaved-scratch", "coalesced"],
             head + fill(_THOMAS_IL, **kw)),
        impl("pcr_block", ["block-per-system", "parallel-cyclic-reduction", "shared-memory"], head + fill(_PCR, **kw)),
    ]
    where = {"full": "given per system and row", "shared": "shared by all systems (indexed by row only)",
             "toeplitz": "constant scalars"}[coef]  # fmt: skip
    return task(
        name=f"tridiag_{coef}_{layout}", family="tridiag", entry="tridiag", args=args,
        description=f"Batched tridiagonal solve ({dtype}, {layout} layout: row k of system s at index {idx}): for "
        f"every system s < batch solve sub_k x_(k-1) + diag_k x_k + sup_k x_(k+1) = d_k for k < n (sub_0 and "
        f"sup_(n-1) are ignored) with coefficients {where}: sub_k = {sub}, diag_k = {dia}, sup_k = {sup}. "
        f"|diag| > |sub| + |sup| (strict diagonal dominance), so elimination without pivoting is stable. "
        f"Write x at the index of its row.",
        configs=[{"B": 64, "N": 33}, {"B": 255, "N": 64}, {"B": 1001, "N": 17}], hidden=[{"B": 129, "N": 100}],
        perf=[{"B": 65536, "N": 128}, {"B": 4096, "N": 512}],
        reference=fill(_TRI_REF, **kw), implementations=impls, tolerance=_TOL_TRI[dtype],
    )  # fmt: skip


_TOL_TRI = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-12}}
_TRI_REF = """
#include <stdlib.h>
static long at(int batch, int n, int s, int k) { return $idx; }
void tridiag($sig) {
  $T* cp = ($T*)malloc(sizeof($T) * n);
  $T* dp = ($T*)malloc(sizeof($T) * n);
  for (int s = 0; s < batch; ++s) {
    for (int k = 0; k < n; ++k) {
      $T den = k == 0 ? $dia : $dia - $sub * cp[k - 1];
      cp[k] = $sup / den;
      dp[k] = (d[at(batch, n, s, k)] - (k == 0 ? 0 : $sub * dp[k - 1])) / den;
    }
    x[at(batch, n, s, n - 1)] = dp[n - 1];
    for (int k = n - 2; k >= 0; --k) x[at(batch, n, s, k)] = dp[k] - cp[k] * x[at(batch, n, s, k + 1)];
  }
  free(cp);
  free(dp);
}
"""
_TRI_HEAD = """
struct Row { $T a, b, c; };
__device__ __forceinline__ long at(int batch, int n, int s, int k) { return $idx; }
__device__ __forceinline__ Row row_of(int batch, int n, $coef_args, int s, int k) { return Row{$sub, $dia, $sup}; }
"""
_THOMAS = """
// One thread per system; c' goes to scratch (same layout as the inputs), d' into x, then x is back-substituted.
__global__ void thomas_kernel($sig, $T* cp) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= batch) return;
  Row r = row_of(batch, n, $coef_call, s, 0);
  cp[at(batch, n, s, 0)] = r.c / r.b;
  x[at(batch, n, s, 0)] = d[at(batch, n, s, 0)] / r.b;
  for (int k = 1; k < n; ++k) {
    long here = at(batch, n, s, k), before = at(batch, n, s, k - 1);
    r = row_of(batch, n, $coef_call, s, k);
    $T den = r.b - r.a * cp[before];
    cp[here] = r.c / den;
    x[here] = (d[here] - r.a * x[before]) / den;
  }
  for (int k = n - 2; k >= 0; --k) {
    long here = at(batch, n, s, k);
    x[here] -= cp[here] * x[at(batch, n, s, k + 1)];
  }
}
extern "C" void tridiag($sig) {
  $T* cp;
  cudaMalloc(&cp, sizeof($T) * (size_t)batch * n);
  thomas_kernel<<<(batch + 127) / 128, 128>>>($call, cp);
  cudaFree(cp);
}
"""
_THOMAS_IL = """
// One thread per system with c' and d' kept in interleaved scratch (row k of all systems adjacent):
// the scratch traffic is coalesced whatever the input layout; x is written only in the back substitution.
__global__ void thomas_kernel($sig, $T* cp, $T* dp) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= batch) return;
  $T c_prev = 0, d_prev = 0;
  for (int k = 0; k < n; ++k) {
    Row r = row_of(batch, n, $coef_call, s, k);
    if (k == 0) r.a = 0;
    $T den = r.b - r.a * c_prev;
    c_prev = r.c / den;
    d_prev = (d[at(batch, n, s, k)] - r.a * d_prev) / den;
    cp[(long)k * batch + s] = c_prev;
    dp[(long)k * batch + s] = d_prev;
  }
  $T next = d_prev;
  x[at(batch, n, s, n - 1)] = next;
  for (int k = n - 2; k >= 0; --k) {
    next = dp[(long)k * batch + s] - cp[(long)k * batch + s] * next;
    x[at(batch, n, s, k)] = next;
  }
}
extern "C" void tridiag($sig) {
  $T* scratch;
  cudaMalloc(&scratch, 2 * sizeof($T) * (size_t)batch * n);
  thomas_kernel<<<(batch + 127) / 128, 128>>>($call, scratch, scratch + (size_t)batch * n);
  cudaFree(scratch);
}
"""
_PCR = """
// Parallel cyclic reduction, one block per system: each step eliminates the couplings at distance
// stride, so after ceil(log2 n) steps every row is decoupled. Rows outside [0, n) act as identity rows.
__global__ void pcr_kernel($sig) {
  extern __shared__ unsigned char smem[];
  $T* buf = ($T*)smem;  // two copies (ping-pong) of the a, b, c, d arrays: buf[(copy * 4 + array) * n + row]
  int s = blockIdx.x;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    Row r = row_of(batch, n, $coef_call, s, k);
    buf[k] = k == 0 ? ($T)0 : r.a;
    buf[n + k] = r.b;
    buf[2 * n + k] = k == n - 1 ? ($T)0 : r.c;
    buf[3 * n + k] = d[at(batch, n, s, k)];
  }
  __syncthreads();
  int cur = 0;
  for (int stride = 1; stride < n; stride *= 2) {
    $T* a = buf + cur * 4 * n;
    $T* b = a + n;
    $T* c = b + n;
    $T* dd = c + n;
    $T* na = buf + (1 - cur) * 4 * n;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
      $T k1 = 0, k2 = 0, nb = b[k], nd = dd[k], a_new = 0, c_new = 0;
      if (k - stride >= 0) {
        k1 = a[k] / b[k - stride];
        a_new = -a[k - stride] * k1;
        nb -= c[k - stride] * k1;
        nd -= dd[k - stride] * k1;
      }
      if (k + stride < n) {
        k2 = c[k] / b[k + stride];
        c_new = -c[k + stride] * k2;
        nb -= a[k + stride] * k2;
        nd -= dd[k + stride] * k2;
      }
      na[k] = a_new;
      na[n + k] = nb;
      na[2 * n + k] = c_new;
      na[3 * n + k] = nd;
    }
    cur = 1 - cur;
    __syncthreads();
  }
  $T* fin = buf + cur * 4 * n;
  for (int k = threadIdx.x; k < n; k += blockDim.x) x[at(batch, n, s, k)] = fin[3 * n + k] / fin[n + k];
}
extern "C" void tridiag($sig) {
  int threads = min(256, (n + 31) / 32 * 32);
  pcr_kernel<<<batch, threads, 8 * sizeof($T) * (size_t)n>>>($call);
}
"""
