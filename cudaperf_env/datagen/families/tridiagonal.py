"""Batched tridiagonal solves: per-system, shared, Toeplitz or symmetric coefficients, three right-hand sides."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, names, nth, params, scalar, task

# Coefficients (sub_k, diag_k, sup_k) of row k of system s: per system (full), one set for all systems (shared),
# scalars (toeplitz), or one off-diagonal per system with sub_k = off_(k-1), sup_k = off_k (symmetric).
_COEF = {
    "full": ("sub[$idx]", "diag[$idx]", "sup[$idx]"),
    "shared": ("sub[k]", "diag[k]", "sup[k]"),
    "toeplitz": ("lower", "center", "upper"),
    "symmetric": ("(k > 0 ? off[$idx_before] : ($T)0)", "diag[$idx]", "off[$idx]"),
}
_IDX = {"contiguous": "((long)s * n + $k)", "interleaved": "((long)($k) * batch + s)"}
# Right-hand side d_k: given, an explicit diffusion step of u (the Crank-Nicolson right side), or u + dt * f.
_RHS = {
    "given": "return d[at(batch, n, s, k)];",
    "diffusion": "$T c = u[at(batch, n, s, k)], l = k > 0 ? u[at(batch, n, s, k - 1)] : ($T)0, "
                 "r = k < n - 1 ? u[at(batch, n, s, k + 1)] : ($T)0; return c + rd * (l - 2 * c + r);",
    "source": "return u[at(batch, n, s, k)] + dt * f[at(batch, n, s, k)];",
}  # fmt: skip
STRUCTURES = grid(sorted(_COEF), sorted(_IDX), ("float32", "float64"), sorted(_RHS))


def _coef_args(coef: str, dtype: str, shape: list[str], rng: np.random.Generator) -> list[dict[str, Any]]:
    off, center = {"dist": "uniform", "low": -1, "high": 1}, {"dist": "uniform", "low": 2.5, "high": 4}
    if coef == "toeplitz":
        return [scalar("lower", dtype, round(float(rng.uniform(-1.0, 1.0)), 3)),
                scalar("center", dtype, round(float(rng.uniform(2.5, 4.0)), 3)),
                scalar("upper", dtype, round(float(rng.uniform(-1.0, 1.0)), 3))]  # fmt: skip
    if coef == "symmetric":
        return [buffer("off", "in", dtype, shape, off), buffer("diag", "in", dtype, shape, center)]
    if coef == "shared":
        shape = ["N"]
    return [buffer("sub", "in", dtype, shape, off), buffer("diag", "in", dtype, shape, center),
            buffer("sup", "in", dtype, shape, off)]  # fmt: skip


def _rhs_args(rhs: str, dtype: str, shape: list[str], rng: np.random.Generator) -> list[dict[str, Any]]:
    if rhs == "given":
        return [buffer("d", "in", dtype, shape)]
    if rhs == "diffusion":
        return [scalar("rd", dtype, round(float(rng.uniform(0.1, 0.5)), 3)), buffer("u", "in", dtype, shape)]
    return [scalar("dt", dtype, round(float(rng.uniform(0.01, 0.5)), 3)), buffer("u", "in", dtype, shape),
            buffer("f", "in", dtype, shape)]  # fmt: skip


def tridiag(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """x solves the tridiagonal system of every item of a batch (Thomas algorithm in the reference)."""
    coef, layout, dtype, rhs = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    idx = fill(_IDX[layout], k="k")
    sub, dia, sup = (fill(c, idx=idx, idx_before=fill(_IDX[layout], k="k - 1"), T=t) for c in _COEF[coef])
    vshape = ["B", "N"] if layout == "contiguous" else ["N", "B"]
    coef_args, rhs_args = _coef_args(coef, dtype, vshape, rng), _rhs_args(rhs, dtype, vshape, rng)
    args = [scalar("batch", "int32", "B"), scalar("n", "int32", "N"), *coef_args, *rhs_args,
            buffer("x", "out", dtype, vshape)]  # fmt: skip
    kw = {"T": t, "sig": params(args), "call": names(args), "idx": idx, "sub": sub, "dia": dia, "sup": sup,
          "coef_args": params(coef_args), "coef_call": names(coef_args), "rhs_args": params(rhs_args),
          "rhs_call": names(rhs_args), "rhs": fill(_RHS[rhs], T=t)}  # fmt: skip
    head = fill(_TRI_HEAD, **kw)
    impls = [
        impl("thomas", ["thread-per-system", "thomas", "global-scratch"], head + fill(_THOMAS, **kw)),
        impl("thomas_interleaved_scratch", ["thread-per-system", "thomas", "interleaved-scratch", "coalesced"],
             head + fill(_THOMAS_IL, **kw)),
        impl("pcr_block", ["block-per-system", "parallel-cyclic-reduction", "shared-memory"], head + fill(_PCR, **kw)),
    ]
    where = {"full": "given per system and row", "shared": "shared by all systems (indexed by row only)",
             "toeplitz": "constant scalars", "symmetric": "symmetric (sub_k = sup_(k-1) = off at row k - 1)"}[coef]
    d_k = {"given": "d_k = d at row k", "diffusion": "d_k = u_k + rd * (u_(k-1) - 2 u_k + u_(k+1)) with u = 0 "
           "outside the system", "source": "d_k = u_k + dt * f_k"}[rhs]  # fmt: skip
    return task(
        name=f"tridiag_{coef}_{layout}", family="tridiag", entry="tridiag", args=args,
        description=f"Batched tridiagonal solve ({dtype}, {layout} layout: row k of system s at index {idx}): for "
        f"every system s < batch solve sub_k x_(k-1) + diag_k x_k + sup_k x_(k+1) = d_k for k < n (sub_0 and "
        f"sup_(n-1) are ignored) with coefficients {where}: sub_k = {sub}, diag_k = {dia}, sup_k = {sup}, and "
        f"{d_k}. |diag| > |sub| + |sup| (strict diagonal dominance), so elimination without pivoting is stable. "
        f"Write x at the index of its row.",
        configs=[{"B": 64, "N": 33}, {"B": 255, "N": 64}, {"B": 1001, "N": 17}], hidden=[{"B": 129, "N": 100}],
        perf=[{"B": 65536, "N": 128}, {"B": 4096, "N": 512}],
        reference=fill(_TRI_REF, **kw), implementations=impls, tolerance=_TOL_TRI[dtype],
    )  # fmt: skip


_TOL_TRI = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-12}}
_TRI_REF = """
#include <stdlib.h>
static long at(int batch, int n, int s, int k) { return $idx; }
static $T rhs_of(int batch, int n, $rhs_args, int s, int k) { $rhs }
void tridiag($sig) {
  $T* cp = ($T*)malloc(sizeof($T) * n);
  $T* dp = ($T*)malloc(sizeof($T) * n);
  for (int s = 0; s < batch; ++s) {
    for (int k = 0; k < n; ++k) {
      $T den = k == 0 ? $dia : $dia - $sub * cp[k - 1];
      cp[k] = $sup / den;
      dp[k] = (rhs_of(batch, n, $rhs_call, s, k) - (k == 0 ? 0 : $sub * dp[k - 1])) / den;
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
__device__ __forceinline__ $T rhs_of(int batch, int n, $rhs_args, int s, int k) { $rhs }
"""
_THOMAS = """
// One thread per system; c' goes to scratch (same layout as the inputs), d' into x, then x is back-substituted.
__global__ void thomas_kernel($sig, $T* cp) {
  int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= batch) return;
  Row r = row_of(batch, n, $coef_call, s, 0);
  cp[at(batch, n, s, 0)] = r.c / r.b;
  x[at(batch, n, s, 0)] = rhs_of(batch, n, $rhs_call, s, 0) / r.b;
  for (int k = 1; k < n; ++k) {
    long here = at(batch, n, s, k), before = at(batch, n, s, k - 1);
    r = row_of(batch, n, $coef_call, s, k);
    $T den = r.b - r.a * cp[before];
    cp[here] = r.c / den;
    x[here] = (rhs_of(batch, n, $rhs_call, s, k) - r.a * x[before]) / den;
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
    d_prev = (rhs_of(batch, n, $rhs_call, s, k) - r.a * d_prev) / den;
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
    buf[3 * n + k] = rhs_of(batch, n, $rhs_call, s, k);
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
