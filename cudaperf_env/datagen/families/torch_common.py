"""Shared pieces of the PyTorch-to-CUDA generators: pointwise operators in both spellings, module source, task dict.

Every operator is written twice, as PyTorch (``x = torch.relu(x)``) and as a
float32 CUDA statement on ``v`` (``v = fmaxf(v, 0.0f);``), with the same
constants, so a generated kernel computes what the generated ``Model`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import fill, pick


@dataclass(frozen=True)
class PointOp:
    """One pointwise operator: its PyTorch and CUDA spellings (``$x``/``$v`` the value, ``$c`` a constant)."""

    name: str
    torch: str
    cuda: str
    low: float = 0.0
    high: float = 0.0


POINT_OPS: tuple[PointOp, ...] = (
    PointOp("relu", "torch.relu($x)", "fmaxf($v, 0.0f)"),
    PointOp("sigmoid", "torch.sigmoid($x)", "1.0f / (1.0f + expf(-$v))"),
    PointOp("tanh", "torch.tanh($x)", "tanhf($v)"),
    PointOp("gelu", "F.gelu($x)", "0.5f * $v * (1.0f + erff($v * 0.70710678118654752f))"),
    PointOp("silu", "F.silu($x)", "$v / (1.0f + expf(-$v))"),
    PointOp("leaky_relu", "F.leaky_relu($x, $c)", "$v > 0.0f ? $v : $cf * $v", 0.01, 0.3),
    PointOp("hardtanh", "F.hardtanh($x, -$c, $c)", "fminf(fmaxf($v, -$cf), $cf)", 0.5, 2.0),
    PointOp("scale", "$x * $c", "$v * $cf", 0.25, 3.0),
    PointOp("shift", "$x + $c", "$v + $cf", -1.0, 1.0),
    PointOp("abs", "torch.abs($x)", "fabsf($v)"),
    PointOp("elu", "F.elu($x)", "$v > 0.0f ? $v : expm1f($v)"),
    PointOp("softplus", "F.softplus($x)", "$v > 20.0f ? $v : log1pf(expf($v))"),
    PointOp("square", "$x * $x", "$v * $v"),
    PointOp("hardsigmoid", "F.hardsigmoid($x)", "fminf(fmaxf($v / 6.0f + 0.5f, 0.0f), 1.0f)"),
    PointOp("mish", "F.mish($x)", "$v * tanhf($v > 20.0f ? $v : log1pf(expf($v)))"),
    PointOp("clamp_min", "torch.clamp($x, min=$c)", "fmaxf($v, $cf)", -1.0, 0.0),
    PointOp("exp_neg_abs", "torch.exp(-torch.abs($x))", "expf(-fabsf($v))"),
    PointOp("softsign", "F.softsign($x)", "$v / (1.0f + fabsf($v))"),
)


@dataclass(frozen=True)
class Chain:
    """A sequence of pointwise operators with their constants."""

    ops: tuple[tuple[PointOp, float], ...]

    def torch_lines(self, var: str = "x") -> list[str]:
        """``x = op(x)`` lines of ``forward``."""
        return [f"{var} = {fill(op.torch, x=var, c=_py(c))}" for op, c in self.ops]

    def cuda_lines(self, var: str = "v") -> list[str]:
        """``v = op(v);`` statements of a device function."""
        return [f"{var} = {fill(op.cuda, v=var, cf=_cf(c))};" for op, c in self.ops]

    def device_function(self, name: str = "act") -> str:
        """``__device__ float name(float v)`` applying the chain (identity when empty)."""
        body = "".join(f"  {line}\n" for line in self.cuda_lines())
        return f"__device__ __forceinline__ float {name}(float v) {{\n{body}  return v;\n}}\n"

    @property
    def words(self) -> str:
        """``relu -> scale(0.5)`` ("" when empty)."""
        return " -> ".join(op.name + (f"({_py(c)})" if op.low != op.high else "") for op, c in self.ops)


def pipeline(*steps: str) -> str:
    """The non-empty ``steps`` joined left to right: ``x -> relu -> sum(dim=-1)``."""
    return " -> ".join(s for s in steps if s)


def chain(rng: np.random.Generator, length: int, exclude: Sequence[str] = ()) -> Chain:
    """``length`` random pointwise operators, no operator twice in a row."""
    ops: list[tuple[PointOp, float]] = []
    options = [op for op in POINT_OPS if op.name not in exclude]
    while len(ops) < length:
        op = pick(rng, options)
        if ops and ops[-1][0].name == op.name:
            continue
        c = round(float(rng.uniform(op.low, op.high)), 3) if op.low != op.high else 0.0
        ops.append((op, c))
    return Chain(tuple(ops))


def _py(c: float) -> str:
    return repr(float(c))


def _cf(c: float) -> str:
    return repr(float(c)) + "f"


def module_source(*, doc: str, init_params: str, init_body: Sequence[str], forward_params: str,
                  forward_body: Sequence[str], constants: Mapping[str, int], inputs: Sequence[str],
                  init_inputs: Sequence[str]) -> str:  # fmt: skip
    """A KernelBench-shaped module: ``Model``, module constants, ``get_inputs()``, ``get_init_inputs()``."""
    body = "".join(f"        {line}\n" for line in init_body)
    fwd = "".join(f"        {line}\n" for line in forward_body)
    consts = "".join(f"{k} = {v}\n" for k, v in constants.items())
    return (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        f"class Model(nn.Module):\n    \"\"\"{doc}\"\"\"\n\n"
        f"    def __init__(self{', ' + init_params if init_params else ''}):\n        super().__init__()\n{body}\n"
        f"    def forward(self, {forward_params}):\n{fwd}\n\n"
        f"{consts}\n\n"
        f"def get_inputs():\n    return [{', '.join(inputs)}]\n\n\n"
        f"def get_init_inputs():\n    return [{', '.join(init_inputs)}]\n"
    )


def torch_task(*, name: str, family: str, description: str, source: str, inputs: Sequence[Mapping[str, Any]],
               parameters: Sequence[tuple[str, Mapping[str, Any]]], outputs: Sequence[Mapping[str, Any]],
               sizes: Sequence[Mapping[str, Any]], init_inputs: Sequence[str | int | float],
               configs: Sequence[Mapping[str, int]], hidden: Sequence[Mapping[str, int]],
               perf: Sequence[Mapping[str, int]], implementations: Sequence[Mapping[str, Any]],
               tolerance: Mapping[str, float], entry: str = "forward") -> dict[str, Any]:  # fmt: skip
    """A torch2cuda task mapping (docs/torch2cuda.md); args are inputs, parameters, outputs, sizes in that order."""
    args = [*inputs, *(a for _, a in parameters), *outputs, *sizes]
    return {
        "schema": 1,
        "id": f"torch2cuda/{name}",
        "kind": "torch2cuda",
        "family": family,
        "description": " ".join(description.split()),
        "entry": entry,
        "args": [dict(a) for a in args],
        "configs": [dict(c) for c in configs],
        "hidden_configs": [dict(c) for c in hidden],
        "perf_configs": [dict(c) for c in perf],
        "tolerance": dict(tolerance),
        "reference": {
            "language": "pytorch",
            "source": source,
            "inputs": [a["name"] for a in inputs],
            "parameters": {key: a["name"] for key, a in parameters},
            "outputs": [a["name"] for a in outputs],
            "init_inputs": list(init_inputs),
        },
        "baseline": implementations[0]["name"],
        "implementations": [dict(i) for i in implementations],
    }
