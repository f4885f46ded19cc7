"""Outer products and rank-1/rank-2 updates (BLAS ger / syr2) with an elementwise epilogue."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_MAP, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

# kind -> (value of element (i, j) before the epilogue, whether a is updated in place, square)
KINDS = {
    "ger": ("a[(long)i * n + j] + alpha * x[i] * y[j]", True, False),
    "ger_beta": ("beta * a[(long)i * n + j] + alpha * x[i] * y[j]", False, False),
    "outer": ("alpha * x[i] * y[j]", False, False),
    "syr2": ("a[(long)i * n + j] + alpha * (x[i] * y[j] + y[i] * x[j])", True, True),
}
STRUCTURES = grid(sorted(KINDS), ("float32", "float64"), range(len(FLOAT_EPILOGUES)))


def ger(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[i][j] = epilogue(value(i, j)) with value a rank-1 (ger, outer) or rank-2 (syr2) update of A."""
    kind, dtype, index = nth(variant, STRUCTURES)
    value, inplace, square = KINDS[kind]
    t = CTYPE[dtype]
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 3.0)))
    rows = "N" if square else "M"
    args: list[dict[str, Any]] = [scalar("m", "int32", rows), scalar("n", "int32", "N"),
                                  scalar("alpha", dtype, round(float(rng.uniform(-2.0, 2.0)), 3))]  # fmt: skip
    if kind == "ger_beta":
        args.append(scalar("beta", dtype, round(float(rng.uniform(0.25, 1.5)), 3)))
    args += [buffer("x", "in", dtype, [rows]), buffer("y", "in", dtype, [rows if square else "N"])]
    if kind == "outer":
        dst = "c"
        args.append(buffer("c", "out", dtype, [rows, "N"]))
    elif inplace:
        dst = "a"
        args.append(buffer("a", "inout", dtype, [rows, "N"]))
    else:
        dst = "c"
        args += [buffer("a", "in", dtype, [rows, "N"]), buffer("c", "out", dtype, [rows, "N"])]
    sig = ", ".join(f"{t} {a['name']}" if a["role"] == "scalar" and a["dtype"] != "int32" else
                    f"int {a['name']}" if a["role"] == "scalar" else
                    f"{'const ' if a['role'] == 'in' else ''}{t}* {a['name']}" for a in args)  # fmt: skip
    call = ", ".join(a["name"] for a in args)
    kw = {"T": t, "sig": sig, "call": call, "value": value, "dst": dst, "epi": epi}
    head = fill("#include <math.h>\n__device__ __forceinline__ $T epilogue($T v) { return $epi; }\n", **kw)
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
void ger($sig) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) $dst[(long)i * n + j] = epilogue($value);
}""", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], head + fill(_NAIVE, **kw)),
        impl("grid_stride", ["thread-per-element", "grid-stride", "coalesced"], head + fill(_STRIDE, **kw)),
        impl("column_rows", ["multi-element-per-thread", "register-reuse", "coalesced"], head + fill(_ROWS, **kw)),
    ]
    shape = "n x n (m = n)" if square else "m x n"
    return task(
        name=f"ger_{kind}", family="ger", entry="ger", args=args,
        description=f"Outer-product update ({kind}, {dtype}): for the {shape} row-major matrix, "
        f"{dst}[i * n + j] = epilogue({value}) with epilogue(v) = {epi}"
        f"{' (a is updated in place)' if inplace else ''}.",
        configs=[{"M": 31, "N": 64}, {"M": 129, "N": 77}, {"M": 300, "N": 257}] if not square else
        [{"N": 33}, {"N": 129}, {"N": 301}], hidden=[{"M": 97, "N": 211}] if not square else [{"N": 211}],
        perf=[{"M": 8192, "N": 8192}] if not square else [{"N": 8192}],
        reference=reference, implementations=impls, tolerance=TOL_MAP[dtype],
    )  # fmt: skip


_NAIVE = """
__global__ void ger_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < m && j < n) $dst[(long)i * n + j] = epilogue($value);
}
extern "C" void ger($sig) {
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  ger_kernel<<<grid, block>>>($call);
}
"""
_STRIDE = """
// Flat grid-stride loop over the matrix: consecutive threads write consecutive elements.
__global__ void ger_kernel($sig) {
  long total = (long)m * n;
  for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < total; t += (long)gridDim.x * blockDim.x) {
    int i = (int)(t / n), j = (int)(t % n);
    $dst[t] = epilogue($value);
  }
}
extern "C" void ger($sig) {
  long total = (long)m * n;
  int blocks = (int)min((total + 255) / 256, (long)1024);
  ger_kernel<<<blocks, 256>>>($call);
}
"""
_ROWS = """
// Each thread owns column j for ROWS consecutive rows: y[j] stays in a register, x[i] is a broadcast read.
constexpr int ROWS = 8;
__global__ void ger_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i0 = blockIdx.y * ROWS;
  if (j >= n) return;
  #pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    int i = i0 + r;
    if (i < m) $dst[(long)i * n + j] = epilogue($value);
  }
}
extern "C" void ger($sig) {
  dim3 block(128), grid((n + 127) / 128, (m + ROWS - 1) / ROWS);
  ger_kernel<<<grid, block>>>($call);
}
"""
