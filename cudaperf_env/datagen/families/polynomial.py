"""Polynomial and rational-function evaluation over arrays: Horner, Estrin, Clenshaw, coefficient tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import CTYPE, buffer, fill, grid, impl, lit, nth, scalar, task
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue

_TOL = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-10, "atol": 1.0e-12}}
KINDS = ("horner", "rational", "chebyshev", "with_derivative", "coef_table", "row_coefs")
STRUCTURES = grid(KINDS, ("float32", "float64"), range(len(FLOAT_EPILOGUES)))


def _horner(coefs: Sequence[str], var: str, acc: str = "r") -> str:
    """Statements leaving sum_k coefs[k] * var^k in ``acc`` (Horner's rule)."""
    lines = [f"{acc} = {coefs[-1]};"] + [f"{acc} = {acc} * {var} + {c};" for c in reversed(coefs[:-1])]
    return " ".join(lines)


def _estrin(coefs: Sequence[str], var: str, t: str, acc: str = "r", tag: str = "e") -> str:
    """Statements leaving sum_k coefs[k] * var^k in ``acc`` by Estrin's scheme (pairs, then powers var^2, var^4 ...)."""
    terms, power, lines, level = list(coefs), var, [], 0
    while len(terms) > 1:
        nxt = [f"({terms[k]} + {terms[k + 1]} * {power})" if k + 1 < len(terms) else terms[k]
               for k in range(0, len(terms), 2)]  # fmt: skip
        terms = []
        for k, expr in enumerate(nxt):
            lines.append(f"{t} {tag}{level}_{k} = {expr};")
            terms.append(f"{tag}{level}_{k}")
        if len(terms) > 1:
            lines.append(f"{t} {tag}p{level} = {power} * {power};")
            power = f"{tag}p{level}"
        level += 1
    return " ".join(lines) + f" {acc} = {terms[0]};"


def _baked(rng: np.random.Generator, kind: str, t: str, dtype: str) -> tuple[str, str, str]:
    """(body of the naive function, body of the alternative one, description) for kinds with coefficients in code."""
    deg = int(rng.integers(2, 10))
    c = [lit(float(v), dtype) for v in rng.uniform(-1.5, 1.5, deg + 1)]
    if kind == "horner":
        return (
            f"{t} r; {_horner(c, 'x')} return r;",
            f"{t} r; {_estrin(c, 'x', t)} return r;",
            f"y[i] = p(x[i]) with p(x) = sum_k c_k x^k, c = ({', '.join(c)})",
        )
    if kind == "rational":
        qdeg = int(rng.integers(1, 5))
        b = ["1.0" if dtype == "float64" else "1.0f"] + [lit(float(v), dtype) for v in rng.uniform(0.1, 1.0, qdeg)]
        return (f"{t} x2 = x * x, r, q; {_horner(c, 'x')} {_horner(b, 'x2', 'q')} return r / q;",
                f"{t} x2 = x * x, r, q; {_estrin(c, 'x', t)} {_estrin(b, 'x2', t, 'q', 'q')} return r / q;",
                f"y[i] = p(x[i]) / q(x[i]) with p(x) = sum_k c_k x^k, c = ({', '.join(c)}), "
                f"q(x) = sum_k b_k x^(2k), b = ({', '.join(b)})")  # fmt: skip
    if kind == "chebyshev":
        clen = " ".join(f"b0 = {ck} + x2 * b1 - b2; b2 = b1; b1 = b0;" for ck in reversed(c[1:]))
        fwd = " ".join(f"s += {ck} * tk; tn = x2 * tk - tm; tm = tk; tk = tn;" for ck in c[1:])
        return (
            f"{t} x2 = 2 * x, b0 = 0, b1 = 0, b2 = 0; {clen} return {c[0]} + x * b1 - b2;",
            f"{t} x2 = 2 * x, s = {c[0]}, tm = 1, tk = x, tn; {fwd} (void)tn; return s;",
            f"y[i] = sum_k c_k T_k(x[i]) (Chebyshev polynomials of the first kind), c = ({', '.join(c)})",
        )
    d = [lit(float(k * float(v.rstrip("f"))), dtype) for k, v in enumerate(c)][1:]
    return (
        f"{t} r, s; {_horner(c, 'x')} {_horner(d, 'x', 's')} *dy = s; return r;",
        f"{t} r = {c[-1]}, s = 0; "
        + " ".join(f"s = s * x + r; r = r * x + {ck};" for ck in reversed(c[:-1]))
        + " *dy = s; return r;",
        f"y[i] = p(x[i]) and dy[i] = p'(x[i]) with p(x) = sum_k c_k x^k, c = ({', '.join(c)})",
    )


def polynomial(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """y = f(x) elementwise for a polynomial / rational / Chebyshev f, with coefficients in code or in a table."""
    kind, dtype, index = nth(variant, STRUCTURES)
    t = CTYPE[dtype]
    xin = {"dist": "uniform", "low": -1, "high": 1}
    post = fill("$Q $T post($T v) { return $epi; }\n", Q="$Q", T=t,
                epi=float_epilogue(index, dtype, float(rng.uniform(0.5, 2.0))))
    if kind in ("coef_table", "row_coefs"):
        return _table_task(kind, dtype, t, int(rng.integers(3, 17)), xin, post)
    naive, alt, what = _baked(rng, kind, t, dtype)
    deriv = kind == "with_derivative"
    extra = f", {t}* dy" if deriv else ""
    sig = f"int n, const {t}* x, {t}* y" + (f", {t}* dy" if deriv else "")
    call = "n, x, y" + (", dy" if deriv else "")
    store = "y[i] = post(f(x[i]" + (", &dy[i]))" if deriv else "))")
    kw = {"sig": sig, "call": call, "store": store, "T": t}
    fn = f"$Q {t} f({t} x{extra}) {{ $body }}\n"
    head = "#include <math.h>\n" + (post + fn).replace("$Q", "__device__ __forceinline__")
    impls = [
        impl(
            "naive",
            ["thread-per-element", "horner" if kind != "chebyshev" else "clenshaw"],
            fill(head, body=naive) + fill(_NAIVE, **kw),
        ),
        impl(
            "grid_stride_x4",
            ["grid-stride", "multi-element-per-thread", "coalesced"],
            fill(head, body=naive) + fill(_GRID4, **kw),
        ),
        impl(
            "alt_scheme",
            ["thread-per-element", "chebyshev-recurrence" if kind == "chebyshev" else "estrin"],
            fill(head, body=alt) + fill(_NAIVE, **kw),
        ),
    ]
    outs = [buffer("y", "out", dtype, ["N"])] + ([buffer("dy", "out", dtype, ["N"])] if deriv else [])
    args = [scalar("n", "int32", "N"), buffer("x", "in", dtype, ["N"], xin), *outs]
    reference = "#include <math.h>\n" + fill((post + fn).replace("$Q", "static"), body=naive) + fill(_REF, **kw)
    return task(
        name=f"poly_{kind}", family="polynomial", entry="polyval", args=args,
        description=f"Elementwise polynomial evaluation ({dtype}, {kind.replace('_', ' ')}) over n inputs in "
        f"[-1, 1]: {what}, then y[i] is replaced by post(y[i]) with "
        f"{{ {' '.join(post.replace('$Q', 'static').split())} }}. Any evaluation scheme is accepted within the "
        f"tolerance.",
        configs=[{"N": 1000}, {"N": 4099}, {"N": 1000003}], hidden=[{"N": 77777}],
        perf=[{"N": 1 << 26}, {"N": 50000017}],
        reference=reference, implementations=impls, tolerance=_TOL[dtype],
    )  # fmt: skip


def _table_task(kind: str, dtype: str, t: str, deg: int, xin: dict[str, Any], post: str) -> dict[str, Any]:
    rows = kind == "row_coefs"
    cin = {"dist": "uniform", "low": -1, "high": 1}
    if rows:
        args = [scalar("rows", "int32", "R"), scalar("cols", "int32", "C"), scalar("deg", "int32", deg),
                buffer("coef", "in", dtype, ["R", deg + 1], cin), buffer("x", "in", dtype, ["R", "C"], xin),
                buffer("y", "out", dtype, ["R", "C"])]  # fmt: skip
        sig = f"int rows, int cols, int deg, const {t}* coef, const {t}* x, {t}* y"
        kw = {"sig": sig, "call": "rows, cols, deg, coef, x, y", "T": t}
        srcs = (_ROWS_REF, _ROWS_NAIVE, _ROWS_GRID, _ROWS_SMEM)
        cfg = {"configs": [{"R": 3, "C": 5}, {"R": 129, "C": 257}, {"R": 1001, "C": 999}],
               "hidden": [{"R": 77, "C": 301}],
               "perf": [{"R": 16384, "C": 4096}, {"R": 4097, "C": 16385}]}  # fmt: skip
        what = "y[r][j] = sum_k coef[r][k] * x[r][j]^k for k <= deg (coef is rows x (deg + 1), x and y rows x cols)"
    else:
        args = [scalar("n", "int32", "N"), scalar("deg", "int32", deg), buffer("coef", "in", dtype, [deg + 1], cin),
                buffer("x", "in", dtype, ["N"], xin), buffer("y", "out", dtype, ["N"])]  # fmt: skip
        kw = {"sig": f"int n, int deg, const {t}* coef, const {t}* x, {t}* y", "call": "n, deg, coef, x, y", "T": t}
        srcs = (_TAB_REF, _TAB_NAIVE, _TAB_GRID, _TAB_SMEM)
        cfg = {"configs": [{"N": 1000}, {"N": 4099}, {"N": 1000003}], "hidden": [{"N": 77777}],
               "perf": [{"N": 1 << 26}, {"N": 50000017}]}  # fmt: skip
        what = "y[i] = sum_k coef[k] * x[i]^k for k <= deg"
    dev = "#include <math.h>\n" + post.replace("$Q", "__device__ __forceinline__")
    impls = [
        impl("naive", ["thread-per-element", "horner"], dev + fill(srcs[1], **kw)),
        impl("grid_stride_x4", ["grid-stride", "multi-element-per-thread", "horner"], dev + fill(srcs[2], **kw)),
        impl(
            "smem_coefs",
            ["shared-memory", "horner", "block-per-row" if rows else "thread-per-element"],
            dev + fill(srcs[3], **kw),
        ),
    ]
    return task(
        name=f"poly_{kind}",
        family="polynomial",
        entry="polyval",
        args=args,
        description=f"Polynomial evaluation from a coefficient table ({dtype}, deg = {deg}, x in [-1, 1]): {what}, "
        f"then every output v is replaced by post(v) with {{ {' '.join(post.replace('$Q', 'static').split())} }}. "
        f"Any evaluation scheme is accepted within the tolerance.",
        reference="#include <math.h>\n" + post.replace("$Q", "static") + fill(srcs[0], **kw),
        implementations=impls,
        tolerance=_TOL[dtype],
        **cfg,
    )


_REF = """
void polyval($sig) {
  for (int i = 0; i < n; ++i) $store;
}
"""
_NAIVE = """
__global__ void polyval_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) $store;
}
extern "C" void polyval($sig) {
  polyval_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_GRID4 = """
// A fixed grid; 4 independent evaluations per thread per pass hide the latency of the dependent chain.
__global__ void polyval_kernel($sig) {
  for (int base = blockIdx.x * blockDim.x * 4 + threadIdx.x; base < n; base += gridDim.x * blockDim.x * 4) {
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      int i = base + u * blockDim.x;
      if (i < n) $store;
    }
  }
}
extern "C" void polyval($sig) {
  int blocks = min((n + 1023) / 1024, 1024);
  polyval_kernel<<<blocks > 0 ? blocks : 1, 256>>>($call);
}
"""
_TAB_REF = """
void polyval($sig) {
  for (int i = 0; i < n; ++i) {
    $T r = coef[deg];
    for (int k = deg - 1; k >= 0; --k) r = r * x[i] + coef[k];
    y[i] = post(r);
  }
}
"""
_TAB_NAIVE = """
__global__ void polyval_kernel($sig) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  $T r = coef[deg];
  for (int k = deg - 1; k >= 0; --k) r = r * x[i] + coef[k];
  y[i] = post(r);
}
extern "C" void polyval($sig) {
  polyval_kernel<<<(n + 255) / 256, 256>>>($call);
}
"""
_TAB_GRID = """
// Grid-stride, 4 elements per thread with interleaved Horner chains (the coefficient is loaded once for all 4).
__global__ void polyval_kernel($sig) {
  for (int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4; base < n; base += gridDim.x * blockDim.x * 4) {
    $T xv[4], r[4];
    for (int u = 0; u < 4; ++u) { xv[u] = base + u < n ? x[base + u] : ($T)0; r[u] = coef[deg]; }
    for (int k = deg - 1; k >= 0; --k) {
      $T c = coef[k];
      for (int u = 0; u < 4; ++u) r[u] = r[u] * xv[u] + c;
    }
    for (int u = 0; u < 4; ++u) if (base + u < n) y[base + u] = post(r[u]);
  }
}
extern "C" void polyval($sig) {
  int blocks = min((n + 1023) / 1024, 1024);
  polyval_kernel<<<blocks > 0 ? blocks : 1, 256>>>($call);
}
"""
_TAB_SMEM = """
// The coefficient table is staged in shared memory once per block.
__global__ void polyval_kernel($sig) {
  extern __shared__ unsigned char smem[];
  $T* cs = ($T*)smem;
  for (int k = threadIdx.x; k <= deg; k += blockDim.x) cs[k] = coef[k];
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  $T r = cs[deg];
  for (int k = deg - 1; k >= 0; --k) r = r * x[i] + cs[k];
  y[i] = post(r);
}
extern "C" void polyval($sig) {
  polyval_kernel<<<(n + 255) / 256, 256, sizeof($T) * (deg + 1)>>>($call);
}
"""
_ROWS_REF = """
void polyval($sig) {
  for (int rr = 0; rr < rows; ++rr)
    for (int j = 0; j < cols; ++j) {
      const $T* c = coef + (long)rr * (deg + 1);
      $T xv = x[(long)rr * cols + j], r = c[deg];
      for (int k = deg - 1; k >= 0; --k) r = r * xv + c[k];
      y[(long)rr * cols + j] = post(r);
    }
}
"""
_ROWS_NAIVE = """
// One thread per element; each thread reads its row's coefficients from global memory.
__global__ void polyval_kernel($sig) {
  long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (t >= (long)rows * cols) return;
  const $T* c = coef + (t / cols) * (deg + 1);
  $T xv = x[t], r = c[deg];
  for (int k = deg - 1; k >= 0; --k) r = r * xv + c[k];
  y[t] = post(r);
}
extern "C" void polyval($sig) {
  long total = (long)rows * cols;
  polyval_kernel<<<(unsigned)((total + 255) / 256), 256>>>($call);
}
"""
_ROWS_GRID = """
// Grid-stride over all elements, 4 per thread per pass, blockDim apart (coalesced).
__global__ void polyval_kernel($sig) {
  long total = (long)rows * cols;
  for (long base = blockIdx.x * (long)blockDim.x * 4 + threadIdx.x; base < total;
       base += (long)gridDim.x * blockDim.x * 4) {
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      long t = base + (long)u * blockDim.x;
      if (t < total) {
        const $T* c = coef + (t / cols) * (deg + 1);
        $T xv = x[t], r = c[deg];
        for (int k = deg - 1; k >= 0; --k) r = r * xv + c[k];
        y[t] = post(r);
      }
    }
  }
}
extern "C" void polyval($sig) {
  long total = (long)rows * cols;
  long blocks = (total + 1023) / 1024;
  polyval_kernel<<<(unsigned)(blocks < 2048 ? (blocks > 0 ? blocks : 1) : 2048), 256>>>($call);
}
"""
_ROWS_SMEM = """
// One block per row: the row's coefficients go to shared memory once, threads stride the row.
__global__ void polyval_kernel($sig) {
  extern __shared__ unsigned char smem[];
  $T* cs = ($T*)smem;
  long rr = blockIdx.x;
  for (int k = threadIdx.x; k <= deg; k += blockDim.x) cs[k] = coef[rr * (deg + 1) + k];
  __syncthreads();
  for (int j = threadIdx.x; j < cols; j += blockDim.x) {
    $T xv = x[rr * cols + j], r = cs[deg];
    for (int k = deg - 1; k >= 0; --k) r = r * xv + cs[k];
    y[rr * cols + j] = post(r);
  }
}
extern "C" void polyval($sig) {
  polyval_kernel<<<rows, 256, sizeof($T) * (deg + 1)>>>($call);
}
"""
