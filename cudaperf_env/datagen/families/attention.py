"""Scaled dot-product attention per head: masks (causal, window, key padding), score shapes, two layouts.

For query s of head b: o = sum_t softmax_t(score(q_s . k_t, s, t)) v_t over the allowed keys t, optionally
with the row's log-sum-exp. Kernels: a thread per query in two passes, a warp per query with an online
softmax (lanes own head dimensions), and a block of queries sharing key/value tiles in shared memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import spell

# Which keys t query s may attend to (klen[b]: the number of valid keys of head b).
MASKS = {"none": "1", "causal": "t <= s", "window": "t >= s - $w && t <= s + $w", "padding": "t < klen[b]"}
# Score of the scaled dot product z = scale * (q . k) for query s and key t.
SCORES = {"dot": "z", "alibi": "z - $slope * (s >= t ? s - t : t - s)", "softcap": "$cap * tanhf(z / $cap)"}
# Flat index of (head b, position p, dimension k): heads outermost (bsd) or positions outermost (sbd).
LAYOUTS = {"bsd": "((long)b * n + p) * d + k", "sbd": "((long)p * heads + b) * d + k"}
STRUCTURES = grid(sorted(MASKS), sorted(SCORES), sorted(LAYOUTS), ("float32", "float64"), (False, True))
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-4}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-11}}


def attention(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """o[b][s] = softmax over allowed t of score(scale * q[b][s] . key[b][t]) applied to val[b][t] (and lse)."""
    mask, score, layout, dtype, with_lse = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    consts = {"w": int(rng.integers(2, 17)), "slope": lit(float(rng.uniform(0.05, 0.5)), "float32"),
              "cap": lit(float(rng.uniform(2.0, 10.0)), "float32")}  # fmt: skip
    padded = mask == "padding"
    params = [f"int heads, int n, int d, {t} scale", f"const {t}* q, const {t}* key, const {t}* val"] + \
        (["const int* klen"] if padded else []) + [f"{t}* o"] + ([f"{t}* lse"] if with_lse else [])  # fmt: skip
    sig = ", ".join(params)
    kw = {"T": t, "sig": sig, "call": ", ".join(p.split()[-1].lstrip("*") for p in sig.split(", ")),
          "at": LAYOUTS[layout], "allowed": fill(MASKS[mask], **consts),
          "score": spell(fill(SCORES[score], **consts), dtype), "exp": spell("expf", dtype),
          "klen": "klen" if padded else "(const int*)0",
          "store_lse": f"lse[(long)b * n + s] = m + {spell('logf', dtype)}(l);" if with_lse else ""}  # fmt: skip
    helpers = fill("""#include <math.h>
$Q long at(int heads, int n, int d, int b, int p, int k) { (void)heads; return $at; }
$Q int allowed(const int* klen, int b, int s, int t) { (void)klen; (void)b; return $allowed; }
$Q $T score($T z, int s, int t) { (void)s; (void)t; return $score; }
""", Q="$Q", **kw)  # fmt: skip
    head = helpers.replace("$Q", "__device__ __forceinline__") + "constexpr int MAXD = 64;\n"
    impls = [
        impl("naive", ["thread-per-query", "two-pass"], head + fill(_THREAD, **kw)),
        impl("warp_online", ["warp-per-query", "online-softmax", "warp-shuffle", "coalesced"],
             head + fill(_WARP, **kw)),
        impl("block_kv_tiles", ["thread-per-query", "online-softmax", "shared-memory-tiling"],
             head + fill(_TILED, **kw)),
    ]
    args = [scalar("heads", "int32", "B"), scalar("n", "int32", "S"), scalar("d", "int32", "D"),
            scalar("scale", dtype, round(float(rng.uniform(0.1, 0.3)), 4))]
    shape = ["B", "S", "D"] if layout == "bsd" else ["S", "B", "D"]
    args += [buffer(name, "in", dtype, shape) for name in ("q", "key", "val")]
    if padded:
        args.append(buffer("klen", "in", "int32", ["B"], {"dist": "randint", "low": 1, "high": "S + 1"}))
    args.append(buffer("o", "out", dtype, shape))
    if with_lse:
        args.append(buffer("lse", "out", dtype, ["B", "S"]))
    return task(
        name=f"attention_{mask}_{score}", family="attention", entry="attention", args=args,
        description=f"Scaled dot-product attention ({dtype}) for heads heads of n positions with head size d <= 64; "
        f"q, key, val and o hold element (b, p, k) at [{kw['at']}]. For head b and query s: z_t = scale * sum_k "
        f"q(b, s, k) * key(b, t, k), score_t = {kw['score']}, over the keys t < n with {kw['allowed']} "
        f"(always at least one); o(b, s, :) = sum_t softmax(score)_t * val(b, t, :)"
        + ("; lse[b][s] = log(sum_t exp(score_t))." if with_lse else "."),
        configs=[{"B": 2, "S": 7, "D": 16}, {"B": 3, "S": 64, "D": 32}, {"B": 2, "S": 129, "D": 64}],
        hidden=[{"B": 2, "S": 33, "D": 24}], perf=[{"B": 64, "S": 2048, "D": 64}, {"B": 256, "S": 512, "D": 64}],
        reference=helpers.replace("$Q", "static") + fill(_REF, **kw), implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
void attention($sig) {
  $T acc[64];
  for (int b = 0; b < heads; ++b)
    for (int s = 0; s < n; ++s) {
      $T m = -INFINITY, l = 0;
      for (int t = 0; t < n; ++t) {
        if (!allowed($klen, b, s, t)) continue;
        $T z = 0;
        for (int k = 0; k < d; ++k) z += q[at(heads, n, d, b, s, k)] * key[at(heads, n, d, b, t, k)];
        $T sc = score(scale * z, s, t);
        if (sc > m) m = sc;
      }
      for (int k = 0; k < d; ++k) acc[k] = 0;
      for (int t = 0; t < n; ++t) {
        if (!allowed($klen, b, s, t)) continue;
        $T z = 0;
        for (int k = 0; k < d; ++k) z += q[at(heads, n, d, b, s, k)] * key[at(heads, n, d, b, t, k)];
        $T p = $exp(score(scale * z, s, t) - m);
        l += p;
        for (int k = 0; k < d; ++k) acc[k] += p * val[at(heads, n, d, b, t, k)];
      }
      for (int k = 0; k < d; ++k) o[at(heads, n, d, b, s, k)] = acc[k] / l;
      $store_lse
    }
}
"""
_THREAD = """
// One thread per query: a pass for the maximum score, a pass for the exponentials and the weighted values.
__global__ void attention_kernel($sig) {
  int s = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
  if (s >= n) return;
  $T m = -INFINITY, l = 0, acc[MAXD];
  for (int t = 0; t < n; ++t) {
    if (!allowed($klen, b, s, t)) continue;
    $T z = 0;
    for (int k = 0; k < d; ++k) z += q[at(heads, n, d, b, s, k)] * key[at(heads, n, d, b, t, k)];
    m = fmax(m, score(scale * z, s, t));
  }
  for (int k = 0; k < d; ++k) acc[k] = 0;
  for (int t = 0; t < n; ++t) {
    if (!allowed($klen, b, s, t)) continue;
    $T z = 0;
    for (int k = 0; k < d; ++k) z += q[at(heads, n, d, b, s, k)] * key[at(heads, n, d, b, t, k)];
    $T p = $exp(score(scale * z, s, t) - m);
    l += p;
    for (int k = 0; k < d; ++k) acc[k] += p * val[at(heads, n, d, b, t, k)];
  }
  for (int k = 0; k < d; ++k) o[at(heads, n, d, b, s, k)] = acc[k] / l;
  $store_lse
}
extern "C" void attention($sig) {
  attention_kernel<<<dim3((n + 63) / 64, heads), 64>>>($call);
}
"""
_WARP = """
// One warp per query: lane j owns dimensions j and j + 32; each key's dot product is a butterfly sum, and the
// softmax runs online (the running max m rescales the sum l and the accumulators).
__global__ void attention_kernel($sig) {
  int s = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32, b = blockIdx.y;
  if (s >= n) return;  // uniform per warp
  $T q0 = lane < d ? q[at(heads, n, d, b, s, lane)] : ($T)0;
  $T q1 = lane + 32 < d ? q[at(heads, n, d, b, s, lane + 32)] : ($T)0;
  $T m = -INFINITY, l = 0, a0 = 0, a1 = 0;
  for (int t = 0; t < n; ++t) {
    if (!allowed($klen, b, s, t)) continue;  // uniform per warp
    $T z = (lane < d ? q0 * key[at(heads, n, d, b, t, lane)] : ($T)0) +
           (lane + 32 < d ? q1 * key[at(heads, n, d, b, t, lane + 32)] : ($T)0);
    for (int off = 16; off > 0; off /= 2) z += __shfl_xor_sync(0xffffffffu, z, off);
    $T sc = score(scale * z, s, t), mn = fmax(m, sc), corr = $exp(m - mn), p = $exp(sc - mn);
    l = l * corr + p;
    a0 = a0 * corr + (lane < d ? p * val[at(heads, n, d, b, t, lane)] : ($T)0);
    a1 = a1 * corr + (lane + 32 < d ? p * val[at(heads, n, d, b, t, lane + 32)] : ($T)0);
    m = mn;
  }
  if (lane < d) o[at(heads, n, d, b, s, lane)] = a0 / l;
  if (lane + 32 < d) o[at(heads, n, d, b, s, lane + 32)] = a1 / l;
  if (lane == 0) { $store_lse }
}
extern "C" void attention($sig) {
  attention_kernel<<<dim3((n + 7) / 8, heads), 256>>>($call);
}
"""
_TILED = """
// A block of QB queries of one head: tiles of KB keys and values go through shared memory and every query of
// the block uses them, with an online softmax across tiles.
constexpr int QB = 64, KB = 32;
__global__ void attention_kernel($sig) {
  __shared__ $T ks[KB][MAXD], vs[KB][MAXD];
  int s = blockIdx.x * QB + threadIdx.x, b = blockIdx.y;
  $T qr[MAXD], acc[MAXD], m = -INFINITY, l = 0;
  for (int k = 0; k < d; ++k) { qr[k] = s < n ? q[at(heads, n, d, b, s, k)] : ($T)0; acc[k] = 0; }
  for (int t0 = 0; t0 < n; t0 += KB) {
    for (int e = threadIdx.x; e < KB * d; e += QB) {
      int tt = e / d, k = e % d, t = t0 + tt;
      ks[tt][k] = t < n ? key[at(heads, n, d, b, t, k)] : ($T)0;
      vs[tt][k] = t < n ? val[at(heads, n, d, b, t, k)] : ($T)0;
    }
    __syncthreads();
    for (int tt = 0; tt < KB && t0 + tt < n && s < n; ++tt) {
      int t = t0 + tt;
      if (!allowed($klen, b, s, t)) continue;
      $T z = 0;
      for (int k = 0; k < d; ++k) z += qr[k] * ks[tt][k];
      $T sc = score(scale * z, s, t), mn = fmax(m, sc), corr = $exp(m - mn), p = $exp(sc - mn);
      l = l * corr + p;
      for (int k = 0; k < d; ++k) acc[k] = acc[k] * corr + p * vs[tt][k];
      m = mn;
    }
    __syncthreads();
  }
  if (s >= n) return;
  for (int k = 0; k < d; ++k) o[at(heads, n, d, b, s, k)] = acc[k] / l;
  $store_lse
}
extern "C" void attention($sig) {
  attention_kernel<<<dim3((n + QB - 1) / QB, heads), QB>>>($call);
}
"""
