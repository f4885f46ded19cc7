"""Color space conversions (RGB <-> YUV / YCbCr / HSV / gray) and image resampling (nearest, bilinear).

uint8 variants use exact integer formulas (fixed-point weights, arithmetic shifts, saturation), so every
implementation matches the reference bit for bit; float32 variants carry a tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, pick, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_POSTS, U8_POSTS

_TOL = {"rtol": 1.0e-4, "atol": 1.0e-5}
# name -> (input channels, output channels, uint8 body, float body); bodies read a, b, e and write o0..o2.
CONVERSIONS: dict[str, tuple[int, int, str | None, str]] = {
    "rgb_to_gray": (3, 1, "o0 = sat((77 * a + 150 * b + 29 * e + 128) >> 8);",
                    "o0 = 0.299f * a + 0.587f * b + 0.114f * e;"),
    "rgb_to_gray_avg": (3, 1, "o0 = (a + b + e + 1) / 3;", "o0 = (a + b + e) / 3.0f;"),
    "rgb_to_yuv": (3, 3, "o0 = sat(((66 * a + 129 * b + 25 * e + 128) >> 8) + 16);\n"
                         "    o1 = sat(((-38 * a - 74 * b + 112 * e + 128) >> 8) + 128);\n"
                         "    o2 = sat(((112 * a - 94 * b - 18 * e + 128) >> 8) + 128);",
                   "o0 = 0.299f * a + 0.587f * b + 0.114f * e;\n"
                   "    o1 = -0.14713f * a - 0.28886f * b + 0.436f * e;\n"
                   "    o2 = 0.615f * a - 0.51499f * b - 0.10001f * e;"),
    "yuv_to_rgb": (3, 3, "int cy = a - 16, d = b - 128, f = e - 128;\n"
                         "    o0 = sat((298 * cy + 409 * f + 128) >> 8);\n"
                         "    o1 = sat((298 * cy - 100 * d - 208 * f + 128) >> 8);\n"
                         "    o2 = sat((298 * cy + 516 * d + 128) >> 8);",
                   "o0 = a + 1.13983f * e;\n    o1 = a - 0.39465f * b - 0.5806f * e;\n    o2 = a + 2.03211f * b;"),
    "rgb_to_ycbcr": (3, 3, "o0 = sat((19595 * a + 38470 * b + 7471 * e + 32768) >> 16);\n"
                           "    o1 = sat(((-11059 * a - 21709 * b + 32768 * e + 32768) >> 16) + 128);\n"
                           "    o2 = sat(((32768 * a - 27439 * b - 5329 * e + 32768) >> 16) + 128);",
                     "o0 = 0.299f * a + 0.587f * b + 0.114f * e;\n"
                     "    o1 = 0.5f - 0.168736f * a - 0.331264f * b + 0.5f * e;\n"
                     "    o2 = 0.5f + 0.5f * a - 0.418688f * b - 0.081312f * e;"),
    "rgb_to_hsv": (3, 3, None,
                   "float v = fmaxf(a, fmaxf(b, e)), m = fminf(a, fminf(b, e)), dl = v - m, hh = 0.0f;\n"
                   "    if (dl > 0.0f) {\n      if (v == a) { hh = (b - e) / dl; if (hh < 0.0f) hh += 6.0f; }\n"
                   "      else if (v == b) hh = 2.0f + (e - a) / dl;\n      else hh = 4.0f + (a - b) / dl;\n    }\n"
                   "    o0 = hh / 6.0f;\n    o1 = v > 0.0f ? dl / v : 0.0f;\n    o2 = v;"),
    "rgb_to_bgr_gamma": (3, 3, "o0 = (e * e + 127) / 255;\n    o1 = (b * b + 127) / 255;\n"
                               "    o2 = (a * a + 127) / 255;",
                         "o0 = e * e;\n    o1 = b * b;\n    o2 = a * a;"),
}


COLOR_STRUCTURES = [(n, d, lay, k) for n, d, lay, k in grid(sorted(CONVERSIONS), ("uint8", "float32"),
                    ("interleaved", "planar"), range(6)) if d == "float32" or CONVERSIONS[n][2] is not None]


def _io(layout: str, ch: int, base: str, i: int) -> str:
    """The flat index of channel ``i`` of pixel ``base`` in a ``ch``-channel image of ``npix`` pixels."""
    if ch == 1:
        return base
    return f"{base} * {ch} + {i}" if layout == "interleaved" else f"{i} * npix + {base}"


def color_convert(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out = post(conversion(in)) per pixel of an h x w image, interleaved or planar channels, uint8 or float32."""
    name, dtype, layout, post_index = nth(variant, COLOR_STRUCTURES)
    cin, cout, body_u8, body_f = CONVERSIONS[name]
    t = CTYPE[dtype]
    u8 = dtype == "uint8"
    body = body_u8 if u8 and body_u8 is not None else body_f
    loads = " ".join(f"{w} = in[{_io(layout, cin, 'p', i)}];" for i, w in enumerate("abe"))
    stores = " ".join(f"out[{_io(layout, cout, 'p', i)}] = ({t})post(o{i});" for i in range(cout))
    vt = "int" if u8 else "float"
    outs = ", ".join(f"o{i} = 0" for i in range(cout))
    if u8:
        post = fill(U8_POSTS[post_index], k=int(rng.integers(20, 200)), m=int(rng.integers(128, 400)))
    else:
        post = fill(FLOAT_POSTS[post_index], c=lit(float(rng.uniform(1.1, 2.0)), "float32"))
    post_fn = f"{vt} post({vt} v) {{ return {post}; }}\n"
    sat = "static inline int sat(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }\n" if u8 else ""
    kw = {"T": t, "V": vt, "loads": loads, "stores": stores, "body": body, "outs": outs}
    pixel = fill("void pixel(long npix, long p, const $T* in, $T* out) {\n  $V a, b, e, $outs;\n  $loads\n"
                 "  {\n    $body\n  }\n  $stores\n}", **kw)  # fmt: skip
    reference = "#include <math.h>\n" + sat + "static " + post_fn + "static " + pixel + \
        "\nvoid convert(int h, int w, const " + t + "* in, " + t + "* out) {\n" \
        "  long npix = (long)h * w;\n  for (long p = 0; p < npix; ++p) pixel(npix, p, in, out);\n}"
    head = f"#include <math.h>\ntypedef {t} T;\n"
    if u8:
        head += "__device__ __forceinline__ int sat(int v) { return min(max(v, 0), 255); }\n"
    head += "__device__ __forceinline__ " + post_fn
    head += "__device__ __forceinline__ " + pixel.replace(f"const {t}* in, {t}* out", "const T* in, T* out") + "\n"
    impls = [
        impl("naive", ["thread-per-element"], head + _C_NAIVE),
        impl("grid_stride", ["grid-stride", "multi-element-per-thread"], head + _C_STRIDE),
        impl("block_2d", ["2d-grid", "coalesced"], head + _C_2D),
    ]
    init = {"dist": "randint", "low": 0, "high": 256} if u8 else {"dist": "uniform", "low": 0, "high": 1}

    def shape(c: int) -> list[str | int]:
        return ["H", "W"] if c == 1 else (["H", "W", c] if layout == "interleaved" else [c, "H", "W"])

    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), buffer("in", "in", dtype, shape(cin), init),
            buffer("out", "out", dtype, shape(cout))]  # fmt: skip
    return task(
        name=f"color_{name}", family="color_convert", entry="convert", args=args,
        description=f"{name.replace('_', ' ')} conversion of an h x w {dtype} image with {layout} channels "
        f"({'h x w x c' if layout == 'interleaved' else 'c x h x w'}): per pixel, with a, b, e its input channels "
        f"0, 1, 2 {'(as int)' if u8 else ''}, compute {' '.join(body.split())} and store post(o0)..post(o{cout - 1}) "
        f"with post(v) = {post} "
        f"{'(int arithmetic, >> is an arithmetic shift, sat() clamps to [0, 255])' if u8 else ''}.",
        configs=[{"H": 64, "W": 64}, {"H": 127, "W": 93}, {"H": 256, "W": 300}], hidden=[{"H": 101, "W": 77}],
        perf=[{"H": 4096, "W": 4096}], reference=reference, implementations=impls,
        tolerance=None if u8 else _TOL,
    )


_C_NAIVE = """
__global__ void convert_kernel(long npix, const T* in, T* out) {
  long p = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (p < npix) pixel(npix, p, in, out);
}
extern "C" void convert(int h, int w, const T* in, T* out) {
  long npix = (long)h * w;
  convert_kernel<<<(int)((npix + 255) / 256), 256>>>(npix, in, out);
}
"""
_C_STRIDE = """
__global__ void convert_stride(long npix, const T* in, T* out) {
  for (long p = blockIdx.x * (long)blockDim.x + threadIdx.x; p < npix; p += (long)gridDim.x * blockDim.x)
    pixel(npix, p, in, out);
}
extern "C" void convert(int h, int w, const T* in, T* out) {
  long npix = (long)h * w;
  int blocks = (int)((npix + 255) / 256 < 512 ? (npix + 255) / 256 : 512);
  convert_stride<<<blocks, 256>>>(npix, in, out);
}
"""
_C_2D = """
// 64-pixel-wide rows of a 2-D grid; each thread converts 2 pixels of its row, 32 apart.
__global__ void convert_2d(int h, int w, const T* in, T* out) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, q0 = blockIdx.x * 64 + threadIdx.x;
  if (r >= h) return;
  long npix = (long)h * w;
  for (int q = q0; q < q0 + 64 && q < w; q += 32) pixel(npix, (long)r * w + q, in, out);
}
extern "C" void convert(int h, int w, const T* in, T* out) {
  dim3 block(32, 8), grid((w + 63) / 64, (h + 7) / 8);
  convert_2d<<<grid, block>>>(h, w, in, out);
}
"""

# (in H, in W, out H, out W) for the shown, hidden and perf configurations, by scale pattern
SCALES = {
    "up2": ([(32, 32, 64, 64), (63, 47, 126, 94), (128, 150, 256, 300)], (51, 39, 102, 78), (2048, 2048, 4096, 4096)),
    "down2": ([(64, 64, 32, 32), (127, 93, 63, 46), (512, 600, 256, 300)], (101, 77, 50, 38), (8192, 8192, 4096, 4096)),
    "free": ([(60, 80, 45, 107), (127, 93, 200, 61), (300, 256, 171, 333)], (77, 101, 123, 55),
             (3000, 4000, 4096, 2731)),
}


# Source coordinates: pixel centers ((2x + 1) * in - out) / (2 * out), or corners aligned (x * (in - 1) / (out - 1)).
_COORDS = {
    "center": "  long num = (2L * x + 1) * in_n - out_n;\n  if (num < 0) num = 0;\n"
              "  *i0 = (int)(num / (2L * out_n));\n  *f = (int)(((num % (2L * out_n)) << 8) / (2L * out_n));\n",
    "corner": "  long num = (long)x * (in_n - 1);\n"
              "  *i0 = (int)(num / (out_n - 1));\n  *f = (int)(((num % (out_n - 1)) << 8) / (out_n - 1));\n",
}  # fmt: skip
RESIZE_STRUCTURES = grid(("nearest", "nearest_corner", "bilinear", "bilinear_corner"), ("uint8", "float32"),
                         ("gray", "interleaved", "planar"), range(len(U8_POSTS)))  # fmt: skip


def resize(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out = post(in resampled from ih x iw to oh x ow), nearest or bilinear, pixel centers or corners aligned."""
    mode, dtype, layout, post_index = nth(variant, RESIZE_STRUCTURES)
    scale = pick(rng, sorted(SCALES))
    nc = 1 if layout == "gray" else 3
    pix, outx = {
        "gray": ("in[(long)(y) * iw + (x)]", "out[(long)(r) * ow + (q)]"),
        "interleaved": ("in[((long)(y) * iw + (x)) * NC + ch]", "out[((long)(r) * ow + (q)) * NC + (ch)]"),
        "planar": ("in[((long)ch * ih + (y)) * iw + (x)]", "out[((long)(ch) * oh + (r)) * ow + (q)]"),
    }[layout]
    t, u8 = CTYPE[dtype], dtype == "uint8"
    coord = ("void coord(int x, int in_n, int out_n, int* i0, int* i1, int* f) {\n"
             + _COORDS["corner" if mode == "bilinear_corner" else "center"]
             + "  *i1 = *i0 + 1 < in_n ? *i0 + 1 : in_n - 1;\n}\n")
    if u8:
        post = fill(U8_POSTS[post_index], k=int(rng.integers(20, 200)), m=int(rng.integers(128, 400)))
        post_fn = f"{t} post(int v) {{ return ({t})({post}); }}"
    else:
        post = fill(FLOAT_POSTS[post_index], c=lit(float(rng.uniform(1.1, 2.0)), "float32"))
        post_fn = f"{t} post({t} v) {{ return {post}; }}"
    sat = "int sat(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }\n"
    if mode.startswith("bilinear"):
        if u8:
            value = "(((256 - fy) * ((256 - fx) * P(y0, x0) + fx * P(y0, x1)) + fy * ((256 - fx) * P(y1, x0) " \
                    "+ fx * P(y1, x1)) + 32768) >> 16)"
        else:
            value = "((1.0f - fy / 256.0f) * ((1.0f - fx / 256.0f) * P(y0, x0) + fx / 256.0f * P(y0, x1)) + " \
                    "fy / 256.0f * ((1.0f - fx / 256.0f) * P(y1, x0) + fx / 256.0f * P(y1, x1)))"
        sample = "int y0, y1, fy, x0, x1, fx;\n  coord(r, ih, oh, &y0, &y1, &fy);\n" \
                 "  coord(q, iw, ow, &x0, &x1, &fx);\n" \
                 f"  return ({t}){value};"
    elif mode == "nearest":
        sample = "int y0 = (int)((2L * r + 1) * ih / (2L * oh)), x0 = (int)((2L * q + 1) * iw / (2L * ow));\n" \
                 "  return P(y0, x0);"
    else:
        sample = "int y0 = (int)((long)r * ih / oh), x0 = (int)((long)q * iw / ow);\n  return P(y0, x0);"
    fn = fill("$T sample(int ih, int iw, int oh, int ow, const $T* in, int r, int q, int ch) {\n"
              "#define P(y, x) $pix\n  $s\n#undef P\n}", T=t, s=sample, pix=pix)  # fmt: skip
    sig = f"int ih, int iw, int oh, int ow, const {t}* in, {t}* out"
    reference = f"#include <math.h>\n#define NC {nc}\n#define OUT(r, q, ch) {outx}\nstatic {coord}static {fn}\n" \
                f"static {sat}static {post_fn}\nvoid resize({sig}) {{\n" \
                "  for (int r = 0; r < oh; ++r)\n    for (int q = 0; q < ow; ++q)\n" \
                "      for (int ch = 0; ch < NC; ++ch)\n" \
                "        OUT(r, q, ch) = post(sample(ih, iw, oh, ow, in, r, q, ch));\n}"  # fmt: skip
    head = f"#include <math.h>\ntypedef {t} T;\nconstexpr int NC = {nc};\n#define OUT(r, q, ch) {outx}\n" \
           f"__device__ __forceinline__ {coord}" \
           f"__device__ __forceinline__ {fn}\n__device__ __forceinline__ {sat}__device__ __forceinline__ {post_fn}\n"
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], head + _R_NAIVE),
        impl("channel_loop_rows", ["multi-element-per-thread", "coalesced"], head + _R_ROWS),
        impl("grid_stride", ["grid-stride", "flat-index"], head + _R_FLAT),
    ]
    shown, hid, big = SCALES[scale]

    def cfg(v: tuple[int, int, int, int]) -> dict[str, int]:
        return {"IH": v[0], "IW": v[1], "OH": v[2], "OW": v[3]}

    init = {"dist": "randint", "low": 0, "high": 256} if u8 else {"dist": "uniform", "low": 0, "high": 1}
    px = _SHAPES[layout]
    args = [scalar("ih", "int32", "IH"), scalar("iw", "int32", "IW"), scalar("oh", "int32", "OH"),
            scalar("ow", "int32", "OW"), buffer("in", "in", dtype, px[0], init),
            buffer("out", "out", dtype, px[1])]  # fmt: skip
    return task(
        name=f"resize_{mode}", family="resize", entry="resize", args=args,
        description=f"{mode.replace('_', ' ')} resize of a row-major ih x iw {dtype} image ({layout}: "
        f"{' x '.join(str(v).lower() for v in px[0])}) to oh x ow: output pixel (r, q), channel ch = post(s) with "
        f"post(v) = {post}{' (in int, sat() clamps to [0, 255])' if u8 else ''} and s = "
        f"{' '.join(sample.split())} where P(y, x) is input pixel (y, x) of channel ch"
        f"{(_COORD_CORNER if mode == 'bilinear_corner' else _COORD) if mode.startswith('bilinear') else ''}, "
        f"indices in integer arithmetic.",
        configs=[cfg(c) for c in shown], hidden=[cfg(hid)], perf=[cfg(big)], reference=reference,
        implementations=impls, tolerance=None if u8 else _TOL,
    )


_SHAPES: dict[str, tuple[list[str | int], list[str | int]]] = {
    "gray": (["IH", "IW"], ["OH", "OW"]),
    "interleaved": (["IH", "IW", 3], ["OH", "OW", 3]),
    "planar": ([3, "IH", "IW"], [3, "OH", "OW"]),
}
_COORD = (" and coord() maps an output coordinate x to source indices i0, i1 = min(i0 + 1, n - 1) and a "
          "fraction f in 1/256 units of the pixel-center position ((2x + 1) * in - out) / (2 * out), clamped at 0")
_COORD_CORNER = (" and coord() maps an output coordinate x to source indices i0, i1 = min(i0 + 1, n - 1) and a "
                 "fraction f in 1/256 units of the corner-aligned position x * (in - 1) / (out - 1)")
_R_NAIVE = """
__global__ void resize_kernel(int ih, int iw, int oh, int ow, const T* in, T* out) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= oh || q >= ow) return;
  for (int ch = 0; ch < NC; ++ch) OUT(r, q, ch) = post(sample(ih, iw, oh, ow, in, r, q, ch));
}
extern "C" void resize(int ih, int iw, int oh, int ow, const T* in, T* out) {
  dim3 block(16, 16), grid((ow + 15) / 16, (oh + 15) / 16);
  resize_kernel<<<grid, block>>>(ih, iw, oh, ow, in, out);
}
"""
_R_ROWS = """
// One block row per output row; consecutive threads take consecutive (pixel, channel) elements of it.
__global__ void resize_rows(int ih, int iw, int oh, int ow, const T* in, T* out) {
  int r = blockIdx.y;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < ow * NC; e += gridDim.x * blockDim.x)
    OUT(r, e / NC, e % NC) = post(sample(ih, iw, oh, ow, in, r, e / NC, e % NC));
}
extern "C" void resize(int ih, int iw, int oh, int ow, const T* in, T* out) {
  int per_row = (ow * NC + 127) / 128;
  dim3 grid(per_row < 8 ? per_row : 8, oh);
  resize_rows<<<grid, 128>>>(ih, iw, oh, ow, in, out);
}
"""
_R_FLAT = """
__global__ void resize_flat(int ih, int iw, int oh, int ow, const T* in, T* out) {
  long total = (long)oh * ow * NC;
  for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < total; e += (long)gridDim.x * blockDim.x) {
    long p = e / NC;
    int r = (int)(p / ow), q = (int)(p % ow), ch = (int)(e % NC);
    OUT(r, q, ch) = post(sample(ih, iw, oh, ow, in, r, q, ch));
  }
}
extern "C" void resize(int ih, int iw, int oh, int ow, const T* in, T* out) {
  long total = (long)oh * ow * NC;
  int blocks = (int)((total + 255) / 256 < 1024 ? (total + 255) / 256 : 1024);
  resize_flat<<<blocks, 256>>>(ih, iw, oh, ow, in, out);
}
"""
