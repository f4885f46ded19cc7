"""Banded matrix-vector products (BLAS gbmv / sbmv) on band storage, with an epilogue and optional beta * y.

Only the diagonals kl below to ku above the main one are stored, either row-wise (row i holds its band
entries, A[i][j] at ab[i * width + j - i + kl]) or diagonal-wise as in LAPACK (diagonal d = ku + i - j is a row
of ab: A[i][j] at ab[(ku + i - j) * n + j]). A symmetric band matrix stores its upper band (kl = 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_SUM, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

# Where stored entry (i, j) of the band lives.
STORAGE = {"rows": "ab[(long)i * (kl + ku + 1) + (j - i + kl)]", "diagonals": "ab[(long)(ku + i - j) * n + j]"}
# form -> (entry (i, j) of op(A) from the stored band, first and last j of row i)
FORMS = {
    "general": ("AT(i, j)", "i - kl", "i + ku"),
    "transposed": ("AT(j, i)", "i - ku", "i + kl"),
    "symmetric": ("(j >= i ? AT(i, j) : AT(j, i))", "i - ku", "i + ku"),
}
STRUCTURES = grid(sorted(FORMS), sorted(STORAGE), (False, True), ("float32", "float64"), range(len(FLOAT_EPILOGUES)))


def band_matvec(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = epilogue(alpha * sum_j op(A)[i][j] * x[j]) (+ beta * y[i]) over the band of row i."""
    form, storage, accumulate, dtype, index = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    kl = 0 if form == "symmetric" else int(rng.integers(1, 9))
    ku = int(rng.integers(1, 9))
    alpha = lit(float(rng.uniform(0.5, 2.0)), dtype)
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)), var=f"({alpha} * acc)")
    entry, lo, hi = FORMS[form]
    sig = f"int n, int kl, int ku, {f'{t} beta, ' if accumulate else ''}const {t}* ab, const {t}* x, {t}* y"
    kw = {"T": t, "sig": sig, "call": f"n, kl, ku, {'beta, ' if accumulate else ''}ab, x, y", "epi": epi,
          "at": STORAGE[storage], "entry": entry, "lo": lo, "hi": hi,
          "store": "y[i] = epilogue(acc) + beta * y[i];" if accumulate else "y[i] = epilogue(acc);"}  # fmt: skip
    helpers = fill("""#include <math.h>
#define AT(i, j) $at
$Q $T epilogue($T acc) { return $epi; }
// Entry (i, j) of op(A); only called for j in the band of row i.
$Q $T entry(int n, int kl, int ku, const $T* ab, int i, int j) { return $entry; }
""", Q="$Q", **kw)  # fmt: skip
    head = helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-row", "band-loop"], head + fill(_THREAD, **kw)),
        impl("warp_per_row", ["warp-per-row", "warp-shuffle"], head + fill(_WARP, **kw)),
        impl("smem_x_halo", ["thread-per-row", "shared-memory-tiling", "halo"], head + fill(_SMEM, **kw)),
    ]
    width = kl + ku + 1
    args = [scalar("n", "int32", "N"), scalar("kl", "int32", kl), scalar("ku", "int32", ku)]
    if accumulate:
        args.append(scalar("beta", dtype, round(float(rng.uniform(-1.0, 1.0)), 3)))
    args += [buffer("ab", "in", dtype, ["N", width] if storage == "rows" else [width, "N"]),
             buffer("x", "in", dtype, ["N"]), buffer("y", "inout" if accumulate else "out", dtype, ["N"])]
    layout = ("row-wise: ab is n x (kl + ku + 1), A[i][j] = ab[i * (kl + ku + 1) + j - i + kl]" if storage == "rows"
              else "diagonal-wise (LAPACK): ab is (kl + ku + 1) x n, A[i][j] = ab[(ku + i - j) * n + j]")
    what = {"general": "op(A) = A", "transposed": "op(A) = A^T",
            "symmetric": "A is symmetric with its upper band stored (kl = 0), op(A) = A"}[form]  # fmt: skip
    return task(
        name=f"band_matvec_{form}", family="band_matvec", entry="band_matvec", args=args,
        description=f"Banded matrix-vector product ({dtype}): A is n x n with kl = {kl} sub- and ku = {ku} "
        f"super-diagonals stored {layout} (entries outside the band are zero; stored slots outside the matrix are "
        f"never read); {what}. y[i] = epilogue(sum over j in [max(0, {lo}), min(n - 1, {hi})] of op(A)[i][j] * "
        f"x[j]){' + beta * y[i]' if accumulate else ''} with epilogue(acc) = {epi}.",
        configs=[{"N": 64}, {"N": 1001}, {"N": 65536}], hidden=[{"N": 30011}], perf=[{"N": 1 << 24}],
        reference=helpers.replace("$Q", "static") + fill(_REF, **kw), implementations=impls, tolerance=TOL_SUM[dtype],
    )  # fmt: skip


_REF = """
void band_matvec($sig) {
  for (int i = 0; i < n; ++i) {
    int j0 = $lo < 0 ? 0 : $lo, j1 = $hi > n - 1 ? n - 1 : $hi;
    $T acc = 0;
    for (int j = j0; j <= j1; ++j) acc += entry(n, kl, ku, ab, i, j) * x[j];
    $store
  }
}
"""
_THREAD = """
// One thread per row walks its band.
__global__ void band_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j0 = max(0, $lo), j1 = min(n - 1, $hi);
  $T acc = 0;
  for (int j = j0; j <= j1; ++j) acc += entry(n, kl, ku, ab, i, j) * x[j];
  $store
}
extern "C" void band_matvec($sig) {
  band_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_WARP = """
// One warp per row: lanes split the band, shuffles add the partial sums (for wide bands).
__global__ void band_kernel($sig) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= n) return;  // uniform per warp
  int j0 = max(0, $lo), j1 = min(n - 1, $hi);
  $T acc = 0;
  for (int j = j0 + lane; j <= j1; j += 32) acc += entry(n, kl, ku, ab, i, j) * x[j];
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) $store
}
extern "C" void band_matvec($sig) {
  band_kernel<<<(n + 7) / 8, 256>>>($call);
}
"""
_SMEM = """
// A block of THREADS rows stages the x values its bands touch (its rows plus a halo of up to 16 each side).
constexpr int THREADS = 256, HALO = 16;
__global__ void band_kernel($sig) {
  __shared__ $T xs[THREADS + 2 * HALO];
  int i0 = blockIdx.x * THREADS, i = i0 + threadIdx.x;
  for (int k = threadIdx.x; k < THREADS + 2 * HALO; k += THREADS) {
    int j = i0 - HALO + k;
    xs[k] = j >= 0 && j < n ? x[j] : ($T)0;
  }
  __syncthreads();
  if (i >= n) return;
  int j0 = max(0, $lo), j1 = min(n - 1, $hi);
  $T acc = 0;
  for (int j = j0; j <= j1; ++j) acc += entry(n, kl, ku, ab, i, j) * xs[j - i0 + HALO];
  $store
}
extern "C" void band_matvec($sig) {
  band_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>($call);
}
"""
