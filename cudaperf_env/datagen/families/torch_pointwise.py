"""PyTorch pointwise models: chains of 1-5 activations, and a per-feature affine map fused with a chain."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, impl, scalar
from cudaperf_env.datagen.families.torch_common import Chain, chain, module_source, pipeline, torch_task

CONFIGS = [{"B": 16, "D": 1000}, {"B": 7, "D": 1823}, {"B": 64, "D": 1024}]
HIDDEN = [{"B": 3, "D": 4099}]
PERF = [{"B": 4096, "D": 4096}]
TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}  # libm vs CUDA transcendentals differ by ulps, compounding along a chain
INPUT_INIT = {"dist": "normal", "mean": 0, "std": 1.5}


def activation_chain(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = a chain of 1-5 pointwise operators on a [B, D] tensor."""
    ops = chain(rng, int(rng.integers(1, 6)))
    source = module_source(
        doc=f"Applies {ops.words} elementwise, left to right.", init_params="", init_body=[], forward_params="x",
        forward_body=[*ops.torch_lines(), "return x"], constants={"batch_size": 16, "dim": 1000},
        inputs=["torch.randn(batch_size, dim)"], init_inputs=[],
    )
    description = f"Elementwise y = {pipeline('x', ops.words)} (left to right) over a [B, D] float32 tensor."
    return _pointwise("activation_chain", description, source, ops,
                      affine=False)  # fmt: skip


def affine_chain(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = chain(x * weight + bias) with per-feature parameters ``weight``, ``bias`` of shape [D]."""
    ops = chain(rng, int(rng.integers(1, 4)))
    source = module_source(
        doc=f"A per-feature affine map followed by {ops.words}.", init_params="dim",
        init_body=["self.weight = nn.Parameter(torch.randn(dim))", "self.bias = nn.Parameter(torch.randn(dim))"],
        forward_params="x", forward_body=["x = x * self.weight + self.bias", *ops.torch_lines(), "return x"],
        constants={"batch_size": 16, "dim": 1000}, inputs=["torch.randn(batch_size, dim)"], init_inputs=["dim"],
    )
    return _pointwise("affine_chain", f"y = {pipeline('(x * weight + bias)', ops.words)} (left to right) over a "
                      "[B, D] float32 tensor; "
                      "weight and bias are per-feature parameters [D].",
                      source, ops, affine=True)  # fmt: skip


def _pointwise(family: str, description: str, source: str, ops: Chain, affine: bool) -> dict[str, Any]:
    inputs = [buffer("x", "in", "float32", ["B", "D"], INPUT_INIT)]
    params = [("weight", buffer("weight", "in", "float32", ["D"], {"dist": "uniform", "low": 0.5, "high": 1.5})),
              ("bias", buffer("bias", "in", "float32", ["D"], {"dist": "uniform", "low": -0.5, "high": 0.5}))]
    sizes = [scalar("batch", "int32", "B"), scalar("dim", "int32", "D")]
    sig = ("const float* x, " + ("const float* weight, const float* bias, " if affine else "")
           + "float* y, int batch, int dim")  # fmt: skip
    value = "x[i] * weight[i % dim] + bias[i % dim]" if affine else "x[i]"
    kw = {"sig": sig, "value": value, "head": ops.device_function(),
          "call": "x, " + ("weight, bias, " if affine else "") + "y, batch, dim"}  # fmt: skip
    impls = [
        impl("naive", ["thread-per-element"], fill(_NAIVE, **kw)),
        impl("grid_stride", ["grid-stride", "coalesced"], fill(_GRID, **kw)),
        impl("unroll4", ["multi-element-per-thread", "loop-unrolling", "coalesced"], fill(_UNROLL, **kw)),
    ]
    return torch_task(
        name=family, family=family, description=description, source=source, inputs=inputs,
        parameters=params if affine else [], outputs=[buffer("y", "out", "float32", ["B", "D"])], sizes=sizes,
        init_inputs=["D"] if affine else [], configs=CONFIGS, hidden=HIDDEN, perf=PERF, implementations=impls,
        tolerance=TOL,
    )


_NAIVE = """
$head
__global__ void pointwise_kernel($sig) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)batch * dim) y[i] = act($value);
}

extern "C" void forward($sig) {
  long long n = (long long)batch * dim;
  pointwise_kernel<<<(unsigned)((n + 255) / 256), 256>>>($call);
}
"""
_GRID = """
$head
__global__ void pointwise_kernel($sig) {
  long long n = (long long)batch * dim;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = act($value);
}

extern "C" void forward($sig) {
  long long n = (long long)batch * dim;
  long long blocks = (n + 255) / 256;
  pointwise_kernel<<<(unsigned)(blocks < 1024 ? blocks : 1024), 256>>>($call);
}
"""
_UNROLL = """
$head
// Each block covers 4 * 256 consecutive elements; thread t takes t, t + 256, ... (coalesced).
constexpr int THREADS = 256, ITEMS = 4;

__global__ void pointwise_kernel($sig) {
  long long n = (long long)batch * dim;
  long long base = (long long)blockIdx.x * THREADS * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    long long i = base + (long long)k * THREADS;
    if (i < n) y[i] = act($value);
  }
}

extern "C" void forward($sig) {
  long long n = (long long)batch * dim;
  pointwise_kernel<<<(unsigned)((n + THREADS * ITEMS - 1) / (THREADS * ITEMS)), THREADS>>>($call);
}
"""
