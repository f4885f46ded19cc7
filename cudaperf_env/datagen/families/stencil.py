"""Stencils in 1-D, 2-D and 3-D: random tap sets of radius 1-4, zero / clamped / periodic boundaries."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.boundary import read_body
from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, impl, lit, pick, scalar, task

BOUNDARIES = ("zero", "clamp", "periodic")
_TOL = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-12}}


def _taps(rng: np.random.Generator, radius: int, ndim: int, shape: str) -> list[tuple[tuple[int, ...], float]]:
    """Offsets and weights: a cross or a box of ``radius``, random subset of the box, center always in."""
    grid = np.stack(np.meshgrid(*[np.arange(-radius, radius + 1)] * ndim, indexing="ij"), -1).reshape(-1, ndim)
    if shape == "cross":
        offsets = [tuple(int(v) for v in o) for o in grid if np.count_nonzero(o) <= 1]
    else:
        offsets = [tuple(int(v) for v in o) for o in grid if not any(o) or rng.random() < 0.6]
    return [(o, float(rng.uniform(-1, 1))) for o in sorted(set(offsets))]


def _expr(taps: list[tuple[tuple[int, ...], float]], dtype: str, term: str) -> str:
    return " + ".join(f"{lit(w, dtype)} * {term.format(*o)}" for o, w in taps)


def stencil1d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = sum_k w_k * x[i + o_k] over a random tap set of radius 1-4."""
    dtype, boundary, radius = pick(rng, ("float32", "float64")), pick(rng, BOUNDARIES), int(rng.integers(1, 5))
    taps = _taps(rng, radius, 1, "box")
    t = CTYPE[dtype]
    at = f"{t} at(const {t}* x, int n, int i) {{ {read_body(boundary, t, ['n'], ['i'])} }}"
    kw = {"T": t, "R": radius, "at": at, "ref": _expr(taps, dtype, "at(x, n, i + {0})"),
          "smem": _expr(taps, dtype, "s[j + R + {0}]"), "reg": _expr(taps, dtype, "w[k + R + {0}]")}  # fmt: skip
    reference = fill("static $at\nvoid stencil(int n, const $T* x, $T* y) {\n"
                     "  for (int i = 0; i < n; ++i) y[i] = $ref;\n}", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element"], fill(_S1_NAIVE, **kw)),
        impl("smem_tile", ["shared-memory-tiling", "coalesced"], fill(_S1_SMEM, **kw)),
        impl("register_window", ["multi-element-per-thread", "register-blocking", "loop-unrolling"],
             fill(_S1_REG, **kw)),
    ]
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N"]), buffer("y", "out", dtype, ["N"])]
    return task(
        name="stencil1d", family="stencil1d", entry="stencil", args=args,
        description=f"1-D stencil of radius {radius} with {boundary} boundary: y[i] = {kw['ref']}, where at(x, n, i) "
        f"reads x[i] with the {boundary} rule outside [0, n).",
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65536}], hidden=[{"N": 30011}], perf=[{"N": 1 << 25}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_S1_NAIVE = """
__device__ __forceinline__ $at
__global__ void stencil_kernel(int n, const $T* x, $T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = $ref;
}
extern "C" void stencil(int n, const $T* x, $T* y) {
  stencil_kernel<<<(n + 255) / 256, 256>>>(n, x, y);
}
"""
_S1_SMEM = """
// The block's 256 outputs plus a halo of R on each side are staged in shared memory.
constexpr int THREADS = 256, R = $R;
__device__ __forceinline__ $at
__global__ void stencil_tile(int n, const $T* x, $T* y) {
  __shared__ $T s[THREADS + 2 * R];
  int base = blockIdx.x * THREADS;
  for (int j = threadIdx.x; j < THREADS + 2 * R; j += THREADS) s[j] = at(x, n, base + j - R);
  __syncthreads();
  int j = threadIdx.x, i = base + j;
  if (i < n) y[i] = $smem;
}
extern "C" void stencil(int n, const $T* x, $T* y) {
  stencil_tile<<<(n + THREADS - 1) / THREADS, THREADS>>>(n, x, y);
}
"""
_S1_REG = """
// Each thread computes 4 consecutive outputs from a register window of 4 + 2R inputs.
constexpr int ITEMS = 4, R = $R;
__device__ __forceinline__ $at
__global__ void stencil_window(int n, const $T* x, $T* y) {
  int first = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
  if (first >= n) return;
  $T w[ITEMS + 2 * R];
  #pragma unroll
  for (int j = 0; j < ITEMS + 2 * R; ++j) w[j] = at(x, n, first + j - R);
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k)
    if (first + k < n) y[first + k] = $reg;
}
extern "C" void stencil(int n, const $T* x, $T* y) {
  int threads = (n + ITEMS - 1) / ITEMS;
  stencil_window<<<(threads + 127) / 128, 128>>>(n, x, y);
}
"""


def stencil2d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[r][c] = sum_k w_k * x[r + dr_k][c + dc_k] over a cross or a random box subset (radius 1-2)."""
    dtype, boundary = pick(rng, ("float32", "float64")), pick(rng, BOUNDARIES)
    radius, shape = int(rng.integers(1, 3)), pick(rng, ("cross", "box"))
    taps = _taps(rng, radius, 2, shape)
    t = CTYPE[dtype]
    at = f"{t} at(const {t}* x, int h, int w, int r, int c) {{ {read_body(boundary, t, ['h', 'w'], ['r', 'c'])} }}"
    kw = {"T": t, "R": radius, "at": at, "ref": _expr(taps, dtype, "at(x, h, w, r + {0}, c + {1})"),
          "smem": _expr(taps, dtype, "s[ty + R + {0}][tx + R + {1}]")}  # fmt: skip
    reference = fill("static $at\nvoid stencil(int h, int w, const $T* x, $T* y) {\n"
                     "  for (int r = 0; r < h; ++r)\n    for (int c = 0; c < w; ++c) y[(long)r * w + c] = $ref;\n}",
                     **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], fill(_S2_NAIVE, **kw)),
        impl("smem_tile", ["shared-memory-tiling", "halo"], fill(_S2_SMEM, **kw)),
        impl("column_strip", ["multi-element-per-thread", "coalesced"], fill(_S2_STRIP, **kw)),
    ]
    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), buffer("x", "in", dtype, ["H", "W"]),
            buffer("y", "out", dtype, ["H", "W"])]  # fmt: skip
    return task(
        name="stencil2d", family="stencil2d", entry="stencil", args=args,
        description=f"2-D {shape} stencil of radius {radius} on an h x w row-major grid, {boundary} boundary: "
        f"y[r][c] = {kw['ref']}, where at() reads x with the {boundary} rule outside the grid.",
        configs=[{"H": 64, "W": 64}, {"H": 127, "W": 93}, {"H": 256, "W": 300}], hidden=[{"H": 101, "W": 77}],
        perf=[{"H": 8192, "W": 8192}], reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_S2_NAIVE = """
__device__ __forceinline__ $at
__global__ void stencil_kernel(int h, int w, const $T* x, $T* y) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < h && c < w) y[(long)r * w + c] = $ref;
}
extern "C" void stencil(int h, int w, const $T* x, $T* y) {
  dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
  stencil_kernel<<<grid, block>>>(h, w, x, y);
}
"""
_S2_SMEM = """
// A 16 x 16 output tile plus a halo of R staged in shared memory.
constexpr int B = 16, R = $R;
__device__ __forceinline__ $at
__global__ void stencil_tile(int h, int w, const $T* x, $T* y) {
  __shared__ $T s[B + 2 * R][B + 2 * R];
  int tx = threadIdx.x, ty = threadIdx.y, c0 = blockIdx.x * B, r0 = blockIdx.y * B;
  for (int j = ty; j < B + 2 * R; j += B)
    for (int i = tx; i < B + 2 * R; i += B) s[j][i] = at(x, h, w, r0 + j - R, c0 + i - R);
  __syncthreads();
  int r = r0 + ty, c = c0 + tx;
  if (r < h && c < w) y[(long)r * w + c] = $smem;
}
extern "C" void stencil(int h, int w, const $T* x, $T* y) {
  dim3 block(B, B), grid((w + B - 1) / B, (h + B - 1) / B);
  stencil_tile<<<grid, block>>>(h, w, x, y);
}
"""
_S2_STRIP = """
// 32-wide rows of threads (coalesced), each thread computing 4 rows of one column.
constexpr int ROWS = 4;
__device__ __forceinline__ $at
__global__ void stencil_strip(int h, int w, const $T* x, $T* y) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r0 = (blockIdx.y * blockDim.y + threadIdx.y) * ROWS;
  if (c >= w) return;
  #pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    int r = r0 + k;
    if (r < h) y[(long)r * w + c] = $ref;
  }
}
extern "C" void stencil(int h, int w, const $T* x, $T* y) {
  dim3 block(32, 4), grid((w + 31) / 32, (h + 4 * ROWS - 1) / (4 * ROWS));
  stencil_strip<<<grid, block>>>(h, w, x, y);
}
"""


def stencil3d(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[z][r][c] = sum_k w_k * x[z + dz_k][r + dr_k][c + dc_k] over a cross (radius 1-2) or box subset."""
    dtype, boundary = pick(rng, ("float32", "float64")), pick(rng, BOUNDARIES)
    shape = pick(rng, ("cross", "cross", "box"))
    radius = int(rng.integers(1, 3)) if shape == "cross" else 1
    taps = _taps(rng, radius, 3, shape)
    t = CTYPE[dtype]
    body = read_body(boundary, t, ["d", "h", "w"], ["z", "r", "c"])
    at = f"{t} at(const {t}* x, int d, int h, int w, int z, int r, int c) {{ {body} }}"
    kw = {"T": t, "at": at, "ref": _expr(taps, dtype, "at(x, d, h, w, z + {0}, r + {1}, c + {2})")}
    reference = fill("static $at\nvoid stencil(int d, int h, int w, const $T* x, $T* y) {\n"
                     "  for (int z = 0; z < d; ++z)\n    for (int r = 0; r < h; ++r)\n"
                     "      for (int c = 0; c < w; ++c) y[((long)z * h + r) * w + c] = $ref;\n}", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "3d-grid"], fill(_S3_NAIVE, **kw)),
        impl("z_march", ["multi-element-per-thread", "coalesced", "2d-grid"], fill(_S3_MARCH, **kw)),
        impl("grid_stride", ["grid-stride", "flat-index"], fill(_S3_FLAT, **kw)),
    ]
    args = [scalar("d", "int32", "D"), scalar("h", "int32", "H"), scalar("w", "int32", "W"),
            buffer("x", "in", dtype, ["D", "H", "W"]), buffer("y", "out", dtype, ["D", "H", "W"])]  # fmt: skip
    return task(
        name="stencil3d", family="stencil3d", entry="stencil", args=args,
        description=f"3-D {shape} stencil of radius {radius} on a d x h x w row-major volume, {boundary} boundary: "
        f"y[z][r][c] = {kw['ref']}, where at() reads x with the {boundary} rule outside the volume.",
        configs=[{"D": 16, "H": 16, "W": 16}, {"D": 33, "H": 17, "W": 29}, {"D": 40, "H": 64, "W": 64}],
        hidden=[{"D": 21, "H": 23, "W": 19}], perf=[{"D": 512, "H": 512, "W": 512}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )


_S3_NAIVE = """
__device__ __forceinline__ $at
__global__ void stencil_kernel(int d, int h, int w, const $T* x, $T* y) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (z < d && r < h && c < w) y[((long)z * h + r) * w + c] = $ref;
}
extern "C" void stencil(int d, int h, int w, const $T* x, $T* y) {
  dim3 block(32, 4, 2), grid((w + 31) / 32, (h + 3) / 4, (d + 1) / 2);
  stencil_kernel<<<grid, block>>>(d, h, w, x, y);
}
"""
_S3_MARCH = """
// A 2-D grid over (r, c); each thread marches along z.
__device__ __forceinline__ $at
__global__ void stencil_march(int d, int h, int w, const $T* x, $T* y) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= h || c >= w) return;
  for (int z = 0; z < d; ++z) y[((long)z * h + r) * w + c] = $ref;
}
extern "C" void stencil(int d, int h, int w, const $T* x, $T* y) {
  dim3 block(32, 8), grid((w + 31) / 32, (h + 7) / 8);
  stencil_march<<<grid, block>>>(d, h, w, x, y);
}
"""
_S3_FLAT = """
__device__ __forceinline__ $at
__global__ void stencil_flat(int d, int h, int w, const $T* x, $T* y) {
  long total = (long)d * h * w;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x) {
    int c = (int)(i % w), r = (int)((i / w) % h), z = (int)(i / ((long)w * h));
    y[i] = $ref;
  }
}
extern "C" void stencil(int d, int h, int w, const $T* x, $T* y) {
  long total = (long)d * h * w;
  int blocks = (int)((total + 255) / 256 < 2048 ? (total + 255) / 256 : 2048);
  stencil_flat<<<blocks, 256>>>(d, h, w, x, y);
}
"""
