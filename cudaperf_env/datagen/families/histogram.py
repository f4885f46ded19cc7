"""Histograms: counts or weight sums per bin of a bin function over int32, float32 or float64 inputs.

Bin functions use only exactly rounded operations (no transcendentals, no multiply-add a
compiler could contract), so the bin of every element is the same on every device.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_SUM, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import spell

# Integer pre-maps g(x) of x in [0, 100000), as unsigned values.
INT_MAPS = ("(unsigned)x", "(unsigned)x / 7u", "(unsigned)(x ^ (x >> 5))", "(unsigned)x * (unsigned)x",
            "(unsigned)x * 2654435761u", "(unsigned)(x > 50000 ? x - 50000 : 50000 - x)")  # fmt: skip
# Reductions of g to a bin in [0, nb).
INT_BINNING = {"mod": "(int)(g % (unsigned)nb)", "fold": "(int)((g ^ (g >> 13)) % (unsigned)nb)"}
# Float pre-maps h(x) of x ~ N(0, 1.5) with the range [lo, hi) their bins cover.
FLOAT_MAPS = (("x", -4.0, 4.0), ("x * x", 0.0, 9.0), ("fabsf(x)", 0.0, 4.0), ("x * x * x", -8.0, 8.0),
              ("sqrtf(fabsf(x))", 0.0, 2.0), ("x / (1.0f + fabsf(x))", -1.0, 1.0))  # fmt: skip
FLOAT_BINNING = {
    "clamp": "clampi((int)((h - $lo) / ($span) * nb), 0, nb - 1)",
    "drop": "h < $lo || h >= $hi ? -1 : clampi((int)((h - $lo) / ($span) * nb), 0, nb - 1)",
    "floor_mod": "(((int)floorf(h * $k) % nb) + nb) % nb",
}
STRUCTURES = [("int32", m, b, w) for m, b, w in grid(range(len(INT_MAPS)), sorted(INT_BINNING), (False, True))] + \
    [(d, m, b, w) for d, m, b, w in grid(("float32", "float64"), range(len(FLOAT_MAPS)), sorted(FLOAT_BINNING),
                                         (False, True))]  # fmt: skip


def histogram(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """hist[b] = number of i (or sum of w[i]) with bin(x[i]) == b; bins that are -1 are dropped."""
    dtype, index, binning, weighted = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    if dtype == "int32":
        body = f"unsigned g = {INT_MAPS[index]};\n  return {INT_BINNING[binning]};"
        init = {"dist": "randint", "low": 0, "high": 100000}
    else:
        expr, lo, hi = FLOAT_MAPS[index]
        k = round(float(rng.uniform(1.5, 12.0)), 2)
        binf = fill(FLOAT_BINNING[binning], lo=f"{lo}f", hi=f"{hi}f", span=f"{hi - lo}f", k=f"{k}f")
        body = spell(f"{t} h = {expr};\n  return {binf};", dtype)
        init = {"dist": "normal", "mean": 0, "std": 1.5}
    wt = "float64" if dtype == "float64" else "float32"
    ht = wt if weighted else "int32"
    hc = CTYPE[ht]
    args = [scalar("n", "int32", "N"), scalar("nb", "int32", "B"), buffer("x", "in", dtype, ["N"], init)]
    if weighted:
        args.append(buffer("w", "in", wt, ["N"], {"dist": "uniform", "low": 0, "high": 1}))
    args.append(buffer("hist", "out", ht, ["B"]))
    sig = f"int n, int nb, const {t}* x, {f'const {CTYPE[wt]}* w, ' if weighted else ''}{hc}* hist"
    kw = {"T": t, "H": hc, "sig": sig, "call": f"n, nb, x, {'w, ' if weighted else ''}hist", "body": body,
          "amount": "w[i]" if weighted else "1",
          "skip": "if (b >= 0) " if dtype != "int32" and binning == "drop" else ""}  # fmt: skip
    helpers = fill("$Q int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }\n"
                   "$Q int bin_of($T x, int nb) {\n  $body\n}\n", Q="$Q", **kw)  # fmt: skip
    reference = "#include <math.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw)
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + fill(_GLOBAL, **kw)),
        impl("smem_private", ["shared-memory", "atomics", "privatization"], head + fill(_SMEM, **kw)),
        impl("smem_grid_stride", ["shared-memory", "atomics", "privatization", "grid-stride"],
             head + fill(_SMEM_GRID, **kw)),
    ]
    what = "the sum of w[i] over the i" if weighted else "the number of i"
    return task(
        name="histogram", family="histogram", entry="histogram", args=args,
        description=f"{'Weighted h' if weighted else 'H'}istogram of n {dtype} values into nb bins (nb <= 1024): "
        f"hist[b] = {what} with bin_of(x[i]) == b (elements whose bin is -1 are skipped), where bin_of(x) is "
        f"{{ {' '.join(body.split())} }} and clampi(v, lo, hi) clamps v to [lo, hi].",
        configs=[{"N": 1000, "B": 16}, {"N": 4097, "B": 100}, {"N": 65536, "B": 256}],
        hidden=[{"N": 30011, "B": 37}], perf=[{"N": 1 << 25, "B": 256}], reference=reference, implementations=impls,
        tolerance=TOL_SUM[wt] if weighted else None,
    )  # fmt: skip


_REF = """
void histogram($sig) {
  for (int b = 0; b < nb; ++b) hist[b] = 0;
  for (int i = 0; i < n; ++i) {
    int b = bin_of(x[i], nb);
    ${skip}hist[b] += $amount;
  }
}
"""
_GLOBAL = """
__global__ void count_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int b = bin_of(x[i], nb);
  ${skip}atomicAdd(&hist[b], $amount);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof($H));  // hist arrives poisoned
  count_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_SMEM = """
// Each block accumulates into a private shared-memory histogram, then adds it to the global one.
constexpr int MAX_BINS = 1024;
__global__ void count_kernel($sig) {
  __shared__ $H local[MAX_BINS];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) local[b] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int b = bin_of(x[i], nb);
    ${skip}atomicAdd(&local[b], $amount);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof($H));
  count_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_SMEM_GRID = """
// A capped grid; each thread accumulates many elements into the block's shared histogram.
constexpr int MAX_BINS = 1024;
__global__ void count_kernel($sig) {
  __shared__ $H local[MAX_BINS];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int b = bin_of(x[i], nb);
    ${skip}atomicAdd(&local[b], $amount);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
}
extern "C" void histogram($sig) {
  cudaMemset(hist, 0, nb * sizeof($H));
  count_kernel<<<max(1, min((n + 255) / 256, 256)), 256>>>($call);
}
"""
