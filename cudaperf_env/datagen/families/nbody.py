"""All-pairs n-body interactions: softened forces, potentials and kernel sums over every pair of bodies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import to_double

# Pair weight as a function of the softened squared distance r2 (float32 spelling); $c is a constant.
KERNELS = {
    "inverse_cube": "1.0f / (r2 * sqrtf(r2))",
    "inverse": "1.0f / sqrtf(r2)",
    "inverse_square": "1.0f / r2",
    "gaussian": "expf(-$c * r2)",
    "yukawa": "expf(-$c * sqrtf(r2)) / sqrtf(r2)",
    "plummer_soft": "r2 / ((r2 + $c) * (r2 + $c))",
}
PREFACTORS = {"one": "1.0f", "own_mass": "mass[i]", "minus_own_mass": "-mass[i]", "scaled": "$g"}
STRUCTURES = grid(("float32", "float64"), (2, 3), (False, True), sorted(KERNELS), (False, True), sorted(PREFACTORS))
_TOL = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-3}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-9}}


def nbody(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """out[i] = pre_i * sum_j mass[j] * w(r2_ij) (* d_ij for vector outputs), r2 = |p_j - p_i|^2 + eps2."""
    dtype, dims, soa, kname, vector, pname = nth(variant, STRUCTURES)
    conv = to_double if dtype == "float64" else (lambda e: e)
    kern = conv(fill(KERNELS[kname], c=lit(float(rng.uniform(0.5, 3.0)), "float32")))
    pre = conv(fill(PREFACTORS[pname], g=lit(float(rng.uniform(-2.0, 2.0)), "float32")))
    t, axes = CTYPE[dtype], "xyz"[:dims]

    def at(j: str, c: int) -> str:
        return f"pos[(long){c} * n + {j}]" if soa else f"pos[(long){j} * {dims} + {c}]"

    def load(s: str, i: str) -> str:
        return f"{t} " + ", ".join(f"{a}{s} = {at(i, c)}" for c, a in enumerate(axes)) + ";"

    outs = [f"a{a}" for a in axes] if vector else ["acc"]

    def zero(s: str, acc_t: str = t) -> str:
        return f"{acc_t} " + ", ".join(f"{o}{s} = 0" for o in outs) + ";"

    def update(s: str, src: Callable[[int], str], mj: str) -> str:
        delta = "; ".join(f"{t} d{a} = {src(c)} - {a}{s}" for c, a in enumerate(axes))
        r2 = " + ".join(f"d{a} * d{a}" for a in axes)
        acc = " ".join(f"a{a}{s} += w * d{a};" for a in axes) if vector else f"acc{s} += w;"
        return f"{{ {delta}; {t} r2 = eps2 + {r2}; {t} w = {mj} * kern(r2); {acc} }}"

    def store(s: str, i: str) -> str:
        k = len(outs)
        return " ".join(f"out[(long){i} * {k} + {c}] = pre({i}, mass) * {o}{s};" for c, o in enumerate(outs))

    sig = f"int n, {t} eps2, const {t}* pos, const {t}* mass, {t}* out"
    helpers = f"$Q {t} kern({t} r2) {{ return {kern}; }}\n$Q {t} pre(int i, const {t}* mass) {{ return {pre}; }}\n"
    kw = {"T": t, "sig": sig, "zero": zero(""), "load": load("", "i"),
          "upd": update("", lambda c: at("j", c), "mass[j]"), "store": store("", "i"), "loadc": load("", "ic"),
          "loadsh": " ".join(f"s{a}[threadIdx.x] = {at('j', c)};" for c, a in enumerate(axes)),
          "shdecl": ", ".join(f"s{a}[TILE]" for a in axes) + ", sm[TILE]",
          "updsh": update("", lambda c: f"s{axes[c]}[jj]", "sm[jj]")}  # fmt: skip
    two = {"load2": load("0", "i0c") + " " + load("1", "i1c"), "zero2": zero("0") + " " + zero("1"),
           "upd2": update("0", lambda c: f"s{axes[c]}[jj]", "sm[jj]") + "\n        "
           + update("1", lambda c: f"s{axes[c]}[jj]", "sm[jj]"),
           "store0": store("0", "i0"), "store1": store("1", "i1")}  # fmt: skip
    head = "#include <math.h>\n" + helpers.replace("$Q", "__device__ __forceinline__")
    ref_kw = {**kw, "zero": zero("", "double")}  # accurate sums: float32 kernels are checked against them
    impls = [
        impl("naive", ["thread-per-body", "all-pairs"], head + fill(_NAIVE, **kw)),
        impl("smem_tiled", ["thread-per-body", "shared-memory-tiling", "all-pairs"], head + fill(_TILED, **kw)),
        impl(
            "two_per_thread",
            ["shared-memory-tiling", "register-blocking", "multi-element-per-thread"],
            head + fill(_TWO, **kw, **two),
        ),
    ]
    eps2 = lit(float(rng.uniform(0.01, 0.1)), dtype)
    out_shape: list[str | int] = ["N", dims] if vector else ["N"]
    args = [scalar("n", "int32", "N"), scalar("eps2", dtype, float(eps2.rstrip("f"))),
            buffer("pos", "in", dtype, [dims, "N"] if soa else ["N", dims], {"dist": "uniform", "low": -1, "high": 1}),
            buffer("mass", "in", dtype, ["N"], {"dist": "uniform", "low": 0.5, "high": 1.5}),
            buffer("out", "out", dtype, out_shape)]  # fmt: skip
    layout = (
        f"pos is {dims} x n (one plane per coordinate)"
        if soa
        else f"pos is n x {dims} (coordinates of a body together)"
    )
    what = (
        "out[i][c] = pre(i) * sum_j mass[j] * w(r2_ij) * d_c"
        if vector
        else "out[i] = pre(i) * sum_j mass[j] * w(r2_ij)"
    )
    return task(
        name="nbody", family="nbody", entry="nbody", args=args,
        description=f"All-pairs {dims}-D n-body interaction ({dtype}): {layout}; for bodies i, j (j = i included), "
        f"d = p_j - p_i, r2_ij = eps2 + |d|^2, w(r2) = {kern}, pre(i) = {pre}; {what}. Sum over j in any order.",
        configs=[{"N": 31}, {"N": 257}, {"N": 1023}], hidden=[{"N": 777}], perf=[{"N": 65536}, {"N": 131071}],
        reference="#include <math.h>\n" + helpers.replace("$Q", "static") + fill(_REF, **ref_kw),
        implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


_REF = """
void nbody($sig) {
  for (int i = 0; i < n; ++i) {
    $load
    $zero
    for (int j = 0; j < n; ++j) $upd
    $store
  }
}
"""
_NAIVE = """
// One thread per body; every thread streams all n bodies from global memory.
__global__ void nbody_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  $load
  $zero
  for (int j = 0; j < n; ++j) $upd
  $store
}
extern "C" void nbody($sig) {
  nbody_kernel<<<(n + 127) / 128, 128>>>(n, eps2, pos, mass, out);
}
"""
_TILED = """
// Bodies are staged TILE at a time in shared memory; each is read from global once per block.
constexpr int TILE = 128;
__global__ void nbody_tiled($sig) {
  __shared__ $T $shdecl;
  int i = blockIdx.x * TILE + threadIdx.x;
  int ic = min(i, n - 1);  // threads past the end still load tiles; their sums are dropped
  $loadc
  $zero
  for (int j0 = 0; j0 < n; j0 += TILE) {
    int j = j0 + threadIdx.x;
    if (j < n) { $loadsh sm[threadIdx.x] = mass[j]; }
    __syncthreads();
    int jend = min(TILE, n - j0);
    for (int jj = 0; jj < jend; ++jj) $updsh
    __syncthreads();
  }
  if (i < n) { $store }
}
extern "C" void nbody($sig) {
  nbody_tiled<<<(n + TILE - 1) / TILE, TILE>>>(n, eps2, pos, mass, out);
}
"""
_TWO = """
// Shared-memory tiles, and two bodies per thread: each staged body is used twice from registers.
constexpr int TILE = 128;
__global__ void nbody_two($sig) {
  __shared__ $T $shdecl;
  int i0 = blockIdx.x * 2 * TILE + threadIdx.x, i1 = i0 + TILE;
  int i0c = min(i0, n - 1), i1c = min(i1, n - 1);
  $load2
  $zero2
  for (int j0 = 0; j0 < n; j0 += TILE) {
    int j = j0 + threadIdx.x;
    if (j < n) { $loadsh sm[threadIdx.x] = mass[j]; }
    __syncthreads();
    int jend = min(TILE, n - j0);
    for (int jj = 0; jj < jend; ++jj) {
        $upd2
    }
    __syncthreads();
  }
  if (i0 < n) { $store0 }
  if (i1 < n) { $store1 }
}
extern "C" void nbody($sig) {
  nbody_two<<<(n + 2 * TILE - 1) / (2 * TILE), TILE>>>(n, eps2, pos, mass, out);
}
"""
