"""Row-wise ops on a rows x cols matrix: per-row reductions and normalizations (softmax, layernorm ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, pick, scalar, task
from cudaperf_env.datagen.families.elementwise import unary_chain
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue, to_double

Stat = tuple[str, str, str]  # (combine, element of a [and s1], final of v and n)
NORMALIZATIONS: dict[str, tuple[tuple[Stat, ...], str]] = {
    "softmax": ((("max", "a", "v"), ("sum", "expf(a - s1)", "v")), "expf(a - s1) / s2"),
    "log_softmax": ((("max", "a", "v"), ("sum", "expf(a - s1)", "v")), "a - s1 - logf(s2)"),
    "scaled_softmax": ((("max", "a", "v"), ("sum", "expf(0.5f * (a - s1))", "v")), "expf(0.5f * (a - s1)) / s2"),
    "layernorm": ((("sum", "a", "v / n"), ("sum", "(a - s1) * (a - s1)", "v / n")), "(a - s1) / sqrtf(s2 + 1e-5f)"),
    "l2_normalize": ((("sum", "a * a", "sqrtf(v) + 1e-6f"),), "a / s1"),
    "l1_normalize": ((("sum", "fabsf(a)", "v + 1e-6f"),), "a / s1"),
    "max_abs_scale": ((("max", "fabsf(a)", "v + 1e-6f"),), "a / s1"),
    "center": ((("sum", "a", "v / n"),), "a - s1"),
    "rms_norm": ((("sum", "a * a", "sqrtf(v / n + 1e-6f)"),), "a / s1"),
    "min_max": ((("min", "a", "v"), ("max", "a - s1", "v + 1e-6f")), "(a - s1) / s2"),
}
NORMALIZE_STRUCTURES = grid(("float32", "float64"), sorted(NORMALIZATIONS), range(len(FLOAT_EPILOGUES)))
_IDENT = {"sum": "0", "max": "-INFINITY", "min": "INFINITY"}
_COMB = {"sum": "p + q", "max": "fmax(p, q)", "min": "fmin(p, q)"}
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-12}}
_CONFIGS = {"configs": [{"R": 4, "C": 10}, {"R": 33, "C": 257}, {"R": 128, "C": 1000}],
            "hidden": [{"R": 77, "C": 301}], "perf": [{"R": 16384, "C": 2048}]}  # fmt: skip


def row_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[r] = h(combine_j g(x[r][j]), cols) for a random map g, combine and final h."""
    dtype, op = pick(rng, ("float32", "float64")), pick(rng, ("sum", "max", "min"))
    elem = unary_chain(rng, "a", int(rng.integers(1, 3)), "float32")
    final = pick(rng, ("v", "v / n", "sqrtf(fabsf(v))") if op == "sum" else ("v", "v * v"))
    return _row_task("row_reduce", dtype, ((op, elem, final),), None)


def row_normalize(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[r][j] = epilogue(g(x[r][j], row statistics)): softmax, layernorm, L1/L2/RMS/max scaling, centering."""
    dtype, name, index = nth(variant, NORMALIZE_STRUCTURES)
    stats, out = NORMALIZATIONS[name]
    return _row_task("row_normalize", dtype, stats, float_epilogue(index, "float32", rng.uniform(0.5, 2.0), f"({out})"))


def _row_task(family: str, dtype: str, stats: Sequence[Stat], out: str | None) -> dict[str, Any]:
    conv = to_double if dtype == "float64" else (lambda e: e)
    stats = [(op, conv(e), conv(f)) for op, e, f in stats]
    t = CTYPE[dtype]
    svars = ", ".join(f"{t} s{k + 1}" for k in range(len(stats)))
    fns = []
    for k, (op, elem, final) in enumerate(stats, 1):
        prev = "".join(f", {t} s{j}" for j in range(1, k))
        fns.append(f"$Q {t} e{k}({t} a{prev}) {{ return {elem}; }}")
        fns.append(f"$Q {t} c{k}({t} p, {t} q) {{ return {_COMB[op]}; }}")
        fns.append(f"$Q {t} f{k}({t} v, int n) {{ return {final}; }}")
    if out is not None:
        fns.append(f"$Q {t} g({t} a, {svars}) {{ return {conv(out)}; }}")
    helpers = "\n".join(fns)
    args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C"),
            buffer("x", "in", dtype, ["R", "C"], {"dist": "normal", "mean": 0, "std": 2})]  # fmt: skip
    args.append(buffer("y", "out", dtype, ["R", "C"] if out else ["R"]))
    sig = f"int rows, int cols, const {t}* x, {t}* y"
    idents = [_IDENT[op] for op, _, _ in stats]
    ref_body = _stats_code("ref", stats, idents, t) + _write("ref", out, len(stats))
    reference = ("#include <math.h>\n" + helpers.replace("$Q", "static")
                 + f"\nvoid rowwise({sig}) {{\n  for (int r = 0; r < rows; ++r) {{\n"
                 f"    const {t}* xr = x + (long)r * cols;\n{ref_body}  }}\n}}\n")  # fmt: skip
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__") + "\n"
    impls = []
    for style, strategies, launch in _STYLES:
        body = _stats_code(style, stats, idents, t) + _write(style, out, len(stats))
        source = head + (_BLOCK_HELPERS.replace("$T", t) if style == "block" else "") + fill(
            _KERNEL[style], sig=sig, T=t, body=body, launch=launch
        )
        impls.append(impl(f"{style}_per_row" if style != "thread" else "naive", strategies, source))
    what = (f"y[r][j] = {conv(out)}" if out else "y[r] = s1") + "".join(
        f"; s{k} = {f} with v = {op} over j of {e} and n = cols" for k, (op, e, f) in enumerate(stats, 1)
    )
    description = f"Row-wise op on a rows x cols row-major {dtype} matrix x (a = x[r][j]): {what}."
    return task(
        name=family, family=family, entry="rowwise", args=args, description=description,
        reference=reference, implementations=impls, tolerance=_TOL[dtype], **_CONFIGS,
    )


def _stats_code(style: str, stats: Sequence[Stat], idents: Sequence[str], t: str) -> str:
    lines = []
    for k in range(1, len(stats) + 1):
        prev = "".join(f", s{j}" for j in range(1, k))
        start, step = _LOOP[style]
        lines.append(f"    {t} v{k} = {idents[k - 1]};")
        lines.append(f"    for (int j = {start}; j < cols; j += {step}) v{k} = c{k}(v{k}, e{k}(xr[j]{prev}));")
        if style == "warp":
            shuffle = f"__shfl_xor_sync(0xffffffffu, v{k}, off)"
            lines.append(f"    for (int off = 16; off > 0; off /= 2) v{k} = c{k}(v{k}, {shuffle});")
        if style == "block":
            lines.append(f"    v{k} = block_all(v{k}, [](auto p, auto q) {{ return c{k}(p, q); }});")
        lines.append(f"    {t} s{k} = f{k}(v{k}, cols);")
    return "\n".join(lines) + "\n"


def _write(style: str, out: str | None, nstats: int) -> str:
    if out is None:
        leader = {"ref": "1", "thread": "1", "warp": "lane == 0", "block": "threadIdx.x == 0"}[style]
        return f"    if ({leader}) y[r] = s1;\n"
    start, step = _LOOP[style]
    svals = ", ".join(f"s{k}" for k in range(1, nstats + 1))
    return f"    for (int j = {start}; j < cols; j += {step}) y[(long)r * cols + j] = g(xr[j], {svals});\n"


_LOOP = {"ref": ("0", "1"), "thread": ("0", "1"), "warp": ("lane", "32"), "block": ("threadIdx.x", "THREADS")}
_STYLES = (
    ("thread", ["thread-per-row"], "rowwise_kernel<<<(rows + 127) / 128, 128>>>(rows, cols, x, y);"),
    ("warp", ["warp-per-row", "warp-shuffle", "coalesced"],
     "rowwise_kernel<<<(rows + 7) / 8, 256>>>(rows, cols, x, y);"),
    ("block", ["block-per-row", "shared-memory", "warp-shuffle", "coalesced"],
     "rowwise_kernel<<<rows, THREADS>>>(rows, cols, x, y);"),
)
_KERNEL = {
    "thread": """
// One thread per row: simple, but neighbouring threads read addresses a row apart.
__global__ void rowwise_kernel($sig) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    const $T* xr = x + (long)r * cols;
$body  }
}
extern "C" void rowwise($sig) {
  $launch
}
""",
    "warp": """
// One warp per row: lanes stride the row (coalesced); butterfly shuffles give every lane the statistics.
__global__ void rowwise_kernel($sig) {
  int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (r < rows) {  // uniform per warp
    const $T* xr = x + (long)r * cols;
$body  }
}
extern "C" void rowwise($sig) {
  $launch
}
""",
    "block": """
// One block of 256 threads per row; warp shuffles, then the warp totals through shared memory.
__global__ void rowwise_kernel($sig) {
  int r = blockIdx.x;
  {
    const $T* xr = x + (long)r * cols;
$body  }
}
extern "C" void rowwise($sig) {
  $launch
}
""",
}
_BLOCK_HELPERS = """
constexpr int THREADS = 256;
// Combine v over the block; every thread gets the result.
template <typename F>
__device__ $T block_all($T v, F comb) {
  __shared__ $T totals[THREADS / 32];
  for (int off = 16; off > 0; off /= 2) v = comb(v, __shfl_xor_sync(0xffffffffu, v, off));
  if (threadIdx.x % 32 == 0) totals[threadIdx.x / 32] = v;
  __syncthreads();
  v = totals[0];
  for (int w = 1; w < THREADS / 32; ++w) v = comb(v, totals[w]);
  __syncthreads();  // totals is reused by the next call
  return v;
}
"""
