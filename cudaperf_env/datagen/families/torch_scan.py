"""PyTorch scans along a dimension: cumsum, cumprod, cummax, reverse and exclusive cumsum, with pointwise operators.

``y = post(scan(pre(x), dim))`` for ``x`` of shape ``[B, R, C]`` scanned along
the last dim (lines of ``C`` elements) or the middle one (lines of ``R``
elements, ``C`` apart). A line is what one scan covers; ``at(g, j)`` is where
the ``j``-th element of line ``g`` in scan order lives (a reverse scan reads its
line backwards). Three strategies: a thread per line scanning serially, a block
per line running a Hillis-Steele scan in shared memory chunk by chunk, and a
warp per line scanning 32 elements at a time with shuffles, both carrying the
running total between chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task

# kind -> (PyTorch expression of x along $d, combine(a, b), identity, tolerance)
KINDS = {
    "cumsum": ("torch.cumsum(x, dim=$d)", "a + b", "0.0f", {"rtol": 1.0e-3, "atol": 1.0e-3}),
    "cumprod": ("torch.cumprod(x, dim=$d)", "a * b", "1.0f", {"rtol": 1.0e-3, "atol": 1.0e-5}),
    "cummax": ("torch.cummax(x, dim=$d).values", "fmaxf(a, b)", "-INFINITY", {"rtol": 1.0e-4, "atol": 1.0e-5}),
    "reverse_cumsum": ("torch.flip(torch.cumsum(torch.flip(x, dims=[$d]), dim=$d), dims=[$d])", "a + b", "0.0f",
                       {"rtol": 1.0e-3, "atol": 1.0e-3}),
    "exclusive_cumsum": ("torch.cumsum(x, dim=$d) - x", "a + b", "0.0f", {"rtol": 1.0e-3, "atol": 1.0e-3}),
}  # fmt: skip
# (scan kind, dim, operators before, operators after); cumprod takes no operators before (its inputs stay near 1).
STRUCTURES = grid(tuple(KINDS), (-1, 1), (0, 1), (0, 1))
CONFIGS = {-1: [{"B": 2, "R": 5, "C": 1000}, {"B": 3, "R": 7, "C": 333}, {"B": 4, "R": 3, "C": 64}],
           1: [{"B": 2, "R": 300, "C": 7}, {"B": 3, "R": 77, "C": 13}, {"B": 2, "R": 1000, "C": 4}]}  # fmt: skip
HIDDEN = {-1: [{"B": 1, "R": 3, "C": 2049}], 1: [{"B": 1, "R": 2049, "C": 3}]}
PERF = {-1: [{"B": 16, "R": 64, "C": 8192}], 1: [{"B": 16, "R": 4096, "C": 128}]}


def cumsum_dim(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(scan(pre(x), dim)): cumsum / cumprod / cummax / reverse / exclusive cumsum, dim -1 or 1."""
    kind, dim, n_pre, n_post = nth(variant, STRUCTURES)
    pre = chain(rng, 0 if kind == "cumprod" else n_pre)
    post = chain(rng, n_post)
    torch_expr, combine, ident, tol = KINDS[kind]
    words = pipeline("x", pre.words, f"{kind}(dim={dim})", post.words)
    source = module_source(
        doc=f"Computes {words}.", init_params="", init_body=[], forward_params="x",
        forward_body=[*pre.torch_lines(), f"x = {fill(torch_expr, d=dim)}", *post.torch_lines(), "return x"],
        constants={"batch_size": 16, "rows": 64, "cols": 8192} if dim == -1 else
        {"batch_size": 16, "rows": 4096, "cols": 128},
        inputs=["torch.rand(batch_size, rows, cols) * 0.2 + 0.9" if kind == "cumprod"
                else "torch.randn(batch_size, rows, cols)"], init_inputs=[],
    )  # fmt: skip
    reverse = kind == "reverse_cumsum"
    pos = "(len - 1 - j)" if reverse else "j"
    at = f"g * cols + {pos}" if dim == -1 else f"(g / cols) * rows * cols + (long long){pos} * cols + g % cols"
    head = (pre.device_function("pre") + post.device_function("post")
            + fill(_HEAD, at=at, combine=combine, ident=ident,
                   lines="(long long)batch * rows" if dim == -1 else "(long long)batch * cols",
                   len="cols" if dim == -1 else "rows", along="last" if dim == -1 else "middle",
                   order="last to first" if reverse else "first to last"))  # fmt: skip
    exclusive = kind == "exclusive_cumsum"
    kw = {"out": "carry" if exclusive else "incl"}
    impls = [impl("thread_per_line", ["thread-per-row", "sequential-scan"], head + fill(_SERIAL, **kw)),
             impl("block_scan", ["block-per-row", "shared-memory", "hillis-steele-scan", "coalesced"],
                  head + fill(_BLOCK, out="excl" if exclusive else "incl",
                              excl="\n    float excl = t > 0 ? buf[cur][t - 1] : ident();" if exclusive else "")),
             impl("warp_scan", ["warp-per-row", "warp-shuffle", "carry-between-chunks"],
                  head + fill(_WARP, out="excl" if exclusive else "incl",
                              excl=_WARP_EXCL if exclusive else ""))]  # fmt: skip
    init = {"dist": "uniform", "low": 0.9, "high": 1.1} if kind == "cumprod" else {"dist": "normal", "mean": 0,
                                                                                     "std": 1.0}  # fmt: skip
    scanned = "C" if dim == -1 else "R"
    return torch_task(
        name="cumsum_dim", family="cumsum_dim",
        description=f"y = {words} (left to right) of a [B, R, C] float32 tensor: a scan along dim {dim} (lines of "
                    f"{scanned} elements); y [B, R, C].",
        source=source, inputs=[buffer("x", "in", "float32", ["B", "R", "C"], init)], parameters=[],
        outputs=[buffer("y", "out", "float32", ["B", "R", "C"])],
        sizes=[scalar("batch", "int32", "B"), scalar("rows", "int32", "R"), scalar("cols", "int32", "C")],
        init_inputs=[], configs=CONFIGS[dim], hidden=HIDDEN[dim], perf=PERF[dim], implementations=impls,
        tolerance=tol,
    )  # fmt: skip


_HEAD = """
// Line g (of line_count) holds line_length elements along the $along dim, scanned $order; element j (in scan
// order) of line g is x[at(g, j, ...)].
__host__ __device__ inline long long line_count(int batch, int rows, int cols) {
  (void)rows; (void)cols;
  return $lines;
}
__host__ __device__ inline int line_length(int rows, int cols) { (void)rows; (void)cols; return $len; }
__device__ __forceinline__ long long at(long long g, int j, int len, int rows, int cols) {
  (void)len; (void)rows;
  return $at;
}
__device__ __forceinline__ float combine(float a, float b) { return $combine; }
__device__ __forceinline__ float ident() { return $ident; }
"""
_SERIAL = """
// One thread per line: a running value, element by element.
__global__ void scan_kernel(const float* x, float* y, int batch, int rows, int cols) {
  long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= line_count(batch, rows, cols)) return;
  int len = line_length(rows, cols);
  float carry = ident();
  for (int j = 0; j < len; ++j) {
    long long i = at(g, j, len, rows, cols);
    float incl = combine(carry, pre(x[i]));
    y[i] = post($out);
    carry = incl;
  }
}

extern "C" void forward(const float* x, float* y, int batch, int rows, int cols) {
  long long lines = line_count(batch, rows, cols);
  scan_kernel<<<(unsigned)((lines + 127) / 128), 128>>>(x, y, batch, rows, cols);
}
"""
_BLOCK = """
// One block per line, THREADS elements at a time: a Hillis-Steele scan in shared memory (double-buffered), then
// the carry of the earlier chunks combined in.
constexpr int THREADS = 256;

__global__ void scan_kernel(const float* x, float* y, int batch, int rows, int cols) {
  __shared__ float buf[2][THREADS];
  long long g = blockIdx.x;
  int t = threadIdx.x, len = line_length(rows, cols);
  float carry = ident();
  for (int j0 = 0; j0 < len; j0 += THREADS) {
    int j = j0 + t;
    long long i = j < len ? at(g, j, len, rows, cols) : 0;
    int cur = 0;
    buf[0][t] = j < len ? pre(x[i]) : ident();
    __syncthreads();
    for (int offset = 1; offset < THREADS; offset <<= 1) {
      float v = buf[cur][t];
      if (t >= offset) v = combine(buf[cur][t - offset], v);
      buf[cur ^ 1][t] = v;
      cur ^= 1;
      __syncthreads();
    }
    float incl = buf[cur][t];$excl
    if (j < len) y[i] = post(combine(carry, $out));
    carry = combine(carry, buf[cur][THREADS - 1]);
    __syncthreads();  // buf is rewritten by the next chunk
  }
}

extern "C" void forward(const float* x, float* y, int batch, int rows, int cols) {
  scan_kernel<<<(unsigned)line_count(batch, rows, cols), THREADS>>>(x, y, batch, rows, cols);
}
"""
_WARP_EXCL = """
    float excl = __shfl_up_sync(0xffffffffu, incl, 1);
    if (lane == 0) excl = ident();"""
_WARP = """
// One warp per line (8 per block), 32 elements at a time: an inclusive scan with __shfl_up_sync, the carry of the
// earlier chunks combined in and passed on from lane 31.
__global__ void scan_kernel(const float* x, float* y, int batch, int rows, int cols) {
  long long g = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31, len = line_length(rows, cols);
  if (g >= line_count(batch, rows, cols)) return;  // whole warps leave together: the shuffles stay full-warp
  float carry = ident();
  for (int j0 = 0; j0 < len; j0 += 32) {
    int j = j0 + lane;
    long long i = j < len ? at(g, j, len, rows, cols) : 0;
    float incl = j < len ? pre(x[i]) : ident();
    for (int offset = 1; offset < 32; offset <<= 1) {
      float up = __shfl_up_sync(0xffffffffu, incl, offset);
      if (lane >= offset) incl = combine(up, incl);
    }$excl
    if (j < len) y[i] = post(combine(carry, $out));
    carry = combine(carry, __shfl_sync(0xffffffffu, incl, 31));
  }
}

extern "C" void forward(const float* x, float* y, int batch, int rows, int cols) {
  long long lines = line_count(batch, rows, cols);
  scan_kernel<<<(unsigned)((lines + 7) / 8), 256>>>(x, y, batch, rows, cols);
}
"""
