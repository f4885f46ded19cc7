"""k-means assignment step: each point's nearest centroid (ties to the lowest index) and the distance to it.

The points and centroids are drawn as small integers (also for float dtypes), so every distance is an exactly
representable integer: no rounding, FMA contraction or summation order can change an argmin decision, and the
frequent exact ties test the lowest-index rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

# name -> (per-coordinate accumulation of acc with difference d, description)
METRICS = {
    "sqeuclidean": ("acc += d * d;", "the squared Euclidean distance"),
    "l1": ("acc += d < 0 ? -d : d;", "the L1 (Manhattan) distance"),
    "linf": ("acc = (d < 0 ? -d : d) > acc ? (d < 0 ? -d : d) : acc;", "the L-inf (Chebyshev) distance"),
    "sq_plus_l1": ("acc += d * d + (d < 0 ? -d : d);", "the sum over coordinates of d^2 + |d|"),
    "mismatch": ("acc += d != 0;", "the number of differing coordinates (ties are frequent)"),
    "weighted_sq": ("acc += (j + 1) * d * d;", "the sum over coordinates j of (j + 1) * d^2"),
}
# What is written per point: label and distance, the label only, the distance only, or labels and cluster sizes.
OUTPUTS = {
    "both": ("label[i] = arg; best[i] = b;", "label[i] = arg; best[i] = b;"),
    "label": ("label[i] = arg;", "label[i] = arg;"),
    "distance": ("best[i] = b;", "best[i] = b;"),
    "sizes": ("label[i] = arg; sizes[arg] += 1;", "label[i] = arg; atomicAdd(&sizes[arg], 1);"),
}
STRUCTURES = grid(sorted(METRICS), ("float32", "float64", "int32"), sorted(OUTPUTS))


def kmeans_assign(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """label[i] = argmin_k dist(x[i], c[k]) (lowest k on ties), best[i] = that distance."""
    metric, dtype, output = nth(variant, STRUCTURES)
    k, dim, high = int(pick(rng, (3, 4, 7, 16, 32, 64))), int(pick(rng, (2, 3, 4, 8, 16))), int(pick(rng, (8, 16, 32)))
    t = CTYPE[dtype]
    outs = {"both": f"int* label, {t}* best", "label": "int* label", "distance": f"{t}* best",
            "sizes": "int* label, int* sizes"}[output]  # fmt: skip
    sig = f"int n, const {t}* x, const {t}* c, {outs}"
    ref_store, store = OUTPUTS[output]
    kw = {"T": t, "K": k, "D": dim, "acc": METRICS[metric][0], "sig": sig, "store": store, "ref_store": ref_store,
          "call": "n, x, c, " + ", ".join(o.split("* ")[1] for o in outs.split(", ")),
          "zero": "cudaMemset(sizes, 0, K * sizeof(int));  // sizes arrive poisoned\n  " if output == "sizes" else "",
          "ref_zero": "for (int q = 0; q < K; ++q) sizes[q] = 0;\n  " if output == "sizes" else ""}  # fmt: skip
    dist_fn = fill("""$T dist(const $T* p, const $T* q) {
  $T acc = 0;
  for (int j = 0; j < D; ++j) {
    $T d = p[j] - q[j];
    $acc
  }
  return acc;
}""", **kw)  # fmt: skip
    kw["dist"] = dist_fn
    reference = fill("""#define K $K
#define D $D
static $dist
void assign($sig) {
  ${ref_zero}for (int i = 0; i < n; ++i) {
    int arg = 0;
    $T b = dist(x + (long)i * D, c);
    for (int q = 1; q < K; ++q) {
      $T v = dist(x + (long)i * D, c + q * D);
      if (v < b) { b = v; arg = q; }
    }
    $ref_store
  }
}""", **kw)  # fmt: skip
    head = fill("typedef $T T;\nconstexpr int K = $K, D = $D;\n__device__ __forceinline__ $dist\n", **kw)
    impls = [
        impl("naive", ["thread-per-element"], head + fill(_NAIVE, **kw)),
        impl("smem_centroids", ["shared-memory-tiling", "thread-per-element"], head + fill(_SMEM, **kw)),
        impl("warp_per_point", ["warp-per-row", "warp-shuffle", "tree-reduction", "grid-stride"],
             head + fill(_WARP, **kw)),
    ]
    init = {"dist": "randint", "low": 0, "high": high}
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N", dim], init),
            buffer("c", "in", dtype, [k, dim], init)]
    if output != "distance":
        args.append(buffer("label", "out", "int32", ["N"]))
    if output in ("both", "distance"):
        args.append(buffer("best", "out", dtype, ["N"]))
    if output == "sizes":
        args.append(buffer("sizes", "out", "int32", [k]))
    return task(
        name=f"kmeans_{metric}", family="kmeans_assign", entry="assign", args=args,
        description=f"k-means assignment step in {dtype}: x holds n points and c holds {k} centroids of {dim} "
        f"coordinates (row-major, small integer values); label[i] = the index of the centroid nearest to x[i] by "
        f"{METRICS[metric][1]} (the lowest index among equally near ones) and best[i] = that distance; written: "
        f"{ref_store.replace('sizes[arg] += 1', 'sizes[k] = the number of points labelled k')}.",
        configs=[{"N": 1000}, {"N": 1537}, {"N": 3000}], hidden=[{"N": 2001}], perf=[{"N": 1 << 22}],
        reference=reference, implementations=impls,
    )


_NAIVE = """
__global__ void assign_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int arg = 0;
  T b = dist(x + (long)i * D, c);
  for (int q = 1; q < K; ++q) {
    T v = dist(x + (long)i * D, c + q * D);
    if (v < b) { b = v; arg = q; }
  }
  $store
}
extern "C" void assign($sig) {
  ${zero}assign_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_SMEM = """
// Every block stages all K x D centroids in shared memory; each thread keeps its point in registers.
__global__ void assign_smem($sig) {
  __shared__ T sc[K * D];
  for (int e = threadIdx.x; e < K * D; e += blockDim.x) sc[e] = c[e];
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T p[D];
  #pragma unroll
  for (int j = 0; j < D; ++j) p[j] = x[(long)i * D + j];
  int arg = 0;
  T b = dist(p, sc);
  for (int q = 1; q < K; ++q) {
    T v = dist(p, sc + q * D);
    if (v < b) { b = v; arg = q; }
  }
  $store
}
extern "C" void assign($sig) {
  ${zero}assign_smem<<<(n + 127) / 128, 128>>>($call);
}
"""
_WARP = """
// One warp per point (warps stride over the points): lane l scans centroids l, l + 32, ...; a shuffle tree
// keeps the smaller distance, the lower index on ties. The loop is warp-uniform: every lane reaches every shuffle.
__global__ void assign_warp($sig) {
  int lane = threadIdx.x & 31, warps = (gridDim.x * blockDim.x) >> 5;
  for (int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    int arg = K;
    T b = 0;
    for (int q = lane; q < K; q += 32) {
      T v = dist(x + (long)i * D, c + q * D);
      if (arg == K || v < b) { b = v; arg = q; }
    }
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      T ob = __shfl_down_sync(0xffffffffu, b, off);
      int oa = __shfl_down_sync(0xffffffffu, arg, off);
      if (oa < K && (arg == K || ob < b || (ob == b && oa < arg))) { b = ob; arg = oa; }
    }
    if (lane == 0) {
      $store
    }
  }
}
extern "C" void assign($sig) {
  int blocks = (n + 7) / 8 < 264 ? (n + 7) / 8 : 264;  // 8 warps per block; 2 blocks per SM suffice
  ${zero}assign_warp<<<blocks, 256>>>($call);
}
"""
