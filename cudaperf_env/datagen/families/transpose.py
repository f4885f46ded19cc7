"""Transposes: batched 2-D transposes with an elementwise map, stored or accumulated, int and float."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, INT_EPILOGUES, float_epilogue, int_epilogue

_INT_INIT = {"dist": "randint", "low": 0, "high": 1000}
STRUCTURES = [(d, i, acc) for d, i, acc in grid(("float32", "float64"), range(len(FLOAT_EPILOGUES)), (False, True))] \
    + [("int32", i, acc) for i, acc in grid(range(len(INT_EPILOGUES)), (False, True))]  # fmt: skip


def transpose(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y[b][c][r] = f(x[b][r][c]) (or += ) for a batch of rows x cols matrices."""
    dtype, index, accumulate = nth(variant, STRUCTURES)
    if dtype == "int32":
        f = int_epilogue(index, int(rng.integers(2, 9)), int(rng.integers(1, 256)))
    else:
        f = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.5)))
    batched = bool(rng.integers(0, 2))
    t = CTYPE[dtype]
    op = "+=" if accumulate else "="
    sig = f"int batch, int rows, int cols, const {t}* x, {t}* y"
    head = fill("#include <math.h>\n__device__ __forceinline__ $T f($T v) { return $f; }\n", T=t, f=f)
    reference = fill("""#include <math.h>
static $T f($T v) { return $f; }
void transpose($sig) {
  for (int b = 0; b < batch; ++b)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        y[((long)b * cols + c) * rows + r] $op f(x[((long)b * rows + r) * cols + c]);
}""", T=t, f=f, sig=sig, op=op)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "strided-writes"], head + fill(_NAIVE, T=t, sig=sig, op=op)),
        impl("read_outputs", ["thread-per-element", "coalesced-writes"], head + fill(_BY_OUTPUT, T=t, sig=sig, op=op)),
        impl("smem_tiled", ["shared-memory-tiling", "coalesced", "multi-element-per-thread", "bank-conflict-padding"],
             head + fill(_TILED, T=t, sig=sig, op=op)),
    ]
    bsym: str | int = "B" if batched else 1
    args = [scalar("batch", "int32", bsym), scalar("rows", "int32", "R"), scalar("cols", "int32", "C"),
            buffer("x", "in", dtype, [bsym, "R", "C"], _INT_INIT if dtype == "int32" else None),
            buffer("y", "inout" if accumulate else "out", dtype, [bsym, "C", "R"],
                   _INT_INIT if dtype == "int32" else None)]  # fmt: skip
    configs = [{"R": 32, "C": 32}, {"R": 67, "C": 45}, {"R": 256, "C": 320}]
    hidden, perf = [{"R": 101, "C": 77}], [{"R": 8192, "C": 8192}]
    if batched:
        for c, b in zip([*configs, *hidden, *perf], [2, 3, 4, 3, 8], strict=True):
            c["B"] = b
    return task(
        name="transpose", family="transpose", entry="transpose", args=args,
        description=f"Transpose each of batch rows x cols row-major {dtype} matrices with a map: "
        f"y[b][c][r] {op} f(x[b][r][c]), f(v) = {f}.",
        configs=configs, hidden=hidden, perf=perf, reference=reference, implementations=impls,
    )


_NAIVE = """
// One thread per input element: reads coalesced, writes strided by rows.
__global__ void transpose_kernel($sig) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y, b = blockIdx.z;
  if (r < rows && c < cols) y[((long)b * cols + c) * rows + r] $op f(x[((long)b * rows + r) * cols + c]);
}
extern "C" void transpose($sig) {
  dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8, batch);
  transpose_kernel<<<grid, block>>>(batch, rows, cols, x, y);
}
"""
_BY_OUTPUT = """
// One thread per output element: writes coalesced, reads strided by cols.
__global__ void transpose_kernel($sig) {
  int r = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y * blockDim.y + threadIdx.y, b = blockIdx.z;
  if (r < rows && c < cols) y[((long)b * cols + c) * rows + r] $op f(x[((long)b * rows + r) * cols + c]);
}
extern "C" void transpose($sig) {
  dim3 block(32, 8), grid((rows + 31) / 32, (cols + 7) / 8, batch);
  transpose_kernel<<<grid, block>>>(batch, rows, cols, x, y);
}
"""
_TILED = """
// 32 x 32 tile through shared memory (padded against bank conflicts); 32 x 8 threads, 4 rows each.
constexpr int TILE = 32, ROWS = 8;
__global__ void transpose_tiled($sig) {
  __shared__ $T tile[TILE][TILE + 1];
  int b = blockIdx.z, c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
  const $T* xb = x + (long)b * rows * cols;
  $T* yb = y + (long)b * rows * cols;
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    int r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = f(xb[(long)r * cols + c]);
  }
  __syncthreads();
  for (int k = threadIdx.y; k < TILE; k += ROWS) {
    int c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) yb[(long)c * rows + r] $op tile[threadIdx.x][k];
  }
}
extern "C" void transpose($sig) {
  dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE, batch);
  transpose_tiled<<<grid, block>>>(batch, rows, cols, x, y);
}
"""
