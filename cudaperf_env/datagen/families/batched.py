"""Batched small contractions: many independent tiny matmuls, matvecs and dot products in one call."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

# (symbols present, per-kind configs): bmm has m x n outputs per item, bmv m x 1, bdot 1 x 1.
KINDS: dict[str, tuple[str, list[dict[str, int]], list[dict[str, int]], list[dict[str, int]]]] = {
    "bmm": ("MNK", [{"B": 7, "M": 3, "N": 5, "K": 4}, {"B": 1001, "M": 8, "N": 8, "K": 8},
                    {"B": 129, "M": 17, "N": 13, "K": 32}], [{"B": 99, "M": 5, "N": 31, "K": 7}],
            [{"B": 65536, "M": 16, "N": 16, "K": 16}, {"B": 16383, "M": 32, "N": 32, "K": 32}]),
    "bmv": ("MK", [{"B": 7, "M": 3, "K": 5}, {"B": 1001, "M": 16, "K": 16}, {"B": 513, "M": 33, "K": 64}],
            [{"B": 257, "M": 9, "K": 31}], [{"B": 262144, "M": 32, "K": 32}, {"B": 65537, "M": 64, "K": 64}]),
    "bdot": ("K", [{"B": 9, "K": 5}, {"B": 10001, "K": 16}, {"B": 2049, "K": 257}], [{"B": 3001, "K": 33}],
             [{"B": 1 << 20, "K": 64}, {"B": 65537, "K": 1024}]),
}  # fmt: skip
STRUCTURES = grid(("float32", "float64"), (False, True), ("plain", "trans", "broadcast"), range(len(FLOAT_EPILOGUES)))
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-10}}


def batched(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """c[b][i][j] = epilogue(sum_kk A_b[i][kk] * B_b[kk][j]) for a batch of small operands (bmm, bmv or bdot)."""
    dtype, a_trans, b_form, index = nth(variant, STRUCTURES)
    # bmv has no transposed b (n = 1), bdot neither nor a transposed a (m = 1).
    kind = "bmm" if b_form == "trans" else pick(rng, ("bmm", "bmv") if a_trans else sorted(KINDS))
    syms, configs, hidden, perf = KINDS[kind]
    t = CTYPE[dtype]
    alpha = lit(float(rng.uniform(0.5, 2.0)), dtype)
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)), var=f"({alpha} * acc)")
    a_at = "a[((long)bb * kdim + kk) * m + i]" if a_trans else "a[((long)bb * m + i) * kdim + kk]"
    b_at = {"plain": "b[((long)bb * kdim + kk) * n + j]", "trans": "b[((long)bb * n + j) * kdim + kk]",
            "broadcast": "b[(long)kk * n + j]"}[b_form]  # fmt: skip
    dims = {"M": "M" if "M" in syms else 1, "N": "N" if "N" in syms else 1}
    a_shape = ["B", "K", dims["M"]] if a_trans else ["B", dims["M"], "K"]
    b_shape = {"plain": ["B", "K", dims["N"]], "trans": ["B", dims["N"], "K"], "broadcast": ["K", dims["N"]]}[b_form]
    c_shape = ["B", dims["M"], dims["N"]]
    sig = f"int batch, int m, int n, int kdim, const {t}* a, const {t}* b, {t}* c"
    kw = {"T": t, "sig": sig, "a_at": a_at, "b_at": b_at}
    head = fill("""#include <math.h>
__device__ __forceinline__ $T epilogue($T acc) { return $epi; }
__device__ __forceinline__ $T load_a(const $T* a, int m, int kdim, long bb, int i, int kk) { return $a_at; }
__device__ __forceinline__ $T load_b(const $T* b, int n, int kdim, long bb, int kk, int j) { return $b_at; }
""", epi=epi, **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-output"], head + fill(_NAIVE, **kw)),
        impl("warp_per_output", ["warp-per-output", "warp-shuffle"], head + fill(_WARP, **kw)),
        impl("block_per_item", ["block-per-item", "shared-memory", "coalesced"], head + fill(_BLOCK, **kw)),
    ]
    args = [scalar("batch", "int32", "B"), scalar("m", "int32", dims["M"]), scalar("n", "int32", dims["N"]),
            scalar("kdim", "int32", "K"), buffer("a", "in", dtype, [d for d in a_shape if d != 1]),
            buffer("b", "in", dtype, [d for d in b_shape if d != 1]),
            buffer("c", "out", dtype, [d for d in c_shape if d != 1])]  # fmt: skip
    return task(
        name=f"batched_{kind}", family="batched", entry="batched", args=args,
        description=f"Batched small products ({kind}, {dtype}): for every item bb < batch and i < m, j < n "
        f"(here m = {dims['M']}, n = {dims['N']}), c[(bb * m + i) * n + j] = epilogue(sum_kk A[i][kk] * B[kk][j]) "
        f"with A[i][kk] = {a_at}, B[kk][j] = {b_at}"
        f"{' (one B shared by all items)' if b_form == 'broadcast' else ''} and epilogue(acc) = {epi}.",
        configs=configs, hidden=hidden, perf=perf,
        reference="#include <math.h>\n" + fill(_REF, epi=epi, **kw), implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
static $T epilogue($T acc) { return $epi; }
void batched($sig) {
  for (long bb = 0; bb < batch; ++bb)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;  /* accurate reference; kernels may sum in $T */
        for (int kk = 0; kk < kdim; ++kk) acc += (double)$a_at * $b_at;
        c[(bb * m + i) * n + j] = epilogue(($T)acc);
      }
}
"""
_NAIVE = """
// One thread per output element of the whole batch.
__global__ void batched_kernel($sig) {
  long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (t >= (long)batch * m * n) return;
  long bb = t / ((long)m * n);
  int i = (int)(t / n % m), j = (int)(t % n);
  $T acc = 0;
  for (int kk = 0; kk < kdim; ++kk) acc += load_a(a, m, kdim, bb, i, kk) * load_b(b, n, kdim, bb, kk, j);
  c[t] = epilogue(acc);
}
extern "C" void batched($sig) {
  long total = (long)batch * m * n;
  batched_kernel<<<(unsigned)((total + 255) / 256), 256>>>(batch, m, n, kdim, a, b, c);
}
"""
_WARP = """
// One warp per output element: lanes split the kk loop, shuffles add the partial sums.
__global__ void batched_kernel($sig) {
  long t = (blockIdx.x * (long)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (t >= (long)batch * m * n) return;  // uniform per warp
  long bb = t / ((long)m * n);
  int i = (int)(t / n % m), j = (int)(t % n);
  $T acc = 0;
  for (int kk = lane; kk < kdim; kk += 32) acc += load_a(a, m, kdim, bb, i, kk) * load_b(b, n, kdim, bb, kk, j);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) c[t] = epilogue(acc);
}
extern "C" void batched($sig) {
  long warps = (long)batch * m * n;
  batched_kernel<<<(unsigned)((warps + 7) / 8), 256>>>(batch, m, n, kdim, a, b, c);
}
"""
_BLOCK = """
// One block per batch item: the item's A (m x kdim) and B (kdim x n) are staged in shared memory
// with coalesced loads, then the block's threads share the m x n outputs.
__global__ void batched_kernel($sig) {
  extern __shared__ unsigned char smem[];
  $T* as = ($T*)smem;             // as[i * kdim + kk]
  $T* bs = as + (long)m * kdim;   // bs[kk * n + j]
  long bb = blockIdx.x;
  for (int x = threadIdx.x; x < m * kdim; x += blockDim.x) as[x] = load_a(a, m, kdim, bb, x / kdim, x % kdim);
  for (int x = threadIdx.x; x < kdim * n; x += blockDim.x) bs[x] = load_b(b, n, kdim, bb, x / n, x % n);
  __syncthreads();
  for (int o = threadIdx.x; o < m * n; o += blockDim.x) {
    int i = o / n, j = o % n;
    $T acc = 0;
    for (int kk = 0; kk < kdim; ++kk) acc += as[i * kdim + kk] * bs[kk * n + j];
    c[bb * m * n + o] = epilogue(acc);
  }
}
extern "C" void batched($sig) {
  int threads = min(256, max(32, (m * n + 31) / 32 * 32));
  size_t bytes = sizeof($T) * ((size_t)m * kdim + (size_t)kdim * n);
  batched_kernel<<<batch, threads, bytes>>>(batch, m, n, kdim, a, b, c);
}
"""
