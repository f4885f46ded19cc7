"""Image filters with clamped or reflected borders: box, gaussian, sharpen, laplacian, Sobel, dilate/erode, then a
pixel post-map; float or uint8."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_POSTS, U8_POSTS

_G3, _G5 = (1, 2, 1), (1, 4, 6, 4, 1)
# name -> (kind, radius, weights (None: all ones), divisor, post)
FILTERS: dict[str, tuple[str, int, Any, int, str]] = {
    "box3": ("linear", 1, None, 9, ""),
    "box5": ("linear", 2, None, 25, ""),
    "gauss3": ("linear", 1, np.outer(_G3, _G3), 16, ""),
    "gauss5": ("linear", 2, np.outer(_G5, _G5), 256, ""),
    "sharpen": ("linear", 1, np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]]), 1, ""),
    "laplacian": ("linear", 1, np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]]), 1, "abs"),
    "laplacian8": ("linear", 1, np.array([[1, 1, 1], [1, -8, 1], [1, 1, 1]]), 1, "abs"),
    "sobel_mag": ("sobel", 1, None, 1, "mag"),
    "sobel_l1": ("sobel", 1, None, 1, "l1"),
    "dilate": ("morph", 1, None, 1, "max"),
    "erode": ("morph", 1, None, 1, "min"),
}
_SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])


def _linear(term: Callable[[int, int], str], weights: Any, radius: int) -> str:
    parts = []
    for a in range(-radius, radius + 1):
        for b in range(-radius, radius + 1):
            wv = 1 if weights is None else int(weights[a + radius][b + radius])
            if wv == 0:
                continue
            t = term(a, b)
            parts.append(t if wv == 1 else f"-{t}" if wv == -1 else f"{wv} * {t}")
    return " + ".join(parts).replace("+ -", "- ")


def _value(name: str, dtype: str, term: Callable[[int, int], str]) -> str:
    """C statements computing ``v`` (the output pixel) from ``term(a, b)``, the pixel at offset (a, b)."""
    kind, radius, weights, div, post = FILTERS[name]
    u8 = dtype == "uint8"
    if kind == "linear":
        e = _linear(term, weights, radius)
        if u8:
            core = f"({e} + {div // 2}) / {div}" if div > 1 else (f"abs({e})" if post else e)
            return f"int v = sat({core});"
        core = f"({e}) / {div}.0f" if div > 1 else (f"fabsf({e})" if post else e)
        return f"float v = {core};"
    if kind == "sobel":
        gx, gy = _linear(term, _SOBEL_X, 1), _linear(term, _SOBEL_X.T, 1)
        if u8:
            out = "sat((int)sqrtf((float)(gx * gx + gy * gy)))" if post == "mag" else "sat(abs(gx) + abs(gy))"
            return f"int gx = {gx};\n  int gy = {gy};\n  int v = {out};"
        out = "sqrtf(gx * gx + gy * gy)" if post == "mag" else "fabsf(gx) + fabsf(gy)"
        return f"float gx = {gx};\n  float gy = {gy};\n  float v = {out};"
    fn = ("imax" if u8 else "fmaxf") if post == "max" else ("imin" if u8 else "fminf")
    acc = term(-1, -1)
    for a in range(-1, 2):
        for b in range(-1, 2):
            if (a, b) != (-1, -1):
                acc = f"{fn}({acc}, {term(a, b)})"
    return f"{'int' if u8 else 'float'} v = {acc};"


def _off(var: str, d: int) -> str:
    return var if d == 0 else f"{var} + {d}" if d > 0 else f"{var} - {-d}"


# Border rules: the coordinate read for an index outside [0, n).
BORDERS = {"clamp": "$c = $c < 0 ? 0 : ($c >= $n ? $n - 1 : $c);",
           "reflect": "$c = $c < 0 ? -$c - 1 : ($c >= $n ? 2 * $n - $c - 1 : $c);"}
STRUCTURES = grid(sorted(FILTERS), ("float32", "uint8"), (1, 3), sorted(BORDERS), range(len(U8_POSTS)))


def image_filter(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y = post(filter(x)) on an h x w gray or interleaved RGB image, borders clamped or reflected."""
    name, dtype, nc, border, post_index = nth(variant, STRUCTURES)
    radius = FILTERS[name][1]
    t = CTYPE[dtype]
    if dtype == "uint8":
        post = fill(U8_POSTS[post_index], k=int(rng.integers(20, 200)), m=int(rng.integers(128, 400)))
        post_fn = f"int post(int v) {{ return {post}; }}"
    else:
        post = fill(FLOAT_POSTS[post_index], c=lit(float(rng.uniform(1.1, 2.0)), "float32"))
        post_fn = f"float post(float v) {{ return {post}; }}"
    fold = fill(BORDERS[border], c="r", n="h") + "\n  " + fill(BORDERS[border], c="q", n="w")
    ref_value = _value(name, dtype, lambda a, b: f"at(x, h, w, {_off('r', a)}, {_off('q', b)}, ch)")
    helpers = ("""static int sat(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }
static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }
""" if dtype == "uint8" else "") + f"static {post_fn}\n"  # fmt: skip
    reference = fill("""#include <math.h>
#include <stdlib.h>
$helpers#define NC $nc
static $T at(const $T* x, int h, int w, int r, int q, int ch) {
  $fold
  return x[((long)r * w + q) * NC + ch];
}
static $T pixel(const $T* x, int h, int w, int r, int q, int ch) {
  $value
  return ($T)post(v);
}
void filter(int h, int w, const $T* x, $T* y) {
  for (int r = 0; r < h; ++r)
    for (int q = 0; q < w; ++q)
      for (int ch = 0; ch < NC; ++ch) y[((long)r * w + q) * NC + ch] = pixel(x, h, w, r, q, ch);
}""", helpers=helpers, nc=nc, T=t, value=ref_value, fold=fold)  # fmt: skip
    dev_helpers = ("" if dtype != "uint8" else """\
__device__ __forceinline__ int sat(int v) { return min(max(v, 0), 255); }
__device__ __forceinline__ int imax(int a, int b) { return max(a, b); }
__device__ __forceinline__ int imin(int a, int b) { return min(a, b); }
""") + f"__device__ __forceinline__ {post_fn}\n"  # fmt: skip
    cast = "(int)" if dtype == "uint8" else ""
    head = fill("""#include <math.h>
typedef $T T;
constexpr int NC = $nc, R = $R;
${helpers}__device__ __forceinline__ T at(const T* x, int h, int w, int r, int q, int ch) {
  $fold
  return x[((long)r * w + q) * NC + ch];
}
""", T=t, nc=nc, R=radius, helpers=dev_helpers, fold=fold)  # fmt: skip
    glob = _value(name, dtype, lambda a, b: f"{cast}at(x, h, w, {_off('r', a)}, {_off('q', b)}, ch)")
    smem = _value(name, dtype, lambda a, b: f"{cast}s[ch][{_off('ty + R', a)}][{_off('tx + R', b)}]")
    head += fill("__device__ __forceinline__ T pixel(const T* x, int h, int w, int r, int q, int ch) {\n  $v\n"
                 "  return (T)post(v);\n}\n", v=glob)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-output", "2d-grid"], head + _NAIVE),
        impl("smem_tile", ["shared-memory-tiling", "halo", "2d-grid"], head + fill(_SMEM, v=smem)),
        impl("row4", ["multi-element-per-thread", "coalesced"], head + _ROW4),
    ]
    shape: list[str | int] = ["H", "W"] if nc == 1 else ["H", "W", nc]
    init = {"dist": "randint", "low": 0, "high": 256} if dtype == "uint8" else {"dist": "uniform", "low": 0, "high": 1}
    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), buffer("x", "in", dtype, shape, init),
            buffer("y", "out", dtype, shape)]  # fmt: skip
    layout = "gray" if nc == 1 else "interleaved RGB (3 channels per pixel, filtered independently)"
    out_rule = ("computed in int and saturated to [0, 255] (averages rounded half up: (sum + d/2) / d)"
                if dtype == "uint8" else "in float")  # fmt: skip
    return task(
        name="image_filter", family="image_filter", entry="filter", args=args,
        description=f"{name} filter of a row-major h x w {layout} {dtype} image with {border}ed borders (a read at "
        f"(r, q) outside the image first maps r and q by {{ {fold} }}); each output pixel is post(v) with post(v) "
        f"= {post} and v from {{ {' '.join(ref_value.split())} }}, at(r, q) the border-mapped input pixel, "
        f"{out_rule}.",
        configs=[{"H": 64, "W": 64}, {"H": 127, "W": 93}, {"H": 256, "W": 300}], hidden=[{"H": 101, "W": 77}],
        perf=[{"H": 4096, "W": 4096}], reference=reference, implementations=impls,
        tolerance={"rtol": 1.0e-4, "atol": 1.0e-5} if dtype == "float32" else None,
    )


_NAIVE = """
__global__ void filter_kernel(int h, int w, const T* x, T* y) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= h || q >= w) return;
  for (int ch = 0; ch < NC; ++ch) y[((long)r * w + q) * NC + ch] = pixel(x, h, w, r, q, ch);
}
extern "C" void filter(int h, int w, const T* x, T* y) {
  dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
  filter_kernel<<<grid, block>>>(h, w, x, y);
}
"""
_SMEM = """
// A 16 x 16 pixel tile plus a border-mapped halo of R, every channel, staged in shared memory.
constexpr int B = 16;
__global__ void filter_tile(int h, int w, const T* x, T* y) {
  __shared__ T s[NC][B + 2 * R][B + 2 * R + 1];
  int tx = threadIdx.x, ty = threadIdx.y, q0 = blockIdx.x * B, r0 = blockIdx.y * B;
  for (int j = ty; j < B + 2 * R; j += B)
    for (int i = tx; i < B + 2 * R; i += B)
      for (int ch = 0; ch < NC; ++ch) s[ch][j][i] = at(x, h, w, r0 + j - R, q0 + i - R, ch);
  __syncthreads();
  int r = r0 + ty, q = q0 + tx;
  if (r >= h || q >= w) return;
  for (int ch = 0; ch < NC; ++ch) {
    $v
    y[((long)r * w + q) * NC + ch] = (T)post(v);
  }
}
extern "C" void filter(int h, int w, const T* x, T* y) {
  dim3 block(B, B), grid((w + B - 1) / B, (h + B - 1) / B);
  filter_tile<<<grid, block>>>(h, w, x, y);
}
"""
_ROW4 = """
// Each thread computes 4 pixels of a row, strided by 32 so a warp's stores stay coalesced.
constexpr int ITEMS = 4;
__global__ void filter_rows(int h, int w, const T* x, T* y) {
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  int q0 = blockIdx.x * 32 * ITEMS + threadIdx.x;
  if (r >= h) return;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int q = q0 + k * 32;
    if (q < w)
      for (int ch = 0; ch < NC; ++ch) y[((long)r * w + q) * NC + ch] = pixel(x, h, w, r, q, ch);
  }
}
extern "C" void filter(int h, int w, const T* x, T* y) {
  dim3 block(32, 8), grid((w + 32 * ITEMS - 1) / (32 * ITEMS), (h + 7) / 8);
  filter_rows<<<grid, block>>>(h, w, x, y);
}
"""
