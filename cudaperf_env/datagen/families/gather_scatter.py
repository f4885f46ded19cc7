"""Indexed memory access: gathers (elements, pairs, rows), permutation scatters, and atomic scatter-reduce, each
with an elementwise map g."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import (
    FLOAT_EPILOGUES,
    INT_EPILOGUES,
    float_epilogue,
    int_epilogue,
)

BIN = ("+", "-", "*")
_FTOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-3}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-9}}


def _maps(dtype: str) -> range:
    return range(len(INT_EPILOGUES if dtype == "int32" else FLOAT_EPILOGUES))


# (dtype, mode, map g, binary op): the op only where the mode combines two values, g only where it maps one.
GATHER_STRUCTURES = [(d, m, g, op) for d in ("float32", "float64", "int32")
                     for m in ("gather", "pair", "rows", "permute")
                     for g in _maps(d) for op in (BIN if m == "pair" else BIN[:1])] + \
    [(d, "op", 0, op) for d in ("float32", "float64", "int32") for op in BIN]  # fmt: skip


def gather(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Indexed reads or a permutation write: y[i] = g(x[idx[i]]), pairs, x[idx[i]] op z[i], rows, y[p[i]] = g(x[i])."""
    dtype, mode, index, op = nth(variant, GATHER_STRUCTURES)
    t = CTYPE[dtype]
    if dtype == "int32":
        g = int_epilogue(index, int(rng.integers(2, 9)), int(rng.integers(1, 256)))
    else:
        g = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    xi = {"dist": "randint", "low": -1000, "high": 1000} if dtype == "int32" else None
    idx_m = {"dist": "randint", "low": 0, "high": "M"}
    n, m = scalar("n", "int32", "N"), scalar("m", "int32", "M")
    if mode == "gather":
        args = [n, m, buffer("x", "in", dtype, ["M"], xi), buffer("idx", "in", "int32", ["N"], idx_m),
                buffer("y", "out", dtype, ["N"])]  # fmt: skip
        stmt, what = "y[i] = g(x[idx[i]]);", "y[i] = g(x[idx[i]]) for i < n, idx[i] in [0, m)"
    elif mode == "op":
        args = [n, m, buffer("x", "in", dtype, ["M"], xi), buffer("idx", "in", "int32", ["N"], idx_m),
                buffer("z", "in", dtype, ["N"], xi), buffer("y", "out", dtype, ["N"])]  # fmt: skip
        stmt, what = f"y[i] = x[idx[i]] {op} z[i];", f"y[i] = x[idx[i]] {op} z[i] for i < n, idx[i] in [0, m)"
    elif mode == "pair":
        args = [n, m, buffer("x", "in", dtype, ["M"], xi), buffer("ia", "in", "int32", ["N"], idx_m),
                buffer("ib", "in", "int32", ["N"], idx_m), buffer("y", "out", dtype, ["N"])]  # fmt: skip
        stmt = f"y[i] = g(x[ia[i]]) {op} x[ib[i]];"
        what = f"y[i] = g(x[ia[i]]) {op} x[ib[i]] for i < n, ia[i] and ib[i] in [0, m)"
    elif mode == "rows":
        args = [n, m, scalar("w", "int32", "W"), buffer("x", "in", dtype, ["M", "W"], xi),
                buffer("idx", "in", "int32", ["N"], idx_m), buffer("y", "out", dtype, ["N", "W"])]  # fmt: skip
        stmt = "y[(long)i * w + c] = g(x[(long)idx[i] * w + c]);"
        what = "row gather of row-major matrices: y[i][c] = g(x[idx[i]][c]) for i < n, c < w, idx[i] in [0, m)"
    else:
        args = [n, buffer("x", "in", dtype, ["N"], xi), buffer("p", "in", "int32", ["N"], {"dist": "permutation"}),
                buffer("y", "out", dtype, ["N"])]  # fmt: skip
        stmt, what = "y[p[i]] = g(x[i]);", "permutation scatter: y[p[i]] = g(x[i]) for i < n, p a permutation of 0..n-1"
    sig = ", ".join(_decl(a) for a in args)
    names = ", ".join(a["name"] for a in args)
    kparams = sig.replace("* ", "* __restrict__ ")
    rows = mode == "rows"
    loop = ("for (int i = 0; i < n; ++i)\n    for (int c = 0; c < w; ++c) " if rows
            else "for (int i = 0; i < n; ++i) ")  # fmt: skip
    reference = fill("#include <math.h>\nstatic $T g($T v) { return $g; }\nvoid gather($sig) {\n  $loop$stmt\n}",
                     T=t, g=g, sig=sig, loop=loop, stmt=stmt)  # fmt: skip
    head = fill("#include <math.h>\ntypedef $T T;\n__device__ __forceinline__ T g(T v) { return $g; }\n", T=t, g=g)
    kw = {"sig": sig, "kp": kparams, "names": names, "stmt": stmt}
    if rows:
        impls = [
            impl("naive", ["thread-per-element", "2d-grid"], head + fill(_R_NAIVE, **kw)),
            impl("warp_per_row", ["warp-per-row", "coalesced"], head + fill(_R_WARP, **kw)),
            impl("block_per_row", ["block-per-row", "coalesced", "grid-stride"], head + fill(_R_BLOCK, **kw)),
        ]
        configs = [{"N": 100, "M": 50, "W": 64}, {"N": 257, "M": 301, "W": 33}, {"N": 1000, "M": 129, "W": 129}]
        hidden, perf = [{"N": 511, "M": 77, "W": 45}], [{"N": 1 << 16, "M": 1 << 15, "W": 512}]
    else:
        impls = [
            impl("naive", ["thread-per-element"], head + fill(_E_NAIVE, **kw)),
            impl("unroll4", ["multi-element-per-thread", "loop-unrolling", "coalesced"], head + fill(_E_UNROLL, **kw)),
            impl("grid_stride", ["grid-stride"], head + fill(_E_GRID, **kw)),
        ]
        configs = [{"N": 1000, "M": 300}, {"N": 4097, "M": 5003}, {"N": 65537, "M": 1 << 16}]
        hidden, perf = [{"N": 30011, "M": 999}], [{"N": 1 << 25, "M": 1 << 24}]
        if mode == "permute":
            configs, hidden, perf = [{"N": 1000}, {"N": 4097}, {"N": 65537}], [{"N": 30011}], [{"N": 1 << 25}]
    return task(
        name="gather", family="gather", entry="gather", args=args,
        description=f"Indexed {dtype} access: {what}" + (f", with g(v) = {g}." if "g(" in stmt else "."),
        configs=configs, hidden=hidden, perf=perf, reference=reference, implementations=impls,
        tolerance=_FTOL.get(dtype),
    )


def _decl(a: dict[str, Any]) -> str:
    ctype = CTYPE[a["dtype"]]
    if a["role"] == "scalar":
        return f"{ctype} {a['name']}"
    return f"{'const ' if a['role'] == 'in' else ''}{ctype}* {a['name']}"


_E_NAIVE = """
__global__ void gather_kernel($kp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) $stmt
}
extern "C" void gather($sig) { gather_kernel<<<(n + 255) / 256, 256>>>($names); }
"""
_E_UNROLL = """
// Four elements per thread, strided by the block size so each of the four accesses is coalesced.
constexpr int THREADS = 256, ITEMS = 4;
__global__ void gather_kernel($kp) {
  int base = blockIdx.x * THREADS * ITEMS + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    int i = base + k * THREADS;
    if (i < n) $stmt
  }
}
extern "C" void gather($sig) {
  gather_kernel<<<(n + THREADS * ITEMS - 1) / (THREADS * ITEMS), THREADS>>>($names);
}
"""
_E_GRID = """
__global__ void gather_kernel($kp) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) $stmt
}
extern "C" void gather($sig) {
  int blocks = min((n + 255) / 256, 1024);
  gather_kernel<<<blocks, 256>>>($names);
}
"""
_R_NAIVE = """
__global__ void gather_kernel($kp) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && c < w) $stmt
}
extern "C" void gather($sig) {
  dim3 block(32, 8), grid((w + 31) / 32, (n + 7) / 8);
  gather_kernel<<<grid, block>>>($names);
}
"""
_R_WARP = """
// One warp per output row: the row index is read once, the columns are walked 32 at a time.
__global__ void gather_kernel($kp) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (i >= n) return;
  for (int c = lane; c < w; c += 32) $stmt
}
extern "C" void gather($sig) {
  gather_kernel<<<(n * 32 + 255) / 256, 256>>>($names);
}
"""
_R_BLOCK = """
// One block per output row (grid-stride over rows), 128 threads across the columns.
__global__ void gather_kernel($kp) {
  for (int i = blockIdx.x; i < n; i += gridDim.x)
    for (int c = threadIdx.x; c < w; c += blockDim.x) $stmt
}
extern "C" void gather($sig) {
  gather_kernel<<<min(n, 4096), 128>>>($names);
}
"""


SCATTER_STRUCTURES = [(d, op, w, g) for d in ("float32", "float64", "int32") for op in ("add", "max")
                      for w in (False, True) for g in _maps(d) if d != "float64" or op == "add"]


def scatter_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[b] = init combined with h(i) over all i with idx[i] == b (sum or max), by atomics."""
    dtype, op, weighted, index = nth(variant, SCATTER_STRUCTURES)
    t = CTYPE[dtype]
    if dtype == "int32":
        g = int_epilogue(index, int(rng.integers(2, 9)), int(rng.integers(1, 256)))
    else:
        g = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    h = "g(x[i]) * wt[i]" if weighted else "g(x[i])"
    xi = {"dist": "randint", "low": -1000, "high": 1000} if dtype == "int32" else None
    wi = {"dist": "randint", "low": -3, "high": 4} if dtype == "int32" else {"dist": "uniform", "low": 0, "high": 2}
    args = [scalar("n", "int32", "N"), scalar("m", "int32", "M"), buffer("x", "in", dtype, ["N"], xi),
            buffer("idx", "in", "int32", ["N"], {"dist": "randint", "low": 0, "high": "M"})]  # fmt: skip
    if weighted:
        args.append(buffer("wt", "in", dtype, ["N"], wi))
    args.append(buffer("out", "out", dtype, ["M"]))
    sig = ", ".join(_decl(a) for a in args)
    names = ", ".join(a["name"] for a in args)
    zero = {"float32": "0.0f", "float64": "0.0", "int32": "0"}[dtype]
    upd = "out[idx[i]] += h;" if op == "add" else "if (h > out[idx[i]]) out[idx[i]] = h;"
    reference = fill("#include <math.h>\nstatic $T g($T v) { return $g; }\nvoid scatter($sig) {\n"
                     "  for (int b = 0; b < m; ++b) out[b] = $zero;\n  for (int i = 0; i < n; ++i) {\n"
                     "    $T h = $h;\n    $upd\n  }\n}", T=t, g=g, sig=sig, zero=zero, h=h, upd=upd)  # fmt: skip
    if op == "add":
        atomic = "__device__ __forceinline__ void update(T* p, T v) { atomicAdd(p, v); }"
    elif dtype == "int32":
        atomic = "__device__ __forceinline__ void update(T* p, T v) { atomicMax(p, v); }"
    else:
        atomic = """// Float max by compare-and-swap on the bit pattern.
__device__ void update(float* p, float v) {
  int* q = (int*)p;
  int old = *q;
  while (__int_as_float(old) < v) {
    int prev = atomicCAS(q, old, __float_as_int(v));
    if (prev == old) break;
    old = prev;
  }
}"""
    head = fill("#include <math.h>\ntypedef $T T;\n__device__ __forceinline__ T g(T v) { return $g; }\n$atomic\n"
                "__device__ __forceinline__ T h_of(int i, $kp) { return $h; }\n", T=t, g=g, atomic=atomic, h=h,
                kp=sig.replace("* ", "* __restrict__ "))  # fmt: skip
    kw = {"sig": sig, "kp": sig.replace("* ", "* __restrict__ "), "names": names, "zero": zero}
    impls = [
        impl("naive", ["thread-per-element", "atomics"], head + fill(_SC_NAIVE, **kw)),
        impl("privatized", ["shared-memory", "privatization", "atomics", "grid-stride"], head + fill(_SC_PRIV, **kw)),
        impl("grid_stride", ["grid-stride", "atomics", "multi-element-per-thread"], head + fill(_SC_GRID, **kw)),
    ]
    red = "sum" if op == "add" else "max (starting from 0)"
    return task(
        name="scatter_reduce", family="scatter_reduce", entry="scatter", args=args,
        description=f"Scatter-{op} of n {dtype} values into m <= 2048 bins: out[b] = {red} of h(i) = {h} over all i "
        f"with idx[i] == b (0 for a bin no i hits), g(v) = {g}. Any summation order is accepted within the tolerance.",
        configs=[{"N": 1000, "M": 64}, {"N": 4097, "M": 1000}, {"N": 65537, "M": 2048}],
        hidden=[{"N": 30011, "M": 333}], perf=[{"N": 1 << 25, "M": 2048}], reference=reference,
        implementations=impls, tolerance=_FTOL.get(dtype),
    )


_SC_NAIVE = """
__global__ void zero_out(int m, T* out) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < m) out[b] = $zero;
}
__global__ void scatter_kernel($kp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) update(&out[idx[i]], h_of(i, $names));
}
extern "C" void scatter($sig) {
  zero_out<<<(m + 255) / 256, 256>>>(m, out);  // out arrives poisoned
  scatter_kernel<<<(n + 255) / 256, 256>>>($names);
}
"""
_SC_PRIV = """
// Each block reduces into a private copy of out in shared memory, then merges it with one atomic per bin.
constexpr int MAX_BINS = 2048;
__global__ void zero_out(int m, T* out) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < m) out[b] = $zero;
}
__global__ void scatter_kernel($kp) {
  __shared__ T local[MAX_BINS];
  for (int b = threadIdx.x; b < m; b += blockDim.x) local[b] = $zero;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    update(&local[idx[i]], h_of(i, $names));
  __syncthreads();
  for (int b = threadIdx.x; b < m; b += blockDim.x) update(&out[b], local[b]);
}
extern "C" void scatter($sig) {
  zero_out<<<(m + 255) / 256, 256>>>(m, out);
  int blocks = min((n + 1023) / 1024, 256);
  scatter_kernel<<<blocks, 256>>>($names);
}
"""
_SC_GRID = """
// A fixed grid; each thread handles four elements per step, unrolled, with global atomics.
__global__ void zero_out(int m, T* out) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < m; b += gridDim.x * blockDim.x) out[b] = $zero;
}
__global__ void scatter_kernel($kp) {
  int stride = gridDim.x * blockDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    #pragma unroll
    for (int k = 0; k < 4; ++k) update(&out[idx[i + k * stride]], h_of(i + k * stride, $names));
  }
  for (; i < n; i += stride) update(&out[idx[i]], h_of(i, $names));
}
extern "C" void scatter($sig) {
  zero_out<<<32, 256>>>(m, out);
  scatter_kernel<<<min((n + 1023) / 1024, 512), 256>>>($names);
}
"""
