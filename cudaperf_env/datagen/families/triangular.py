"""Triangular matrix-vector products (BLAS trmv): lower/upper, unit or stored diagonal, plain or transposed,
with an elementwise epilogue."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_SUM, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

STRUCTURES = grid(("float32", "float64"), ("lower", "upper"), (False, True), (False, True), (False, True),
                  range(len(FLOAT_EPILOGUES)))
# Sums of up to ~n products, in a different order per kernel.
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-3}, "float64": TOL_SUM["float64"]}


def trmv(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y = alpha * op(T) x (+ beta * y) with T the lower or upper triangle of the n x n row-major A."""
    dtype, uplo, trans, unit, accumulate, index = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    # op(T)[i][k] is nonzero for k <= i when (lower, not transposed) or (upper, transposed).
    below = (uplo == "lower") != trans
    a_at = "a[(long)k * n + i]" if trans else "a[(long)i * n + k]"
    if below:
        lo, hi = "0", "i" if unit else "i + 1"
    else:
        lo, hi = ("i + 1" if unit else "i"), "n"
    diag = "acc += x[i];" if unit else ""
    store = "y[i] = epilogue(alpha * acc) + beta * y[i];" if accumulate else "y[i] = epilogue(alpha * acc);"
    sig = f"int n, {t} alpha, {t + ' beta, ' if accumulate else ''}const {t}* a, const {t}* x, {t}* y"
    call = f"n, alpha, {'beta, ' if accumulate else ''}a, x, y"
    kw = {"T": t, "sig": sig, "call": call, "a_at": a_at, "lo": lo, "hi": hi, "diag": diag, "store": store,
          "epi": epi}  # fmt: skip
    head = fill("#include <math.h>\n__device__ __forceinline__ $T epilogue($T v) { return $epi; }\n", **kw)
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
void trmv($sig) {
  for (int i = 0; i < n; ++i) {
    $T acc = 0;
    for (int k = $lo; k < $hi; ++k) acc += $a_at * x[k];
    $diag
    $store
  }
}""", **kw)  # fmt: skip
    access = "coalesced" if trans else "strided"
    impls = [
        impl("thread_per_row", ["thread-per-output", "triangle-skipping", access], head + fill(_THREAD, **kw)),
        impl("warp_per_row", ["warp-per-output", "warp-shuffle"], head + fill(_WARP, **kw)),
        impl("smem_x", ["thread-per-output", "shared-memory-tiling", "tile-skipping"], head + fill(_SMEM, **kw)),
    ]
    args = [scalar("n", "int32", "N"), scalar("alpha", dtype, round(float(rng.uniform(0.5, 2.0)), 3))]
    if accumulate:
        args.append(scalar("beta", dtype, round(float(rng.uniform(-1.0, 1.0)), 3)))
    args += [buffer("a", "in", dtype, ["N", "N"]), buffer("x", "in", dtype, ["N"]),
             buffer("y", "inout" if accumulate else "out", dtype, ["N"])]  # fmt: skip
    return task(
        name="trmv", family="trmv", entry="trmv", args=args,
        description=f"Triangular matrix-vector product ({dtype}): T is the {uplo} triangle of the n x n row-major "
        f"matrix a{' with an implicit unit diagonal (the stored diagonal is ignored)' if unit else ''}; "
        f"y = epilogue(alpha * {'T^T' if trans else 'T'} x){' + beta * y' if accumulate else ''} with epilogue(v) = "
        f"{epi}. Elements of a outside "
        f"the triangle must not affect the result. For row i: sum over k in [{lo}, {hi}) of {a_at} * x[k]"
        f"{' plus x[i]' if unit else ''}.",
        configs=[{"N": 64}, {"N": 129}, {"N": 513}], hidden=[{"N": 301}], perf=[{"N": 16384}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_THREAD = """
__global__ void trmv_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  $T acc = 0;
  for (int k = $lo; k < $hi; ++k) acc += $a_at * x[k];
  $diag
  $store
}
extern "C" void trmv($sig) {
  trmv_kernel<<<(n + 127) / 128, 128>>>($call);
}
"""
_WARP = """
// One warp per row: lanes split the row's triangle, shuffles add the partial sums.
__global__ void trmv_kernel($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= n) return;  // uniform per warp
  $T acc = 0;
  for (int k = $lo + lane; k < $hi; k += 32) acc += $a_at * x[k];
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) {
    $diag
    $store
  }
}
extern "C" void trmv($sig) {
  trmv_kernel<<<(n + 7) / 8, 256>>>($call);
}
"""
_SMEM = """
// x is staged in shared memory chunk by chunk; chunks entirely outside every row's triangle in the block are skipped.
constexpr int THREADS = 128;
__global__ void trmv_kernel($sig) {
  __shared__ $T xs[THREADS];
  int i0 = blockIdx.x * THREADS, i = i0 + threadIdx.x;
  int ilast = min(i0 + THREADS, n) - 1;
  int klo, khi;  // lo and hi are monotone in the row: the block's first and last rows bound its k range
  { int i = i0; klo = $lo; khi = $hi; }
  { int i = ilast; klo = min(klo, $lo); khi = max(khi, $hi); }
  $T acc = 0;
  int mylo = 0, myhi = 0;
  if (i < n) { mylo = $lo; myhi = $hi; }
  for (int k0 = klo / THREADS * THREADS; k0 < khi; k0 += THREADS) {
    if (k0 + threadIdx.x < n) xs[threadIdx.x] = x[k0 + threadIdx.x];
    __syncthreads();
    int kb = max(k0, mylo), ke = min(k0 + THREADS, myhi);
    for (int k = kb; k < ke; ++k) acc += $a_at * xs[k - k0];
    __syncthreads();
  }
  if (i < n) {
    $diag
    $store
  }
}
extern "C" void trmv($sig) {
  trmv_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>($call);
}
"""
