"""Pooling windows over channels: 1-D and 2-D max / min / average / RMS / max-abs, strides and paddings."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.dataset.families.common import CTYPE, buffer, fill, impl, pick, scalar, task

# op -> (accumulator start, fold of acc and v, result of acc and cnt (valid elements) / K (window size)).
OPS = {
    "max": ("-INFINITY", "v > acc ? v : acc", "acc"),
    "min": ("INFINITY", "v < acc ? v : acc", "acc"),
    "avg": ("0", "acc + v", "acc / KSIZE"),
    "avg_valid": ("0", "acc + v", "acc / cnt"),
    "rms": ("0", "acc + v * v", "sqrt(acc / cnt)"),
    "max_abs": ("0", "fabs(v) > acc ? fabs(v) : acc", "acc"),
}
_INT_START = {"max": "(-2147483647 - 1)", "min": "2147483647"}
_DESC = {"max": "maximum", "min": "minimum", "avg": "sum / window size (padding counts as 0)",
         "avg_valid": "mean over the in-range elements", "rms": "sqrt(mean of squares over the in-range elements)",
         "max_abs": "maximum of |v|"}  # fmt: skip


def _pick_op(rng: np.random.Generator) -> tuple[str, str]:
    dtype = pick(rng, ("float32", "float64", "int32"))
    op = pick(rng, ("max", "min") if dtype == "int32" else sorted(OPS))
    return dtype, op


def _head(dtype: str, op: str, ksize: int) -> tuple[str, str, str, str]:
    """The reference and device spellings of start, fold and result."""
    start, fold, fin = OPS[op]
    if dtype == "int32":
        start = _INT_START[op]
    acc = "double" if dtype == "float32" and op in ("avg", "avg_valid", "rms") else CTYPE[dtype]
    fin = fin.replace("KSIZE", str(ksize))
    if dtype == "float32":
        dev_fold = fold.replace("fabs(", "fabsf(")
        dev_fin = fin.replace("sqrt(", "sqrtf(").replace("/ cnt", "/ (float)cnt")
        dev_fin = dev_fin.replace(f"/ {ksize}", f"/ {ksize}.0f")
    else:
        dev_fold, dev_fin = fold, fin.replace("/ cnt", "/ (double)cnt").replace(f"/ {ksize}", f"/ {ksize}.0")
    ref = fill("#include <math.h>\nstatic $A fold($A acc, $A v) { return $fold; }\n"
               "static $T result($A acc, int cnt) { return ($T)($fin); }\n", A=acc, T=CTYPE[dtype], fold=fold,
               fin=fin.replace("/ cnt", "/ (double)cnt").replace(f"/ {ksize}", f"/ {ksize}.0"))  # fmt: skip
    dev = fill("#include <math.h>\ntypedef $T T;\n#define START (($T)$start)\n"
               "__device__ __forceinline__ T fold(T acc, T v) { return $fold; }\n"
               "__device__ __forceinline__ T result(T acc, int cnt) { return $fin; }\n", T=CTYPE[dtype],
               start=start, fold=dev_fold, fin=dev_fin)  # fmt: skip
    return ref, dev, start, acc


def pool1d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[ch][o] = op over k < K of x[ch][o * S - P + k] (out-of-range taps skipped), per channel row."""
    dtype, op = _pick_op(rng)
    k, s = int(rng.integers(2, 7)), int(pick(rng, (1, 2, 3)))
    p = int(pick(rng, (0, k // 2)))
    ref_head, dev, start, acc = _head(dtype, op, k)
    t = CTYPE[dtype]
    guard = "if (i < 0 || i >= l) continue;\n      " if p else ""
    reference = ref_head + fill("""void pool(int c, int l, int lo, const $T* x, $T* y) {
  for (int ch = 0; ch < c; ++ch)
    for (int o = 0; o < lo; ++o) {
      $A acc = $start;
      int cnt = 0;
      for (int k = 0; k < $K; ++k) {
        int i = o * $S - $P + k;
        ${guard}acc = fold(acc, x[(long)ch * l + i]);
        ++cnt;
      }
      y[(long)ch * lo + o] = result(acc, cnt);
    }
}""", T=t, A=acc, start=start, K=k, S=s, P=p, guard=guard)  # fmt: skip
    consts = f"constexpr int K = {k}, S = {s}, P = {p};\n"
    window = """__device__ __forceinline__ T window(const T* row, int l, int o) {
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int k = 0; k < K; ++k) {
    int i = o * S - P + k;
    if (i < 0 || i >= l) continue;
    acc = fold(acc, row[i]);
    ++cnt;
  }
  return result(acc, cnt);
}
"""
    head = dev + consts + window
    impls = [
        impl("naive", ["thread-per-output", "2d-grid"], head + _P1_NAIVE),
        impl("smem_tile", ["shared-memory-tiling", "coalesced"], head + _P1_SMEM),
        impl("grid_stride", ["grid-stride", "flat-index"], head + _P1_GRID),
    ]
    lo = f"(L + {2 * p} - {k}) // {s} + 1"
    args = [scalar("c", "int32", "C"), scalar("l", "int32", "L"), scalar("lo", "int32", lo),
            buffer("x", "in", dtype, ["C", "L"]), buffer("y", "out", dtype, ["C", lo])]  # fmt: skip
    return task(
        name="pool1d", family="pool1d", entry="pool", args=args,
        description=f"1-D {op} pooling of c rows of length l ({dtype}, row-major), window {k}, stride {s}, padding "
        f"{p}: y[ch][o] = {_DESC[op]} of x[ch][o*{s} - {p} + k] over k < {k} with the index in [0, l); "
        f"lo = (l + {2 * p} - {k}) / {s} + 1 outputs per row.",
        configs=[{"C": 4, "L": 1000}, {"C": 3, "L": 4097}, {"C": 16, "L": 16385}], hidden=[{"C": 5, "L": 3001}],
        perf=[{"C": 256, "L": 1 << 17}], reference=reference, implementations=impls,
    )


_P1_NAIVE = """
__global__ void pool_kernel(int c, int l, int lo, const T* x, T* y) {
  int o = blockIdx.x * blockDim.x + threadIdx.x, ch = blockIdx.y;
  if (o < lo) y[(long)ch * lo + o] = window(x + (long)ch * l, l, o);
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
  const T* row = x + (long)ch * l;
  for (int j = threadIdx.x; j < SPAN; j += THREADS) {
    int i = first + j;
    if (i >= 0 && i < l) s[j] = row[i];
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
  y[(long)ch * lo + o] = result(acc, cnt);
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
    y[q] = window(x + (long)ch * l, l, o);
  }
}
extern "C" void pool(int c, int l, int lo, const T* x, T* y) {
  long total = (long)c * lo;
  pool_flat<<<(int)((total + 255) / 256 < 2048 ? (total + 255) / 256 : 2048), 256>>>(c, l, lo, x, y);
}
"""


def pool2d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[ch][r][q] = op over a K x K window at (r * S - P, q * S - P) of x[ch] (out-of-range taps skipped)."""
    dtype, op = _pick_op(rng)
    k, s = int(pick(rng, (2, 3, 4))), int(pick(rng, (1, 2)))
    p = int(pick(rng, (0, k // 2)))
    ref_head, dev, start, acc = _head(dtype, op, k * k)
    t = CTYPE[dtype]
    guard = "if (i < 0 || i >= h || j < 0 || j >= w) continue;\n          " if p else ""
    reference = ref_head + fill("""void pool(int c, int h, int w, int ho, int wo, const $T* x, $T* y) {
  for (int ch = 0; ch < c; ++ch)
    for (int r = 0; r < ho; ++r)
      for (int q = 0; q < wo; ++q) {
        $A acc = $start;
        int cnt = 0;
        for (int a = 0; a < $K; ++a)
          for (int b = 0; b < $K; ++b) {
          int i = r * $S - $P + a, j = q * $S - $P + b;
          ${guard}acc = fold(acc, x[((long)ch * h + i) * w + j]);
          ++cnt;
        }
        y[((long)ch * ho + r) * wo + q] = result(acc, cnt);
      }
}""", T=t, A=acc, start=start, K=k, S=s, P=p, guard=guard)  # fmt: skip
    consts = f"constexpr int K = {k}, S = {s}, P = {p};\n"
    window = """__device__ __forceinline__ T window(const T* img, int h, int w, int r, int q) {
  T acc = START;
  int cnt = 0;
  #pragma unroll
  for (int a = 0; a < K; ++a)
    #pragma unroll
    for (int b = 0; b < K; ++b) {
      int i = r * S - P + a, j = q * S - P + b;
      if (i < 0 || i >= h || j < 0 || j >= w) continue;
      acc = fold(acc, img[(long)i * w + j]);
      ++cnt;
    }
  return result(acc, cnt);
}
"""
    head = dev + consts + window
    impls = [
        impl("naive", ["thread-per-output", "3d-grid"], head + _P2_NAIVE),
        impl("smem_tile", ["shared-memory-tiling", "halo", "2d-grid"], head + _P2_SMEM),
        impl("grid_stride", ["grid-stride", "flat-index"], head + _P2_GRID),
    ]
    ho, wo = f"(H + {2 * p} - {k}) // {s} + 1", f"(W + {2 * p} - {k}) // {s} + 1"
    args = [scalar("c", "int32", "C"), scalar("h", "int32", "H"), scalar("w", "int32", "W"),
            scalar("ho", "int32", ho), scalar("wo", "int32", wo), buffer("x", "in", dtype, ["C", "H", "W"]),
            buffer("y", "out", dtype, ["C", ho, wo])]  # fmt: skip
    return task(
        name="pool2d", family="pool2d", entry="pool", args=args,
        description=f"2-D {op} pooling of c row-major h x w {dtype} images, window {k}x{k}, stride {s}, padding {p}: "
        f"y[ch][r][q] = {_DESC[op]} of x[ch][r*{s} - {p} + a][q*{s} - {p} + b] over a, b < {k} with the position "
        f"inside the image; ho = (h + {2 * p} - {k}) / {s} + 1, wo likewise.",
        configs=[{"C": 2, "H": 64, "W": 64}, {"C": 3, "H": 127, "W": 93}, {"C": 8, "H": 128, "W": 161}],
        hidden=[{"C": 3, "H": 101, "W": 77}], perf=[{"C": 64, "H": 1024, "W": 1024}], reference=reference,
        implementations=impls,
    )


_P2_NAIVE = """
__global__ void pool_kernel(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y, ch = blockIdx.z;
  if (r < ho && q < wo) y[((long)ch * ho + r) * wo + q] = window(x + (long)ch * h * w, h, w, r, q);
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
  const T* img = x + (long)ch * h * w;
  for (int a = threadIdx.y; a < SPAN; a += B)
    for (int b = threadIdx.x; b < SPAN; b += B) {
      int i = r0 + a, j = q0 + b;
      if (i >= 0 && i < h && j >= 0 && j < w) s[a][b] = img[(long)i * w + j];
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
  y[((long)ch * ho + r) * wo + q] = result(acc, cnt);
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
    y[o] = window(x + (long)ch * h * w, h, w, r, q);
  }
}
extern "C" void pool(int c, int h, int w, int ho, int wo, const T* x, T* y) {
  long total = (long)c * ho * wo;
  pool_flat<<<(int)((total + 255) / 256 < 2048 ? (total + 255) / 256 : 2048), 256>>>(c, h, w, ho, wo, x, y);
}
"""
