"""Top-k selection per row: the k largest or smallest by a key, ties by index; values and/or indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import spell
from cudaperf_env.datagen.families.sorting import KEYS

OUTPUTS = ("values", "indices", "both")
STRUCTURES = [(d, key, out, largest) for (d, key), out, largest in grid(KEYS, OUTPUTS, (True, False))]


def topk_rows(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """For each row, its k best elements by key(x) (largest or smallest, lower index first on ties), in order."""
    dtype, key, out_mode, largest = nth(variant, STRUCTURES)
    k = int(pick(rng, (2, 4, 5, 8, 10, 16)))
    t = CTYPE[dtype]
    key = spell(key, dtype)
    kt = "int" if dtype == "int32" else t
    outs = ([f"{t}* vals"] if out_mode != "indices" else []) + (["int* idx"] if out_mode != "values" else [])
    sig = f"int rows, int cols, int k, const {t}* x, " + ", ".join(outs)
    call = "rows, cols, k, x, " + ", ".join(o.split("* ")[1] for o in outs)
    store = " ".join((["vals[$o] = x[$row + $i];"] if out_mode != "indices" else [])
                     + (["idx[$o] = $i;"] if out_mode != "values" else []))  # fmt: skip
    helpers = (f"$Q {kt} sel_key({t} v) {{ return {key}; }}\n"
               f"// Strict order of (key, index) pairs: the better key first, the lower index on equal keys.\n"
               f"$Q int before({kt} ka, int ia, {kt} kb, int ib) {{\n"
               f"  return ka {'>' if largest else '<'} kb || (ka == kb && ia < ib);\n}}\n")  # fmt: skip
    head = "#include <math.h>\n#include <limits.h>\n" + helpers.replace("$Q", "__device__ __forceinline__") + \
        fill(_LOCAL_TOPK, K=kt, KMAX=k)  # fmt: skip
    kw = {"T": t, "K": kt, "sig": sig, "call": call}
    impls = [
        impl("naive", ["thread-per-row", "insertion-topk"],
             head + fill(_THREAD, **kw, store=fill(store, o="base_o + t", row="base", i="bi[t]"))),
        impl("warp_per_row", ["warp-per-row", "warp-shuffle", "per-lane-topk", "coalesced"],
             head + fill(_WARP, **kw, store=fill(store, o="(long)r * k + t", row="base", i="bi_best"))),
        impl("block_k_pass", ["block-per-row", "shared-memory", "tree-reduction", "k-pass-selection"],
             head + fill(_BLOCK, **kw, store=fill(store, o="(long)r * k + t", row="base", i="si[0]"))),
    ]  # fmt: skip
    init = {"dist": "randint", "low": -50, "high": 50} if dtype == "int32" else {"dist": "normal", "mean": 0, "std": 2}
    args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C"), scalar("k", "int32", k),
            buffer("x", "in", dtype, ["R", "C"], init)]  # fmt: skip
    if out_mode != "indices":
        args.append(buffer("vals", "out", dtype, ["R", k]))
    if out_mode != "values":
        args.append(buffer("idx", "out", "int32", ["R", k]))
    produce = {
        "values": "vals[r][t] = x[r][p_t]",
        "indices": "idx[r][t] = p_t",
        "both": "vals[r][t] = x[r][p_t] and idx[r][t] = p_t",
    }[out_mode]
    reference = "#include <math.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **kw, KMAX=k,
        store=fill(store, o="(long)r * k + t", row="base", i="bi[t]"))  # fmt: skip
    return task(
        name="topk_rows", family="topk_rows", entry="topk_rows", args=args,
        description=f"Top-{k} per row of a rows x cols row-major {dtype} matrix x (k = {k} <= cols): for each row r, "
        f"p_0, ..., p_(k-1) are the indices of its k {'largest' if largest else 'smallest'} elements by "
        f"sel_key(v) = {key}, best first, equal keys ordered by lower index; {produce} for t < k.",
        configs=[{"R": 7, "C": 33}, {"R": 100, "C": 257}, {"R": 33, "C": 1000}], hidden=[{"R": 17, "C": 513}],
        perf=[{"R": 65536, "C": 1024}, {"R": 1 << 20, "C": 64}], reference=reference, implementations=impls,
    )  # fmt: skip


_REF = """
void topk_rows($sig) {
  $K bk[$KMAX];
  int bi[$KMAX];
  for (int r = 0; r < rows; ++r) {
    long base = (long)r * cols;
    int cnt = 0;
    for (int j = 0; j < cols; ++j) {
      $K kj = sel_key(x[base + j]);
      if (cnt == k && !before(kj, j, bk[k - 1], bi[k - 1])) continue;
      int p = cnt < k ? cnt++ : k - 1;
      while (p > 0 && before(kj, j, bk[p - 1], bi[p - 1])) { bk[p] = bk[p - 1]; bi[p] = bi[p - 1]; --p; }
      bk[p] = kj;
      bi[p] = j;
    }
    for (int t = 0; t < k; ++t) { $store }
  }
}
"""
_LOCAL_TOPK = """
#define KMAX $KMAX
// A sorted list of the best KMAX (key, index) pairs seen so far, in registers / local memory.
struct TopK {
  $K key[KMAX];
  int index[KMAX];
  int cnt;
  __device__ void push($K kj, int j, int k) {
    if (cnt == k && !before(kj, j, key[k - 1], index[k - 1])) return;
    int p = cnt < k ? cnt++ : k - 1;
    while (p > 0 && before(kj, j, key[p - 1], index[p - 1])) { key[p] = key[p - 1]; index[p] = index[p - 1]; --p; }
    key[p] = kj;
    index[p] = j;
  }
};
"""
_THREAD = """
// One thread per row keeps a sorted top-k list while it reads the row.
__global__ void topk_kernel($sig) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  long base = (long)r * cols, base_o = (long)r * k;
  TopK best;
  best.cnt = 0;
  for (int j = 0; j < cols; ++j) best.push(sel_key(x[base + j]), j, k);
  const int* bi = best.index;
  for (int t = 0; t < k; ++t) { $store }
}
extern "C" void topk_rows($sig) {
  topk_kernel<<<(rows + 127) / 128, 128>>>($call);
}
"""
_WARP = """
// One warp per row: each lane keeps the top k of its strided elements (coalesced reads), then k rounds of a
// shuffle arg-best over the lanes' list heads pick the row's top k in order.
constexpr unsigned FULL = 0xffffffffu;
__device__ __forceinline__ bool better($K ka, int ia, $K kb, int ib) {
  if (ia == INT_MAX) return false;  // an exhausted lane's sentinel loses to everything
  return ib == INT_MAX || before(ka, ia, kb, ib);
}
__global__ void topk_kernel($sig) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r >= rows) return;  // uniform per warp
  long base = (long)r * cols;
  TopK mine;
  mine.cnt = 0;
  for (int j = lane; j < cols; j += 32) mine.push(sel_key(x[base + j]), j, k);
  int head = 0;
  for (int t = 0; t < k; ++t) {
    $K kb = head < mine.cnt ? mine.key[head] : ($K)0;
    int bi_best = head < mine.cnt ? mine.index[head] : INT_MAX;
    for (int off = 16; off > 0; off /= 2) {
      $K ko = __shfl_xor_sync(FULL, kb, off);
      int io = __shfl_xor_sync(FULL, bi_best, off);
      if (better(ko, io, kb, bi_best)) { kb = ko; bi_best = io; }
    }
    if (head < mine.cnt && mine.index[head] == bi_best) ++head;
    if (lane == 0) { $store }
  }
}
extern "C" void topk_rows($sig) {
  topk_kernel<<<(rows + 3) / 4, 128>>>($call);
}
"""
_BLOCK = """
// One block per row, k passes: pass t finds the best element strictly after pass t-1's winner in the
// (key, index) order, by a strided scan per thread and a shared-memory arg-best tree.
constexpr int B = 64;
__global__ void topk_kernel($sig) {
  __shared__ $K sk[B];
  __shared__ int si[B];
  __shared__ $K prev_key;
  __shared__ int prev_index;
  int r = blockIdx.x;
  long base = (long)r * cols;
  if (threadIdx.x == 0) prev_index = -1;
  __syncthreads();
  for (int t = 0; t < k; ++t) {
    $K kb = ($K)0, pk = prev_key;
    int ib = INT_MAX, pi = prev_index;
    for (int j = threadIdx.x; j < cols; j += B) {
      $K kj = sel_key(x[base + j]);
      if (pi >= 0 && !before(pk, pi, kj, j)) continue;  // already taken
      if (ib == INT_MAX || before(kj, j, kb, ib)) { kb = kj; ib = j; }
    }
    sk[threadIdx.x] = kb;
    si[threadIdx.x] = ib;
    __syncthreads();
    for (int half = B / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        int io = si[threadIdx.x + half];
        if (io != INT_MAX && (si[threadIdx.x] == INT_MAX || before(sk[threadIdx.x + half], io, sk[threadIdx.x],
                                                                   si[threadIdx.x]))) {
          sk[threadIdx.x] = sk[threadIdx.x + half];
          si[threadIdx.x] = io;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      $store
      prev_key = sk[0];
      prev_index = si[0];
    }
    __syncthreads();
  }
}
extern "C" void topk_rows($sig) {
  topk_kernel<<<rows, B>>>($call);
}
"""
