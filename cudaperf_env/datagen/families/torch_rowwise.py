"""PyTorch row-wise models over the last dimension: reductions, softmax / log-softmax, LayerNorm and RMSNorm.

A row computation is a list of reduction passes (sum, max, min of an expression
of the row's element ``xj``), scalar statements between them, and an output per
row or per element; :func:`_kernels` turns one such description into three
strategies (thread per row, block per row with a shared-memory tree, warp per row
with shuffles), so every family gets the same three implementations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, impl, pick, scalar
from cudaperf_env.datagen.families.torch_common import Chain, chain, module_source, pipeline, torch_task

CONFIGS = [{"B": 8, "D": 1000}, {"B": 13, "D": 781}, {"B": 32, "D": 256}]
HIDDEN = [{"B": 5, "D": 2049}]
PERF = [{"B": 4096, "D": 8192}]
INPUT_INIT = {"dist": "normal", "mean": 0, "std": 1.0}
COMBINE = {"sum": ("0.0f", "a + b"), "max": ("-INFINITY", "fmaxf(a, b)"), "min": ("INFINITY", "fminf(a, b)")}


@dataclass(frozen=True)
class Pass:
    """One reduction over the row: ``var = op over j of elem`` (``elem`` reads ``xj`` and earlier scalars)."""

    var: str
    op: str
    elem: str


@dataclass(frozen=True)
class RowProgram:
    """A row computation: passes with scalar statements after each, then the output expression."""

    passes: tuple[tuple[Pass, str], ...]
    out: str
    per_element: bool
    residual: bool = False
    affine: str = ""  # "", "weight" or "weight_bias": per-feature parameters of shape [D]


def row_reduce(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(reduce(pre(x), dim=-1)) with reduce one of sum, mean, amax, amin, norm, logsumexp."""
    pre, post = chain(rng, int(rng.integers(0, 3))), chain(rng, int(rng.integers(0, 2)))
    kind = pick(rng, ("sum", "mean", "amax", "amin", "norm", "logsumexp"))
    torch_op = {"sum": "torch.sum(x, dim=-1)", "mean": "torch.mean(x, dim=-1)", "amax": "torch.amax(x, dim=-1)",
                "amin": "torch.amin(x, dim=-1)", "norm": "torch.linalg.vector_norm(x, dim=-1)",
                "logsumexp": "torch.logsumexp(x, dim=-1)"}[kind]  # fmt: skip
    passes = {
        "sum": ((Pass("s", "sum", "xj"), "float r = s;"),),
        "mean": ((Pass("s", "sum", "xj"), "float r = s / dim;"),),
        "amax": ((Pass("r", "max", "xj"), ""),),
        "amin": ((Pass("r", "min", "xj"), ""),),
        "norm": ((Pass("q", "sum", "xj * xj"), "float r = sqrtf(q);"),),
        "logsumexp": ((Pass("m", "max", "xj"), ""), (Pass("s", "sum", "expf(xj - m)"), "float r = m + logf(s);")),
    }[kind]
    program = RowProgram(passes, "post(r)", per_element=False)
    body = [*pre.torch_lines(), f"x = {torch_op}", *post.torch_lines(), "return x"]
    tol = {"sum": {"rtol": 1.0e-3, "atol": 1.0e-3}, "mean": {"rtol": 1.0e-3, "atol": 1.0e-5}}.get(
        kind, {"rtol": 1.0e-3, "atol": 1.0e-4})
    words = pipeline("x", pre.words, f"{kind}(dim=-1)", post.words)
    return _task("row_reduce", f"Row-wise reduction y = {words} (left to right) of a [B, D] float32 tensor to [B].",
                 _source(f"Computes {words}.", body), program, pre, post, tol)  # fmt: skip


def softmax(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = softmax or log_softmax of pre(x) over the last dimension."""
    pre, log = chain(rng, int(rng.integers(0, 3))), bool(rng.integers(0, 2))
    passes = ((Pass("m", "max", "xj"), ""), (Pass("s", "sum", "expf(xj - m)"), ""))
    out = "(xj - m) - logf(s)" if log else "expf(xj - m) / s"
    name = "log_softmax" if log else "softmax"
    body = [*pre.torch_lines(), f"return torch.{name}(x, dim=-1)"]
    # softmax outputs are about 1/D: a small atol, or an all-zero output would pass
    tol = {"rtol": 1.0e-3, "atol": 1.0e-4} if log else {"rtol": 1.0e-3, "atol": 1.0e-7}
    words = pipeline("x", pre.words, f"{name}(dim=-1)")
    description = f"Row-wise y = {words} (left to right) of a [B, D] float32 tensor."
    return _task("softmax", description, _source(f"Computes {words}.", body),
                 RowProgram(passes, f"post({out})", per_element=True), pre, Chain(()), tol)  # fmt: skip


def norm(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x[, r])`` = post(LayerNorm or RMSNorm of pre(x [+ r])): the norm + residual block."""
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 3)))
    residual, rms = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    if rms:
        passes: tuple[tuple[Pass, str], ...] = ((Pass("q", "sum", "xj * xj"), "float rstd = rsqrtf(q / dim + 1e-6f);"),)
        out, layer, affine = "post(xj * rstd * weight[j])", "nn.RMSNorm(dim, eps=1e-6)", "weight"
    else:
        passes = ((Pass("s", "sum", "xj"), "float mean = s / dim;"),
                  (Pass("q", "sum", "(xj - mean) * (xj - mean)"), "float rstd = rsqrtf(q / dim + 1e-5f);"))
        out, layer, affine = "post((xj - mean) * rstd * weight[j] + bias[j])", "nn.LayerNorm(dim)", "weight_bias"
    body = [("x = x + r" if residual else ""), *pre.torch_lines(), "x = self.norm(x)", *post.torch_lines(),
            "return x"]  # fmt: skip
    name = "rmsnorm" if rms else "layernorm"
    words = pipeline("(x + r)" if residual else "x", pre.words, name, post.words)
    source = _source(f"Computes {words}.", [line for line in body if line], init=f"self.norm = {layer}",
                     residual=residual)  # fmt: skip
    program = RowProgram(passes, out, per_element=True, residual=residual, affine=affine)
    return _task("norm", f"y = {words} (left to right), the norm over the last dimension of a [B, D] float32 "
                 "tensor with its learned per-feature parameters.", source, program, pre, post,
                 {"rtol": 1.0e-3, "atol": 1.0e-4})


def _source(doc: str, body: list[str], init: str = "", residual: bool = False) -> str:
    return module_source(
        doc=doc, init_params="dim" if init else "", init_body=[init] if init else [],
        forward_params="x, r" if residual else "x", forward_body=body, constants={"batch_size": 16, "dim": 1000},
        inputs=["torch.randn(batch_size, dim)"] * (2 if residual else 1), init_inputs=["dim"] if init else [],
    )


def _task(family: str, description: str, source: str, program: RowProgram, pre: Chain, post: Chain,
          tol: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    inputs = [buffer("x", "in", "float32", ["B", "D"], INPUT_INIT)]
    if program.residual:
        inputs.append(buffer("r", "in", "float32", ["B", "D"], INPUT_INIT))
    params = []
    if program.affine:
        params.append(("norm.weight", buffer("weight", "in", "float32", ["D"],
                                             {"dist": "uniform", "low": 0.5, "high": 1.5})))  # fmt: skip
    if program.affine == "weight_bias":
        params.append(("norm.bias", buffer("bias", "in", "float32", ["D"], {"dist": "uniform", "low": -0.5,
                                                                          "high": 0.5})))  # fmt: skip
    out_shape = ["B", "D"] if program.per_element else ["B"]
    names = [a["name"] for a in inputs] + [a["name"] for _, a in params]
    sig = ", ".join(f"const float* {n}" for n in names) + ", float* y, int batch, int dim"
    call = ", ".join([*names, "y", "batch", "dim"])
    head = pre.device_function("pre") + post.device_function("post")
    impls = [impl(name, strategies, head + code) for name, strategies, code in _kernels(program, sig, call)]
    return torch_task(
        name=family, family=family, description=description, source=source, inputs=inputs, parameters=params,
        outputs=[buffer("y", "out", "float32", out_shape)], sizes=[scalar("batch", "int32", "B"),
                                                                   scalar("dim", "int32", "D")],
        init_inputs=["D"] if program.affine else [], configs=CONFIGS, hidden=HIDDEN, perf=PERF,
        implementations=impls, tolerance=tol,
    )


def _element(program: RowProgram) -> str:
    return "pre(row[j] + rrow[j])" if program.residual else "pre(row[j])"


def _rows(program: RowProgram) -> str:
    rrow = "  const float* rrow = r + (long long)b * dim;\n" if program.residual else ""
    return f"  const float* row = x + (long long)b * dim;\n{rrow}"


def _write(program: RowProgram, loop: str) -> str:
    if not program.per_element:
        return "y[b] = " + program.out + ";"
    return f"{loop} {{ float xj = {_element(program)}; y[(long long)b * dim + j] = {program.out}; }}"


def _kernels(program: RowProgram, sig: str, call: str) -> list[tuple[str, list[str], str]]:
    """Thread-per-row, block-per-row and warp-per-row kernels of ``program``."""
    xj = _element(program)
    serial, block, warp = [], [], []
    for p, after in program.passes:
        ident, _ = COMBINE[p.op]
        serial.append(f"  float {p.var} = {ident};\n  for (int j = 0; j < dim; ++j) {{ float xj = {xj}; "
                      f"{p.var} = combine_{p.op}({p.var}, {p.elem}); }}\n  {after}\n")  # fmt: skip
        strided = (f"  float {p.var} = {ident};\n  for (int j = LANE; j < dim; j += STEP) {{ float xj = {xj}; "
                   f"{p.var} = combine_{p.op}({p.var}, {p.elem}); }}\n")
        block.append(strided.replace("LANE", "threadIdx.x").replace("STEP", "blockDim.x")
                     + f"  {p.var} = block_{p.op}({p.var}, shared);\n  {after}\n")  # fmt: skip
        warp.append(strided.replace("LANE", "lane").replace("STEP", "32")
                    + f"  {p.var} = warp_{p.op}({p.var});\n  {after}\n")
    combines = "".join(f"__device__ __forceinline__ float combine_{op}(float a, float b) {{ return {c}; }}\n"
                       for op, (_, c) in COMBINE.items())  # fmt: skip
    only_first = "" if program.per_element else "if (threadIdx.x == 0) "
    only_lane0 = "" if program.per_element else "if (lane == 0) "
    thread = (f"{combines}\n__global__ void row_kernel({sig}) {{\n  int b = blockIdx.x * blockDim.x + threadIdx.x;\n"
              f"  if (b >= batch) return;\n{_rows(program)}{''.join(serial)}"
              f"  {_write(program, 'for (int j = 0; j < dim; ++j)')}\n}}\n\n"
              f"extern \"C\" void forward({sig}) {{\n  row_kernel<<<(batch + 127) / 128, 128>>>({call});\n}}\n")
    blocked = (f"{combines}{BLOCK_REDUCE}\n__global__ void row_kernel({sig}) {{\n  __shared__ float shared[256];\n"
               f"  int b = blockIdx.x;\n{_rows(program)}{''.join(block)}"
               f"  {only_first}{_write(program, 'for (int j = threadIdx.x; j < dim; j += blockDim.x)')}\n}}\n\n"
               f"extern \"C\" void forward({sig}) {{\n  row_kernel<<<batch, 256>>>({call});\n}}\n")
    warped = (f"{combines}{WARP_REDUCE}\n__global__ void row_kernel({sig}) {{\n"
              f"  int lane = threadIdx.x & 31;\n  int b = blockIdx.x * 8 + (threadIdx.x >> 5);\n"
              f"  if (b >= batch) return;  // whole warps leave together: the shuffles stay full-warp\n"
              f"{_rows(program)}{''.join(warp)}"
              f"  {only_lane0}{_write(program, 'for (int j = lane; j < dim; j += 32)')}\n}}\n\n"
              f"extern \"C\" void forward({sig}) {{\n  row_kernel<<<(batch + 7) / 8, 256>>>({call});\n}}\n")
    return [("thread_per_row", ["thread-per-row"], thread),
            ("block_per_row", ["block-per-row", "shared-memory", "tree-reduction", "coalesced"], blocked),
            ("warp_per_row", ["warp-per-row", "warp-shuffle", "coalesced"], warped)]


BLOCK_REDUCE = "".join(f"""
__device__ float block_{op}(float v, float* shared) {{
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
    if (threadIdx.x < s) shared[threadIdx.x] = combine_{op}(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }}
  float total = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return total;
}}
""" for op in COMBINE)
WARP_REDUCE = "".join(f"""
__device__ float warp_{op}(float v) {{
  for (int offset = 16; offset > 0; offset >>= 1) v = combine_{op}(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}}
""" for op in COMBINE)
