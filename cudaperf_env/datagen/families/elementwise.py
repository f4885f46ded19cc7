"""Elementwise maps: random expression trees over one or two inputs (float32, float64, int32)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, impl, lit, names, params, pick, scalar, task
from cudaperf_env.datagen.families.operators import to_double

# Unary float operators written for float32; `to_double` rewrites them for float64.
FLOAT_UNARY = (
    "sinf($x)", "cosf($x)", "tanhf($x)", "fabsf($x)", "($x) * ($x)", "($x) * $c", "($x) + $c",
    "fmaxf($x, $s)", "fminf($x, $s)", "expf(-fabsf($x))", "logf(1.0f + ($x) * ($x))",
    "sqrtf(fabsf($x) + $c)", "atanf($x)", "($x) / (1.0f + fabsf($x))", "1.0f / (1.0f + expf(-($x)))",
    "($x) * tanhf($x)", "erff($x)", "($x) * ($x) * ($x)", "($x) > 0.0f ? ($x) : $c * ($x)",
)
FLOAT_BINARY = (
    "$a + $b", "$a * $b", "fmaxf($a, $b)", "fminf($a, $b)", "$a - $c * $b", "$a * $b + $c",
    "sqrtf($a * $a + $b * $b)", "$a / (1.0f + fabsf($b))", "($a > $b ? $a : $c * $b)", "$c * $a + (1.0f - $c) * $b",
    "atan2f($a, $b)", "$a * expf(-fabsf($b))",
)
INT_UNARY = ("($x * $k)", "($x >> $k)", "($x ^ $m)", "($x % $k)", "(($x & $m) + 1)", "($x + $m)", "($x - 500)")
INT_BINARY = (
    "$a + $b", "$a * $k - $b", "($a ^ $b)", "(($a & $b) | $k)", "($a > $b ? $a - $b : $b - $a)",
    "(($a % $k) * ($b % 7))", "(($a << 2) + ($b >> 1))", "($a < $b ? $a : $b)", "($a > $b ? $a : $b)",
    "(($a | $b) & 1023)",
)


def unary_chain(rng: np.random.Generator, var: str, depth: int, dtype: str) -> str:
    """A chain of `depth` random unary operators applied to `var` (float32 spelling for float dtypes)."""
    expr = var
    for _ in range(depth):
        if dtype == "int32":
            expr = fill(pick(rng, INT_UNARY), x=expr, k=int(rng.integers(2, 9)), m=int(rng.integers(1, 256)))
        else:
            c, s = lit(rng.uniform(0.1, 2.5), "float32"), lit(rng.uniform(-0.5, 0.5), "float32")
            expr = fill(pick(rng, FLOAT_UNARY), x=expr, c=c, s=s)
    return expr


def binary_expr(rng: np.random.Generator, dtype: str) -> str:
    """A random binary operator over `a` and `b`, each under 0-1 unary operators."""
    a = unary_chain(rng, "a", int(rng.integers(0, 2)), dtype)
    b = unary_chain(rng, "b", int(rng.integers(0, 2)), dtype)
    if dtype == "int32":
        return fill(pick(rng, INT_BINARY), a=a, b=b, k=int(rng.integers(2, 9)))
    return fill(pick(rng, FLOAT_BINARY), a=a, b=b, c=lit(rng.uniform(0.1, 0.9), "float32"))


def map_unary(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[i] = f(x[i]) for a random chain of 1-3 float operators."""
    dtype = pick(rng, ("float32", "float64"))
    expr = unary_chain(rng, "a", int(rng.integers(1, 4)), "float32")
    return _map_task("map_unary", dtype, expr if dtype == "float32" else to_double(expr), ["a"])


def map_binary(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """z[i] = f(x[i], y[i]) (or y updated in place) for a random float or int expression."""
    dtype = pick(rng, ("float32", "float64", "int32"))
    expr = binary_expr(rng, dtype)
    if dtype == "float64":
        expr = to_double(expr)
    return _map_task("map_binary", dtype, expr, ["a", "b"], inplace=bool(rng.integers(0, 2)))


def _map_task(family: str, dtype: str, expr: str, vars_: list[str], inplace: bool = False) -> dict[str, Any]:
    t = CTYPE[dtype]
    int_init = {"dist": "randint", "low": 0, "high": 1000}
    init = int_init if dtype == "int32" else {"dist": "normal", "mean": 0, "std": 1.5}
    ins = ["x", "y"][: len(vars_)]
    out = "y" if inplace else "z" if len(ins) == 2 else "y"
    args = [scalar("n", "int32", "N")]
    args += [buffer(v, "inout" if v == out else "in", dtype, ["N"], init) for v in ins]
    if out not in ins:
        args.append(buffer(out, "out", dtype, ["N"]))
    sig = params(args)
    fparams = ", ".join(f"{t} {v}" for v in vars_)
    call = ", ".join(f"{v}[i]" for v in ins)
    head = f"__device__ __forceinline__ {t} f({fparams}) {{ return {expr}; }}\n"
    ptrs = " | ".join(f"(size_t){v}" for v in dict.fromkeys([*ins, out]))
    kw = {"sig": sig, "T": t, "out": out, "call": call, "entry": "elementwise", "ptrs": ptrs, "names": names(args)}
    where = "in place into y" if inplace else f"into {out}"
    description = (
        f"Elementwise map over n {dtype} values: {out}[i] = f({', '.join(v + '[i]' for v in ins)}) {where}, "
        f"with f({', '.join(vars_)}) = {expr}."
    )
    reference = (
        ("#include <math.h>\n" if dtype != "int32" else "")
        + f"static {t} f({fparams}) {{ return {expr}; }}\n"
        + fill("void elementwise($sig) {\n  for (int i = 0; i < n; ++i) $out[i] = f($call);\n}", **kw)
    )
    impls = [
        impl("naive", ["thread-per-element"], head + fill(_NAIVE, **kw)),
        impl("grid_stride", ["grid-stride", "coalesced"], head + fill(_GRID, **kw)),
        impl("unroll4", ["multi-element-per-thread", "loop-unrolling", "coalesced"], head + fill(_UNROLL, **kw)),
        impl("vectorized", ["vectorized-loads", "grid-stride"], head + _vectorized(dtype, ins, out, kw)),
    ]
    return task(
        name=family, family=family, description=description, entry="elementwise", args=args,
        configs=[{"N": 1000}, {"N": 4097}, {"N": 65536}], hidden=[{"N": 30011}], perf=[{"N": 1 << 24}],
        reference=reference, implementations=impls, tolerance=_tolerance(dtype, expr),
    )


def _tolerance(dtype: str, expr: str) -> dict[str, float] | None:
    if dtype == "int32":
        return None
    # Transcendentals differ by a few ulp between libm and CUDA and compound along a chain.
    return {"rtol": 1.0e-3, "atol": 1.0e-4} if dtype == "float32" else {"rtol": 1.0e-9, "atol": 1.0e-11}


_NAIVE = """
__global__ void map_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) $out[i] = f($call);
}

extern "C" void $entry($sig) {
  map_kernel<<<(n + 255) / 256, 256>>>(${names});
}
"""
_GRID = """
__global__ void map_kernel($sig) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    $out[i] = f($call);
}

extern "C" void $entry($sig) {
  int blocks = min((n + 255) / 256, 1024);
  map_kernel<<<blocks, 256>>>(${names});
}
"""
_UNROLL = """
// Each block covers 4 * 256 consecutive elements; thread t takes t, t + 256, ... (coalesced).
constexpr int THREADS = 256, ITEMS = 4;

__global__ void map_kernel($sig) {
  int base = blockIdx.x * THREADS * ITEMS + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS;
    if (i < n) $out[i] = f($call);
  }
}

extern "C" void $entry($sig) {
  map_kernel<<<(n + THREADS * ITEMS - 1) / (THREADS * ITEMS), THREADS>>>(${names});
}
"""


def _vectorized(dtype: str, ins: list[str], out: str, kw: dict[str, str]) -> str:
    vt, lanes = {"float32": ("float4", "xyzw"), "int32": ("int4", "xyzw"), "float64": ("double2", "xy")}[dtype]
    width = len(lanes)
    loads = "\n".join(f"    {vt} v_{v} = reinterpret_cast<const {vt}*>({v})[j];" for v in ins)
    apply = "\n".join(f"    r.{c} = f({', '.join(f'v_{v}.{c}' for v in ins)});" for c in lanes)
    return fill(
        """
// $W-wide vector loads and stores over the aligned body, then a scalar tail.
__global__ void map_vec(int nv, $sig) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  for (int j = tid; j < nv; j += stride) {
$loads
    $VT r;
$apply
    reinterpret_cast<$VT*>($out)[j] = r;
  }
  for (int i = $W * nv + tid; i < n; i += stride) $out[i] = f($call);
}

extern "C" void $entry($sig) {
  bool aligned = (($ptrs) % 16) == 0;  // cudaMalloc gives 256-byte alignment
  int nv = aligned ? n / $W : 0;
  int blocks = max(1, min((max(nv, 1) + 255) / 256, 2048));
  map_vec<<<blocks, 256>>>(nv, ${names});
}
""",
        W=width, VT=vt, loads=loads, apply=apply, **kw,
    )
