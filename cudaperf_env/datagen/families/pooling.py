"""Pooling windows over channels: 1-D and 2-D max / min / sums / means / RMS / log-sum-exp / xor,
strides and paddings, channels-first or channels-last layouts."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task

# op -> (accumulator start, fold of acc and v, result of acc and cnt (valid elements) / K (window size)).
FLOAT_OPS = {
    "max": ("-INFINITY", "v > acc ? v : acc", "acc"),
    "min": ("INFINITY", "v < acc ? v : acc", "acc"),
    "avg": ("0", "acc + v", "acc / KSIZE"),
    "avg_valid": ("0", "acc + v", "acc / cnt"),
    "rms": ("0", "acc + v * v", "sqrt(acc / cnt)"),
    "max_abs": ("0", "fabs(v) > acc ? fabs(v) : acc", "acc"),
    "sum": ("0", "acc + v", "acc"),
    "lse": ("0", "acc + exp(v)", "log(acc)"),
    "mean_abs": ("0", "acc + fabs(v)", "acc / cnt"),
    "max_sq": ("0", "v * v > acc ? v * v : acc", "acc"),
}
INT_OPS = {
    "max": ("(-2147483647 - 1)", "v > acc ? v : acc", "acc"),
    "min": ("2147483647", "v < acc ? v : acc", "acc"),
    "sum": ("0", "acc + v", "acc"),
    "max_abs": ("0", "abs(v) > acc ? abs(v) : acc", "acc"),
    "min_abs": ("2147483647", "abs(v) < acc ? abs(v) : acc", "acc"),
    "xor": ("0", "acc ^ v", "acc"),
}
_SUMS = ("avg", "avg_valid", "rms", "sum", "lse", "mean_abs")  # float32 reference accumulates these in double
_DESC = {"max": "maximum", "min": "minimum", "avg": "sum / window size (padding counts as 0)",
         "avg_valid": "mean over the in-range elements", "rms": "sqrt(mean of squares over the in-range elements)",
         "max_abs": "maximum of |v|", "sum": "sum", "lse": "log of the sum of exp(v)",
         "mean_abs": "mean of |v| over the in-range elements", "max_sq": "maximum of v * v",
         "min_abs": "minimum of |v|", "xor": "bitwise xor"}  # fmt: skip
_OPS = [("float32", op) for op in sorted(FLOAT_OPS)] + [("float64", op) for op in sorted(FLOAT_OPS)] + \
    [("int32", op) for op in sorted(INT_OPS)]  # fmt: skip
STRUCTURES = [(d, op, pad, last) for (d, op), pad, last in grid(_OPS, (False, True), (False, True))]
_INIT = {"int32": {"dist": "randint", "low": -1000, "high": 1000}, "float32": None, "float64": None}
_F32 = (("fabs(", "fabsf("), ("sqrt(", "sqrtf("), ("exp(", "expf("), ("log(", "logf("))


def _head(dtype: str, op: str, ksize: int) -> tuple[str, str, str, str]:
    """The reference helpers, the device helpers, the accumulator start and the reference accumulator type."""
    start, fold, fin = (INT_OPS if dtype == "int32" else FLOAT_OPS)[op]
    acc = "double" if dtype == "float32" and op in _SUMS else CTYPE[dtype]
    fin = fin.replace("KSIZE", str(ksize))
    dev_fold, dev_fin = fold, fin.replace("/ cnt", f"/ ({CTYPE[dtype]})cnt").replace(f"/ {ksize}", f"/ {ksize}.0")
    if dtype == "float32":
        for a, b in _F32:
            dev_fold, dev_fin = dev_fold.replace(a, b), dev_fin.replace(a, b)
        dev_fin = dev_fin.replace(f"/ {ksize}.0", f"/ {ksize}.0f")
    ref = fill("#include <math.h>\n#include <stdlib.h>\nstatic $A fold($A acc, $A v) { return $fold; }\n"
               "static $T result($A acc, int cnt) { return ($T)($fin); }\n", A=acc, T=CTYPE[dtype], fold=fold,
               fin=fin.replace("/ cnt", "/ (double)cnt").replace(f"/ {ksize}", f"/ {ksize}.0"))  # fmt: skip
    dev = fill("#include <math.h>\ntypedef $T T;\n#define START (($T)$start)\n"
               "__device__ __forceinline__ T fold(T acc, T v) { return $fold; }\n"
               "__device__ __forceinline__ T result(T acc, int cnt) { return $fin; }\n", T=CTYPE[dtype],
               start=start, fold=dev_fold, fin=dev_fin)  # fmt: skip
    return ref, dev, start, acc


def pool1d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[ch][o] = op over k < K of x[ch][o * S - P + k] (out-of-range taps skipped), per channel."""
    dtype, op, padded, last = nth(variant, STRUCTURES)
    k, s = int(rng.integers(2, 7)), int(pick(rng, (1, 2, 3)))
    p = max(1, k // 2) if padded else 0
    ref_head, dev, start, acc = _head(dtype, op, k)
    t = CTYPE[dtype]
    xat, yat = ("(long)i * c + ch", "(long)o * c + ch") if last else ("(long)ch * l + i", "(long)ch * lo + o")
    kw = {"T": t, "A": acc, "start": start, "K": k, "S": s, "P": p, "xat": xat, "yat": yat,
          "guard": "if (i < 0 || i >= l) continue;\n      " if p else ""}  # fmt: skip
    reference = ref_head + fill(_P1_REF, **kw)
    head = dev + fill(_P1_HEAD, **kw)
    impls = [
        impl("naive", ["thread-per-output", "2d-grid"], head + _P1_NAIVE),
        impl("smem_tile", ["shared-memory-tiling", "coalesced" if not last else "strided"], head + _P1_SMEM),
        impl("grid_stride", ["grid-stride", "flat-index"], head + _P1_GRID),
    ]
    lo = f"(L + {2 * p} - {k}) // {s} + 1"
    args = [scalar("c", "int32", "C"), scalar("l", "int32", "L"), scalar("lo", "int32", lo),
            buffer("x", "in", dtype, ["L", "C"] if last else ["C", "L"], _INIT[dtype]),
            buffer("y", "out", dtype, [lo, "C"] if last else ["C", lo])]  # fmt: skip
    layout = "channels-last (x is l x c, y is lo x c)" if last else "channels-first (x is c x l, y is c x lo)"
    return task(
        name="pool1d", family="pool1d", entry="pool", args=args,
        description=f"1-D {op} pooling of c channels of length l ({dtype}, {layout}, row-major), window {k}, stride "
        f"{s}, padding {p}: y at (ch, o) = {_DESC[op]} of x at (ch, o*{s} - {p} + k) over k < {k} with the "
        f"position in [0, l); lo = (l + {2 * p} - {k}) / {s} + 1 outputs per channel. x at (ch, i) is "
        f"x[{xat}], y at (ch, o) is y[{yat}].",
        configs=[{"C": 4, "L": 1000}, {"C": 3, "L": 4097}, {"C": 16, "L": 16385}], hidden=[{"C": 5, "L": 3001}],
        perf=[{"C": 256, "L": 1 << 17}], reference=reference, implementations=impls,
    )  # fmt: skip


_P1_REF = """void pool(int c, int l, int lo, const $T* x, $T* y) {
  for (int ch = 0; ch < c; ++ch)
    for (int o = 0; o < lo; ++o) {
      $A acc = $start;
      int cnt = 0;
      for (int k = 0; k < $K; ++k) {
        int i = o * $S - $P + k;
        ${guard}acc = fold(acc, x[$xat]);
        ++cnt;
      }
      y[$yat] = result(acc, cnt);
    }
}"""
_P1_HEAD = """constexpr int K = $K, S = $S, P = $P;
__device__ __forceinline__ long x_at(int c, int l, int ch, int i) { return $xat; }
__device__ __forceinline__ long y_at(int c, int lo, int ch, int o) { return $yat; }
__device__ __forceinline__ T window(const T* x, int c, int l, int ch, int o) {
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    int i = o * S - P + k;
    if (i < 0 || i >= l) continue;
    acc = fold(acc, x[x_at(c, l, ch, i)]);
    ++cnt;
  }
  return result(acc, cnt);
}
"""
_P1_NAIVE = """
__global__ void pool_kernel(int c, int l, int lo, const T* x, T* y) {
  int o = blockIdx.x * blockDim.x + threadIdx.x, ch = blockIdx.y;
  if (o < lo) y[y_at(c, lo, ch, o)] = window(x, c, l, ch, o);
}
extern "C" void pool(int c, int l, int lo, const T* x, T* y) {
  pool_kernel<<<dim3((lo + 255) / 256, c), 256>>>(c, l, lo, x, y);
}
"""
_P1_SMEM = """
// 256 outputs per block; their input span ((256 - 1) * S + K values) is staged in shared memory first.
constexpr int THREADS = 256, SPAN = (THREADS - 1) * S + K;
__global__ void pool_tile(int c, int l, int lo, const T* x, T* y) {
  __shared__ T s[SPAN];
  int ch = blockIdx.y, o0 = blockIdx.x * THREADS, first = o0 * S - P;
  for (int j = threadIdx.x; j < SPAN; j += THREADS) {
    int i = first + j;
    if (i >= 0 && i < l) s[j] = x[x_at(c, l, ch, i)];
  }
  __syncthreads();
  int o = o0 + threadIdx.x;
  if (o >= lo) return;
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    int j = threadIdx.x * S + k, i = first + j;
    if (i < 0 || i >= l) continue;
    acc = fold(acc, s[j]);
    ++cnt;
  }
  y[y_at(c, lo, ch, o)] = result(acc, cnt);
}
extern "C" void pool(int c, int l, int lo, const T* x, T* y) {
  pool_tile<<<dim3((lo + THREADS - 1) / THREADS, c), THREADS>>>(c, l, lo, x, y);
}
"""
_P1_GRID = """
__global__ void pool_flat(int c, int l, int lo, const T* x, T* y) {
  long total = (long)c * lo;
  for (long q = blockIdx.x * (long)blockDim.x + threadIdx.x; q < total; q += (long)gridDim.x * blockDim.x) {
    int ch = (int)(q / lo), o = (int)(q % lo);
    y[y_at(c, lo, ch, o)] = window(x, c, l, ch, o);
  }
}
extern "C" void pool(int c, int l, int lo, const T* x, T* y) {
  long total = (long)c * lo;
  pool_flat<<<(int)((total + 255) / 256 < 2048 ? (total + 255) / 256 : 2048), 256>>>(c, l, lo, x, y);
}
"""


def pool2d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[ch][r][q] = op over a K x K window at (r * S - P, q * S - P) of channel ch (out-of-range taps skipped)."""
    dtype, op, padded, last = nth(variant, STRUCTURES)
    k, s = int(pick(rng, (2, 3, 4))), int(pick(rng, (1, 2)))
    p = max(1, k // 2) if padded else 0
    ref_head, dev, start, acc = _head(dtype, op, k * k)
    t = CTYPE[dtype]
    xat, yat = (("((long)i * w + j) * c + ch", "((long)r * wo + q) * c + ch") if last else
                ("((long)ch * h + i) * w + j", "((long)ch * ho + r) * wo + q"))  # fmt: skip
    kw = {"T": t, "A": acc, "start": start, "K": k, "S": s, "P": p, "xat": xat, "yat": yat,
          "guard": "if (i < 0 || i >= h || j < 0 || j >= w) continue;\n          " if p else ""}  # fmt: skip
    reference = ref_head + fill(_P2_REF, **kw)
    head = dev + fill(_P2_HEAD, **kw)
    impls = [
        impl("naive", ["thread-per-output", "3d-grid"], head + _P2_NAIVE),
        impl("smem_tile", ["shared-memory-tiling", "halo", "2d-grid"], head + _P2_SMEM),
        impl("grid_stride", ["grid-stride", "flat-index"], head + _P2_GRID),
    ]
    ho, wo = f"(H + {2 * p} - {k}) // {s} + 1", f"(W + {2 * p} - {k}) // {s} + 1"
    args = [scalar("c", "int32", "C"), scalar("h", "int32", "H"), scalar("w", "int32", "W"),
            scalar("ho", "int32", ho), scalar("wo", "int32", wo),
            buffer("x", "in", dtype, ["H", "W", "C"] if last else ["C", "H", "W"], _INIT[dtype]),
            buffer("y", "out", dtype, [ho, wo, "C"] if last else ["C", ho, wo])]  # fmt: skip
    layout = "channels-last (h x w x c)" if last else "channels-first (c x h x w)"
    return task(
        name="pool2d", family="pool2d", entry="pool", args=args,
        description=f"2-D {op} pooling of c-channel h x w {dtype} images ({layout}, row-major), window {k}x{k}, "
        f"stride {s}, padding {p}: y at (ch, r, q) = {_DESC[op]} of x at (ch, r*{s} - {p} + a, q*{s} - {p} + b) "
        f"over a, b < {k} with the position inside the image; ho = (h + {2 * p} - {k}) / {s} + 1, wo likewise. "
        f"x at (ch, i, j) is x[{xat}], y at (ch, r, q) is y[{yat}].",
        configs=[{"C": 2, "H": 64, "W": 64}, {"C": 3, "H": 127, "W": 93}, {"C": 8, "H": 128, "W": 161}],
        hidden=[{"C": 3, "H": 101, "W": 77}], perf=[{"C": 64, "H": 1024, "W": 1024}], reference=reference,
        implementations=impls,
    )


_P2_REF = """void pool(int c, int h, int w, int ho, int wo, const $T* x, $T* y) {
  for (int ch = 0; ch < c; ++ch)
    for (int r = 0; r < ho; ++r)
      for (int q = 0; q < wo; ++q) {
        $A acc = $start;
        int cnt = 0;
        for (int a = 0; a < $K; ++a)
          for (int b = 0; b < $K; ++b) {
          int i = r * $S - $P + a, j = q * $S - $P + b;
          ${guard}acc = fold(acc, x[$xat]);
          ++cnt;
        }
        y[$yat] = result(acc, cnt);
      }
}"""
_P2_HEAD = """constexpr int K = $K, S = $S, P = $P;
__device__ __forceinline__ long x_at(int c, int h, int w, int ch, int i, int j) { return $xat; }
__device__ __forceinline__ long y_at(int c, int ho, int wo, int ch, int r, int q) { return $yat; }
__device__ __forceinline__ T window(const T* x, int c, int h, int w, int ch, int r, int q) {
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int a = 0; a < K; ++a)
    #pragma unroll
    for (int b = 0; b < K; ++b) {
      int i = r * S - P + a, j = q * S - P + b;
      if (i < 0 || i >= h || j < 0 || j >= w) continue;
      acc = fold(acc, x[x_at(c, h, w, ch, i, j)]);
      ++cnt;
    }
  return result(acc, cnt);
}
"""
_P2_NAIVE = """
__global__ void pool_kernel(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y, ch = blockIdx.z;
  if (r < ho && q < wo) y[y_at(c, ho, wo, ch, r, q)] = window(x, c, h, w, ch, r, q);
}
extern "C" void pool(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  dim3 block(16, 16), grid((wo + 15) / 16, (ho + 15) / 16, c);
  pool_kernel<<<grid, block>>>(c, h, w, ho, wo, x, y);
}
"""
_P2_SMEM = """
// A 16 x 16 output tile; its input patch ((16 - 1) * S + K square) is staged in shared memory.
constexpr int B = 16, SPAN = (B - 1) * S + K;
__global__ void pool_tile(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  __shared__ T s[SPAN][SPAN + 1];
  int ch = blockIdx.z, r0 = blockIdx.y * B * S - P, q0 = blockIdx.x * B * S - P;
  for (int a = threadIdx.y; a < SPAN; a += B)
    for (int b = threadIdx.x; b < SPAN; b += B) {
      int i = r0 + a, j = q0 + b;
      if (i >= 0 && i < h && j >= 0 && j < w) s[a][b] = x[x_at(c, h, w, ch, i, j)];
    }
  __syncthreads();
  int r = blockIdx.y * B + threadIdx.y, q = blockIdx.x * B + threadIdx.x;
  if (r >= ho || q >= wo) return;
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int a = 0; a < K; ++a)
    #pragma unroll
    for (int b = 0; b < K; ++b) {
      int la = threadIdx.y * S + a, lb = threadIdx.x * S + b, i = r0 + la, j = q0 + lb;
      if (i < 0 || i >= h || j < 0 || j >= w) continue;
      acc = fold(acc, s[la][lb]);
      ++cnt;
    }
  y[y_at(c, ho, wo, ch, r, q)] = result(acc, cnt);
}
extern "C" void pool(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  dim3 block(B, B), grid((wo + B - 1) / B, (ho + B - 1) / B, c);
  pool_tile<<<grid, block>>>(c, h, w, ho, wo, x, y);
}
"""
_P2_GRID = """
__global__ void pool_flat(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  long total = (long)c * ho * wo;
  for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < total; o += (long)gridDim.x * blockDim.x) {
    int q = (int)(o % wo), r = (int)((o / wo) % ho), ch = (int)(o / ((long)wo * ho));
    y[y_at(c, ho, wo, ch, r, q)] = window(x, c, h, w, ch, r, q);
  }
}
extern "C" void pool(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  long total = (long)c * ho * wo;
  pool_flat<<<(int)((total + 255) / 256 < 2048 ? (total + 255) / 256 : 2048), 256>>>(c, h, w, ho, wo, x, y);
}
"""
