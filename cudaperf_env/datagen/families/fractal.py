"""Fractal escape-time counts (Mandelbrot-like and Julia sets of eight orbit formulas) on a pixel grid, in double.

The orbit arithmetic is written with explicit ``__dmul_rn`` / ``__dadd_rn`` / ``__dsub_rn`` in the CUDA
implementations so that nvcc cannot contract it into FMAs: the counts are discrete and a single different
rounding near the set's boundary would change them. The C reference is compiled without FMA contraction on
x86-64, so both round every operation the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, pick, scalar, task

# Orbit formulas: the update of z = (zx, zy); each is iterated as an escape-time "mandel" set (z0 = 0, c = the
# pixel) or a "julia" set (z0 = the pixel, c a constant).
FORMULAS = ("standard", "burning_ship", "tricorn", "multibrot3", "celtic", "perpendicular", "buffalo", "heart")
# Regions (center x, center y, half width) that hold a mix of fast- and slow-escaping pixels.
REGIONS = {
    "standard": [(-0.5, 0.0, 1.6), (-0.745, 0.11, 0.05), (-1.25, 0.02, 0.12), (0.3, 0.5, 0.2)],
    "burning_ship": [(-0.5, -0.5, 1.8), (-1.76, -0.03, 0.08)],
    "tricorn": [(-0.3, 0.0, 1.7), (-1.2, 0.3, 0.3)],
    "multibrot3": [(0.0, 0.0, 1.4), (-0.5, 0.6, 0.3)],
    "julia": [(0.0, 0.0, 1.6), (0.2, 0.3, 0.5), (-0.4, -0.2, 0.4)],
}
_BROAD = [(-0.5, 0.0, 1.8), (-0.3, -0.2, 1.2)]
JULIA_C = [(-0.8, 0.156), (0.285, 0.01), (-0.4, 0.6), (-0.70176, -0.3842), (0.355, 0.355), (-0.835, -0.2321)]
# What a pixel stores from its iteration count it.
RESULTS = {"count": "it", "inside_zero": "it == $maxit ? 0 : it", "remaining": "$maxit - it"}
STRUCTURES = grid(FORMULAS, ("mandel", "julia"), (False, True), sorted(RESULTS))


def _orbit(name: str, ops: dict[str, str]) -> str:
    """C statements updating (zx, zy) once; ``ops`` maps mul/add/sub to function names or operator forms."""
    m, a, s = ops["mul"], ops["add"], ops["sub"]
    if name == "multibrot3":
        return (f"double xx = {m}(zx, zx), yy = {m}(zy, zy);\n"
                f"      double nx = {a}({s}({m}(xx, zx), {m}(3.0, {m}(zx, yy))), cx);\n"
                f"      zy = {a}({s}({m}(3.0, {m}(xx, zy)), {m}(yy, zy)), cy);\n      zx = nx;")  # fmt: skip
    re = f"{s}({m}(zx, zx), {m}(zy, zy))"
    if name in ("celtic", "buffalo"):
        re = f"fabs({re})"
    im = {"burning_ship": f"{m}(2.0, fabs({m}(zx, zy)))", "buffalo": f"{m}(2.0, fabs({m}(zx, zy)))",
          "tricorn": f"{m}(-2.0, {m}(zx, zy))", "perpendicular": f"{m}(-2.0, {m}(zx, fabs(zy)))",
          "heart": f"{m}(2.0, {m}(fabs(zx), zy))"}.get(name, f"{m}(2.0, {m}(zx, zy))")  # fmt: skip
    return f"double nx = {a}({re}, cx);\n      zy = {a}({im}, cy);\n      zx = nx;"


def escape_time(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Per pixel: the number of orbit iterations before |z|^2 exceeds a bailout, capped at MAXIT."""
    name, kind, square, result = nth(variant, STRUCTURES)
    julia = kind == "julia"
    cx0, cy0, half = pick(rng, REGIONS["julia"] if julia else REGIONS.get(name, _BROAD))
    maxit, bail = int(pick(rng, (24, 40, 64, 100, 150))), float(pick(rng, (4.0, 16.0, 256.0)))
    jc = pick(rng, JULIA_C) if julia else (0.0, 0.0)
    aspect = float(pick(rng, (1.0, 0.75, 1.25)))
    test = "fmax(fabs(zx), fabs(zy))" if square else "ADD(MUL(zx, zx), MUL(zy, zy))"
    limit = repr(float(np.sqrt(bail))) if square else repr(bail)
    start = "zx = px, zy = py" if julia else "zx = 0.0, zy = 0.0"
    cdef = f"cx = {jc[0]!r}, cy = {jc[1]!r}" if julia else "cx = px, cy = py"
    kw: dict[str, Any] = {
        "x0": repr(cx0 - half), "y0": repr(cy0 + half * aspect), "sx": repr(2 * half), "sy": repr(2 * half * aspect),
        "maxit": maxit, "test": test, "limit": limit, "start": start, "cdef": cdef,
        "ret": fill(RESULTS[result], maxit=maxit)}  # fmt: skip
    plain = {"mul": "MUL", "add": "ADD", "sub": "SUB"}
    kw["orbit"] = _orbit(name, plain)
    body = fill(_BODY, **kw)
    reference = "#include <math.h>\n#define MUL(a, b) ((a) * (b))\n#define ADD(a, b) ((a) + (b))\n" \
                "#define SUB(a, b) ((a) - (b))\n" + fill("static $body\n" + _REF, body=body)
    head = "#include <math.h>\n#define MUL __dmul_rn\n#define ADD __dadd_rn\n#define SUB __dsub_rn\n" \
           "__device__ __forceinline__ " + body
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], head + _NAIVE),
        impl("grid_stride", ["grid-stride", "flat-index", "load-balancing"], head + _STRIDE),
        impl("interleaved_rows", ["multi-element-per-thread", "coalesced"], head + _INTERLEAVED),
    ]
    args = [scalar("h", "int32", "H"), scalar("w", "int32", "W"), buffer("counts", "out", "int32", ["H", "W"])]
    what = f"{name.replace('_', ' ')} orbit's " + (f"Julia set of c = {jc[0]} + {jc[1]}i (z0 = the pixel)" if julia
                                                 else "escape set (z0 = 0, c = the pixel)")  # fmt: skip
    return task(
        name=f"escape_{name}_{kind}", family="escape_time", entry="escape", args=args,
        description=f"Escape-time counts of the {what} on an h x w pixel grid (row-major, row 0 at the top) over "
        f"the window x in [{kw['x0']}, {kw['x0']} + {kw['sx']}), y in ({kw['y0']} - {kw['sy']}, {kw['y0']}]: pixel "
        f"(r, q) has px = x0 + sx * q / w, py = y0 - sy * r / h; counts[r][q] = the number of iterations "
        f"(at most {maxit}) of the orbit update before {'max(|zx|, |zy|)' if square else 'zx^2 + zy^2'} > {limit}"
        f", stored as {kw['ret']}, in double precision without FMA contraction, every operation rounded "
        f"separately; the orbit update is {{ {' '.join(kw['orbit'].split())} }} with MUL, ADD, SUB the rounded "
        f"operations.",
        configs=[{"H": 48, "W": 64}, {"H": 97, "W": 131}, {"H": 200, "W": 256}], hidden=[{"H": 71, "W": 89}],
        perf=[{"H": 4096, "W": 4096}], reference=reference, implementations=impls,
    )



_BODY = """int pixel_count(int h, int w, int r, int q) {
  double px = ADD($x0, MUL($sx, (double)q / w)), py = SUB($y0, MUL($sy, (double)r / h));
  double $start, $cdef;
  int it = 0;
  while (it < $maxit && $test <= $limit) {
      $orbit
      ++it;
  }
  return $ret;
}
"""
_REF = """void escape(int h, int w, int* counts) {
  for (int r = 0; r < h; ++r)
    for (int q = 0; q < w; ++q) counts[(long)r * w + q] = pixel_count(h, w, r, q);
}"""
_NAIVE = """
__global__ void escape_kernel(int h, int w, int* counts) {
  int q = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < h && q < w) counts[(long)r * w + q] = pixel_count(h, w, r, q);
}
extern "C" void escape(int h, int w, int* counts) {
  dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
  escape_kernel<<<grid, block>>>(h, w, counts);
}
"""
_STRIDE = """
// A fixed grid strides over the flat pixel index, spreading slow (inside-the-set) regions over all blocks.
__global__ void escape_stride(int h, int w, int* counts) {
  long total = (long)h * w;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < total; i += (long)gridDim.x * blockDim.x)
    counts[i] = pixel_count(h, w, (int)(i / w), (int)(i % w));
}
extern "C" void escape(int h, int w, int* counts) {
  long total = (long)h * w;
  int blocks = (int)((total + 255) / 256 < 1024 ? (total + 255) / 256 : 1024);
  escape_stride<<<blocks, 256>>>(h, w, counts);
}
"""
_INTERLEAVED = """
// Each thread computes 4 pixels of a row spaced 32 apart: a warp's stores stay coalesced.
constexpr int ITEMS = 4;
__global__ void escape_rows(int h, int w, int* counts) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, q0 = blockIdx.x * 32 * ITEMS + threadIdx.x;
  if (r >= h) return;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int q = q0 + 32 * k;
    if (q < w) counts[(long)r * w + q] = pixel_count(h, w, r, q);
  }
}
extern "C" void escape(int h, int w, int* counts) {
  dim3 block(32, 4), grid((w + 32 * ITEMS - 1) / (32 * ITEMS), (h + 3) / 4);
  escape_rows<<<grid, block>>>(h, w, counts);
}
"""
