"""Kronecker-structured products (kron, Khatri-Rao, Kronecker sum) and symmetrization / band extraction."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, TOL_MAP, buffer, fill, grid, impl, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue, to_double

# kind -> (value of output element (row i * p + k, column j * q + l), a shape, b shape, symbols of n, q).
KRON_KINDS: dict[str, tuple[str, list[str], list[str], str, str | int]] = {
    "kron": ("alpha * a[(long)i * n + j] * b[(long)k * q + l]", ["M", "N"], ["P", "Q"], "N", "Q"),
    "kron_add": ("c[o] + alpha * a[(long)i * n + j] * b[(long)k * q + l]", ["M", "N"], ["P", "Q"], "N", "Q"),
    "khatri_rao": ("alpha * a[(long)i * n + j] * b[(long)k * n + j]", ["M", "N"], ["P", "N"], "N", 1),
    "kron_sum": ("alpha * ((k == l ? a[(long)i * n + j] : 0) + (i == j ? b[(long)k * q + l] : 0))",
                 ["M", "M"], ["P", "P"], "M", "P"),
}  # fmt: skip
KRON_STRUCTURES = grid(sorted(KRON_KINDS), ("float32", "float64"), range(len(FLOAT_EPILOGUES)))
_KRON_CONFIGS = {
    "MNPQ": ([{"M": 5, "N": 7, "P": 9, "Q": 11}, {"M": 16, "N": 16, "P": 16, "Q": 16},
              {"M": 33, "N": 17, "P": 13, "Q": 31}], [{"M": 9, "N": 31, "P": 7, "Q": 5}],
             [{"M": 64, "N": 64, "P": 64, "Q": 64}]),
    "MNP": ([{"M": 7, "N": 5, "P": 9}, {"M": 64, "N": 100, "P": 33}, {"M": 129, "N": 64, "P": 31}],
            [{"M": 31, "N": 97, "P": 17}], [{"M": 512, "N": 4096, "P": 512}]),
    "MP": ([{"M": 5, "P": 9}, {"M": 16, "P": 32}, {"M": 33, "P": 13}], [{"M": 7, "P": 31}], [{"M": 128, "P": 64}]),
}  # fmt: skip


def kron(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """c[(i * p + k) * (n * q) + j * q + l] = epilogue(value(i, j, k, l)) for a Kronecker-structured product."""
    kind, dtype, index = nth(variant, KRON_STRUCTURES)
    value, a_shape, b_shape, n_sym, q_sym = KRON_KINDS[kind]
    t = CTYPE[dtype]
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    syms = "MNPQ" if kind in ("kron", "kron_add") else "MNP" if kind == "khatri_rao" else "MP"
    configs, hidden, perf = _KRON_CONFIGS[syms]
    sig = f"int m, int n, int p, int q, {t} alpha, const {t}* a, const {t}* b, {t}* c"
    kw = {"T": t, "sig": sig, "value": value.replace(" : 0)", f" : ({t})0)"), "epi": epi}
    head = fill("""#include <math.h>
__device__ __forceinline__ $T epilogue($T v) { return $epi; }
__device__ __forceinline__ $T kvalue(int n, int q, $T alpha, const $T* a, const $T* b, const $T* c, long o,
                                     int i, int j, int k, int l) { return $value; }
""", **kw)  # fmt: skip
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
void kron($sig) {
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < p; ++k)
      for (int j = 0; j < n; ++j)
        for (int l = 0; l < q; ++l) {
          long o = ((long)i * p + k) * ((long)n * q) + (long)j * q + l;
          c[o] = epilogue($value);
        }
}""", **kw)  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element", "2d-grid"], head + fill(_K_NAIVE, **kw)),
        impl("grid_stride", ["thread-per-element", "grid-stride", "coalesced"], head + fill(_K_STRIDE, **kw)),
        impl("block_per_a_entry", ["block-per-tile", "register-reuse"], head + fill(_K_BLOCK, **kw)),
    ]
    args = [scalar("m", "int32", "M"), scalar("n", "int32", n_sym), scalar("p", "int32", "P"),
            scalar("q", "int32", q_sym), scalar("alpha", dtype, round(float(rng.uniform(0.5, 2.0)), 3)),
            buffer("a", "in", dtype, a_shape), buffer("b", "in", dtype, b_shape),
            buffer("c", "inout" if kind == "kron_add" else "out", dtype, ["M", "P", n_sym, q_sym])]  # fmt: skip
    return task(
        name=f"kron_{kind}", family="kron", entry="kron", args=args,
        description=f"Kronecker-structured product ({kind}, {dtype}): a is {a_shape[0].lower()} x "
        f"{a_shape[1].lower()}, b is {b_shape[0].lower()} x {b_shape[1].lower()} (row-major); c is (m * p) x "
        f"(n * q) row-major and for i < m, k < p, j < n, l < q (here n = {n_sym.lower()}, q = "
        f"{str(q_sym).lower()}) with o = (i * p + k) * (n * q) + j * q + l: c[o] = epilogue({kw['value']}), "
        f"epilogue(v) = {epi}.",
        configs=configs, hidden=hidden, perf=perf, reference=reference, implementations=impls,
        tolerance=TOL_MAP[dtype],
    )  # fmt: skip


_K_NAIVE = """
__global__ void kron_kernel(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  long col = blockIdx.x * (long)blockDim.x + threadIdx.x, row = blockIdx.y * (long)blockDim.y + threadIdx.y;
  long cols = (long)n * q;
  if (row >= (long)m * p || col >= cols) return;
  int i = (int)(row / p), k = (int)(row % p), j = (int)(col / q), l = (int)(col % q);
  long o = row * cols + col;
  c[o] = epilogue(kvalue(n, q, alpha, a, b, c, o, i, j, k, l));
}
extern "C" void kron(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  long rows = (long)m * p, cols = (long)n * q;
  dim3 block(32, 8), grid((unsigned)((cols + 31) / 32), (unsigned)((rows + 7) / 8));
  kron_kernel<<<grid, block>>>(m, n, p, q, alpha, a, b, c);
}
"""
_K_STRIDE = """
// Flat grid-stride loop over c: consecutive threads write consecutive elements.
__global__ void kron_kernel(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  long cols = (long)n * q, total = (long)m * p * cols;
  for (long o = blockIdx.x * (long)blockDim.x + threadIdx.x; o < total; o += (long)gridDim.x * blockDim.x) {
    long row = o / cols, col = o % cols;
    int i = (int)(row / p), k = (int)(row % p), j = (int)(col / q), l = (int)(col % q);
    c[o] = epilogue(kvalue(n, q, alpha, a, b, c, o, i, j, k, l));
  }
}
extern "C" void kron(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  long total = (long)m * p * n * q;
  int blocks = (int)min((total + 255) / 256, (long)2048);
  kron_kernel<<<blocks, 256>>>(m, n, p, q, alpha, a, b, c);
}
"""
_K_BLOCK = """
// One block per entry (i, j) of a: the block writes the p x q output block that a[i][j] scales.
__global__ void kron_kernel(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  int i = blockIdx.y, j = blockIdx.x;
  long cols = (long)n * q;
  for (int t = threadIdx.x; t < p * q; t += blockDim.x) {
    int k = t / q, l = t % q;
    long o = ((long)i * p + k) * cols + (long)j * q + l;
    c[o] = epilogue(kvalue(n, q, alpha, a, b, c, o, i, j, k, l));
  }
}
extern "C" void kron(int m, int n, int p, int q, $T alpha, const $T* a, const $T* b, $T* c) {
  int threads = min(256, (p * q + 31) / 32 * 32);
  dim3 grid(n, m);
  kron_kernel<<<grid, threads>>>(m, n, p, q, alpha, a, b, c);
}
"""


# kind -> value of out[i][j] from aij = a[i][j], aji = a[j][i]; band kinds also take lo and hi.
SYM_KINDS = {
    "sym": "alpha * (aij + aji) * 0.5f",
    "skew": "alpha * (aij - aji) * 0.5f",
    "band": "(j - i >= -lo && j - i <= hi) ? alpha * aij : 0.0f",
    "sym_band": "(j - i >= -lo && j - i <= hi) ? alpha * (aij + aji) * 0.5f : 0.0f",
    "fill_from_lower": "alpha * (i >= j ? aij : aji)",
    "fill_from_upper": "alpha * (i <= j ? aij : aji)",
}
SYM_STRUCTURES = grid(sorted(SYM_KINDS), ("float32", "float64"), (False, True), range(len(FLOAT_EPILOGUES)))


def sym_band(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[i][j] = f(a[i][j], a[j][i], i, j): symmetrization, skew part, band masks and triangle mirroring."""
    kind, dtype, accumulate, index = nth(variant, SYM_STRUCTURES)
    t = CTYPE[dtype]
    value = to_double(SYM_KINDS[kind]) if dtype == "float64" else SYM_KINDS[kind]
    epi = float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0)))
    band = "band" in kind
    lohi = "int lo, int hi, " if band else ""
    kw = {"T": t, "value": value, "sig": f"int n, {lohi}{t} alpha, const {t}* a, {t}* out",
          "call": f"n, {'lo, hi, ' if band else ''}alpha, a, out", "lohi": lohi,
          "op": "+=" if accumulate else "=", "epi": epi}  # fmt: skip
    head = fill("""#include <math.h>
__device__ __forceinline__ $T epilogue($T v) { return $epi; }
__device__ __forceinline__ $T sval($lohi$T alpha, $T aij, $T aji, int i, int j) { return epilogue($value); }
""", **kw)  # fmt: skip
    reference = fill("""#include <math.h>
static $T epilogue($T v) { return $epi; }
void sym_band($sig) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      $T aij = a[(long)i * n + j], aji = a[(long)j * n + i];
      out[(long)i * n + j] $op epilogue($value);
    }
}""", **kw)  # fmt: skip
    kw["pass"] = "lo, hi, " if band else ""
    impls = [
        impl("naive", ["thread-per-element", "2d-grid", "strided"], head + fill(_S_NAIVE, **kw)),
        impl("smem_tiled", ["shared-memory-tiling", "coalesced", "padding"], head + fill(_S_TILED, **kw)),
        impl("pair_per_thread", ["thread-per-pair", "symmetric-reuse"], head + fill(_S_PAIR, **kw)),
    ]
    args = [scalar("n", "int32", "N")]
    if band:
        args += [scalar("lo", "int32", int(rng.integers(0, 4))), scalar("hi", "int32", int(rng.integers(0, 6)))]
    args += [scalar("alpha", dtype, round(float(rng.uniform(0.5, 2.0)), 3)), buffer("a", "in", dtype, ["N", "N"]),
             buffer("out", "inout" if accumulate else "out", dtype, ["N", "N"])]  # fmt: skip
    return task(
        name=f"sym_band_{kind}", family="sym_band", entry="sym_band", args=args,
        description=f"Structured copy of an n x n row-major matrix ({kind}, {dtype}): "
        f"out[i * n + j] {kw['op']} epilogue({value}) with aij = a[i * n + j], aji = a[j * n + i] and "
        f"epilogue(v) = {epi}.",
        configs=[{"N": 33}, {"N": 129}, {"N": 500}], hidden=[{"N": 257}], perf=[{"N": 8192}],
        reference=reference, implementations=impls, tolerance=TOL_MAP[dtype],
    )  # fmt: skip


_S_NAIVE = """
// a[j][i] is read down a column: consecutive threads touch addresses n elements apart.
__global__ void sym_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && j < n) out[(long)i * n + j] $op sval($pass alpha, a[(long)i * n + j], a[(long)j * n + i], i, j);
}
extern "C" void sym_band($sig) {
  dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
  sym_kernel<<<grid, block>>>($call);
}
"""
_S_TILED = """
// The tile (bi, bj) and its mirror (bj, bi) are both loaded row-wise (coalesced) into shared memory;
// the +1 padding keeps the transposed reads free of bank conflicts.
constexpr int TILE = 32, ROWS = 8;
__global__ void sym_kernel($sig) {
  __shared__ $T mirror[TILE][TILE + 1];
  int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
    int row = bx + r, col = by + threadIdx.x;  // mirror tile: rows of a from the block's columns
    if (row < n && col < n) mirror[r][threadIdx.x] = a[(long)row * n + col];
  }
  __syncthreads();
  int j = bx + threadIdx.x;
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
    int i = by + r;
    if (i < n && j < n) out[(long)i * n + j] $op sval($pass alpha, a[(long)i * n + j], mirror[threadIdx.x][r], i, j);
  }
}
extern "C" void sym_band($sig) {
  dim3 block(TILE, ROWS), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
  sym_kernel<<<grid, block>>>($call);
}
"""
_S_PAIR = """
// Threads of the upper triangle (i <= j) each read a[i][j] and a[j][i] once and write both outputs;
// blocks entirely below the diagonal exit at once.
__global__ void sym_kernel($sig) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || j >= n || i > j) return;
  $T aij = a[(long)i * n + j], aji = a[(long)j * n + i];
  out[(long)i * n + j] $op sval($pass alpha, aij, aji, i, j);
  if (i != j) out[(long)j * n + i] $op sval($pass alpha, aji, aij, j, i);
}
extern "C" void sym_band($sig) {
  dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  sym_kernel<<<grid, block>>>($call);
}
"""
