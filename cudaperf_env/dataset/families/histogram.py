"""Histograms: counts of a bin function over int32 or float32 inputs, bins given at run time."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, pick, scalar, task

INT_BINS = ("x % nb", "(x / 7) % nb", "(x ^ (x >> 5)) % nb", "(int)(((long)x * nb) / 100000)",
            "(int)(((unsigned)x * (unsigned)x) % (unsigned)nb)")  # unsigned: x * x must not overflow
FLOAT_BINS = (
    "min(max((int)((x + 4.0f) * 0.125f * nb), 0), nb - 1)", "(int)(fabsf(x) * 10.0f) % nb",
    "min((int)(x * x * nb * 0.25f), nb - 1)", "(int)(floorf(x * 3.0f) + 1000.0f) % nb",
)  # fmt: skip


def histogram(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """hist[b] = number of i with bin(x[i]) == b, for a random bin function of x and nb."""
    dtype = pick(rng, ("int32", "float32"))
    binf = pick(rng, INT_BINS if dtype == "int32" else FLOAT_BINS)
    t = CTYPE[dtype]
    int_init = {"dist": "randint", "low": 0, "high": 100000}
    init = int_init if dtype == "int32" else {"dist": "normal", "mean": 0, "std": 1.5}
    sig = f"int n, int nb, const {t}* x, int* hist"
    ref_bin = binf.replace("min(max(", "imin(imax(").replace("min((int)", "imin((int)")
    reference = fill("""#include <math.h>
static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }
static int bin_of($T x, int nb) { return $rbin; }
void histogram($sig) {
  for (int b = 0; b < nb; ++b) hist[b] = 0;
  for (int i = 0; i < n; ++i) hist[bin_of(x[i], nb)] += 1;
}""", T=t, rbin=ref_bin, sig=sig)  # fmt: skip
    head = fill("#include <math.h>\n__device__ __forceinline__ int bin_of($T x, int nb) { return $bin; }\n",
                T=t, bin=binf)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + fill(_GLOBAL, sig=sig)),
        impl("smem_private", ["shared-memory", "atomics", "privatization"], head + fill(_SMEM, sig=sig)),
        impl("smem_grid_stride", ["shared-memory", "atomics", "privatization", "grid-stride"],
             head + fill(_SMEM_GRID, sig=sig)),
    ]
    args = [scalar("n", "int32", "N"), scalar("nb", "int32", "B"), buffer("x", "in", dtype, ["N"], init),
            buffer("hist", "out", "int32", ["B"])]  # fmt: skip
    return task(
        name="histogram", family="histogram", entry="histogram", args=args,
        description=f"Histogram of n {dtype} values into nb bins (nb <= 1024): hist[b] = number of i with "
        f"bin(x[i]) == b, where bin(x) = {binf}.",
        configs=[{"N": 1000, "B": 16}, {"N": 4097, "B": 100}, {"N": 65536, "B": 256}],
        hidden=[{"N": 30011, "B": 37}], perf=[{"N": 1 << 25, "B": 256}], reference=reference, implementations=impls,
    )


_GLOBAL = """
__global__ void count_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&hist[bin_of(x[i], nb)], 1);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof(int));  // hist arrives poisoned
  count_kernel<<<(n + 255) / 256, 256>>>(n, nb, x, hist);
}
"""
_SMEM = """
// Each block counts into a private shared-memory histogram, then adds it to the global one.
constexpr int MAX_BINS = 1024;
__global__ void count_kernel($sig) {
  __shared__ int local[MAX_BINS];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) local[b] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&local[bin_of(x[i], nb)], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof(int));
  count_kernel<<<(n + 255) / 256, 256>>>(n, nb, x, hist);
}
"""
_SMEM_GRID = """
// A capped grid; each thread counts many elements into the block's shared histogram.
constexpr int MAX_BINS = 1024;
__global__ void count_kernel($sig) {
  __shared__ int local[MAX_BINS];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[bin_of(x[i], nb)], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof(int));
  count_kernel<<<max(1, min((n + 255) / 256, 256)), 256>>>(n, nb, x, hist);
}
"""
