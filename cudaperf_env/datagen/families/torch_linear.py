"""PyTorch matrix products fused with pointwise epilogues: ``nn.Linear`` + activations, ``torch.matmul`` + activations.

Both are ``C[m, n] = post(sum_k A[m, k] * B[k, n] (+ bias[n]))`` with different
layouts of ``B``; three strategies each: a thread per output, 16x16 shared-memory
tiles, and a warp per output reducing with shuffles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, impl, scalar
from cudaperf_env.datagen.families.torch_common import Chain, chain, module_source, pipeline, torch_task

TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}  # K-term sums in different orders
PARAM_INIT = {"dist": "uniform", "low": -0.1, "high": 0.1}


def linear(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(x @ W^T + b): ``nn.Linear(in_features, out_features)`` and 0-3 pointwise operators."""
    post, bias = chain(rng, int(rng.integers(0, 4))), bool(rng.integers(0, 4))  # mostly with bias
    body = ["x = self.fc(x)", *post.torch_lines(), "return x"]
    product = "(x @ weight^T + bias)" if bias else "(x @ weight^T)"
    source = module_source(
        doc=pipeline(f"nn.Linear{'' if bias else ' (no bias)'}", post.words) + ".",
        init_params="in_features, out_features",
        init_body=[f"self.fc = nn.Linear(in_features, out_features{'' if bias else ', bias=False'})"],
        forward_params="x", forward_body=body,
        constants={"batch_size": 128, "in_features": 1024, "out_features": 512},
        inputs=["torch.randn(batch_size, in_features)"], init_inputs=["in_features", "out_features"],
    )
    params = [("fc.weight", buffer("weight", "in", "float32", ["OUT", "IN"], PARAM_INIT))]
    if bias:
        params.append(("fc.bias", buffer("bias", "in", "float32", ["OUT"], PARAM_INIT)))
    names = ["x", "weight", *(["bias"] if bias else []), "y"]
    sig = ", ".join(f"const float* {n}" for n in names[:-1])
    sig += ", float* y, int batch, int in_features, int out_features"
    call = f"x, weight, {'bias' if bias else 'nullptr'}, y, batch, out_features, in_features"
    return torch_task(
        name="linear", family="linear",
        description=f"y = {pipeline(product, post.words)} (left to right) for x [B, IN] and nn.Linear's weight "
                    f"[OUT, IN]{', bias [OUT]' if bias else ''}.",
        source=source, inputs=[buffer("x", "in", "float32", ["B", "IN"], {"dist": "normal", "mean": 0, "std": 1})],
        parameters=params, outputs=[buffer("y", "out", "float32", ["B", "OUT"])],
        sizes=[scalar("batch", "int32", "B"), scalar("in_features", "int32", "IN"),
               scalar("out_features", "int32", "OUT")],
        init_inputs=["IN", "OUT"],
        configs=[{"B": 8, "IN": 64, "OUT": 48}, {"B": 13, "IN": 100, "OUT": 37}, {"B": 32, "IN": 128, "OUT": 64}],
        hidden=[{"B": 5, "IN": 77, "OUT": 33}], perf=[{"B": 1024, "IN": 4096, "OUT": 4096}],
        implementations=_impls(post, sig, call, "b_t", "batch", "out_features"), tolerance=TOL,
    )


def matmul(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(a, b)`` = post(a @ b) or post(a @ b.T) and 0-2 pointwise operators."""
    post, transposed = chain(rng, int(rng.integers(0, 3))), bool(rng.integers(0, 2))
    product = "torch.matmul(a, b.T)" if transposed else "torch.matmul(a, b)"
    source = module_source(
        doc=pipeline(product, post.words) + ".", init_params="", init_body=[], forward_params="a, b",
        forward_body=[f"x = {product}", *post.torch_lines(), "return x"], constants={"m": 1024, "k": 512, "n": 768},
        inputs=["torch.randn(m, k)", "torch.randn(n, k)" if transposed else "torch.randn(k, n)"], init_inputs=[],
    )
    init = {"dist": "normal", "mean": 0, "std": 0.25}
    inputs = [buffer("a", "in", "float32", ["M", "K"], init),
              buffer("b", "in", "float32", ["N", "K"] if transposed else ["K", "N"], init)]
    sig = "const float* a, const float* b, float* c, int m, int k, int n"
    return torch_task(
        name="matmul", family="matmul",
        description=f"c = {pipeline('(a @ b^T)' if transposed else '(a @ b)', post.words)} (left to right) "
                    "for a [M, K], "
                    f"b {'[N, K]' if transposed else '[K, N]'}.",
        source=source, inputs=inputs, parameters=[], outputs=[buffer("c", "out", "float32", ["M", "N"])],
        sizes=[scalar("m", "int32", "M"), scalar("k", "int32", "K"), scalar("n", "int32", "N")], init_inputs=[],
        configs=[{"M": 32, "K": 64, "N": 48}, {"M": 37, "K": 100, "N": 29}, {"M": 64, "K": 64, "N": 64}],
        hidden=[{"M": 17, "K": 33, "N": 65}], perf=[{"M": 4096, "K": 4096, "N": 4096}],
        implementations=_impls(post, sig, "a, b, nullptr, c, m, n, k", "b_t" if transposed else "b", "m", "n"),
        tolerance=TOL,
    )


def _impls(post: Chain, sig: str, call: str, layout: str, rows: str, cols: str) -> list[dict[str, Any]]:
    load_b = "B[(long long)col * K + kk]" if layout == "b_t" else "B[(long long)kk * N + col]"
    head = post.device_function("post") + fill(_LOADS, load_b=load_b)
    kw = {"sig": sig, "call": call, "rows": rows, "cols": cols}
    return [
        impl("naive", ["thread-per-element"], head + fill(_NAIVE, **kw)),
        impl("tiled16", ["shared-memory-tiling", "coalesced"], head + fill(_TILED, **kw)),
        impl("warp_dot", ["warp-per-element", "warp-shuffle"], head + fill(_WARP, **kw)),
    ]


_LOADS = """
// A is [M, K] row-major; B holds the [K, N] operand (stored as ${load_b}).
__device__ __forceinline__ float load_b(const float* B, int kk, int col, int K, int N) { return ${load_b}; }
__device__ __forceinline__ float finish(float acc, const float* bias, int col) {
  return post(bias ? acc + bias[col] : acc);
}
"""
_NAIVE = """
__global__ void gemm_kernel(const float* A, const float* B, const float* bias, float* C, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int kk = 0; kk < K; ++kk) acc += A[(long long)row * K + kk] * load_b(B, kk, col, K, N);
  C[(long long)row * N + col] = finish(acc, bias, col);
}

extern "C" void forward($sig) {
  dim3 block(16, 16);
  dim3 grid(($cols + 15) / 16, ($rows + 15) / 16);
  gemm_kernel<<<grid, block>>>($call);
}
"""
_TILED = """
constexpr int TILE = 16;

__global__ void gemm_kernel(const float* A, const float* B, const float* bias, float* C, int M, int N, int K) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    as[ty][tx] = (row < M && k0 + tx < K) ? A[(long long)row * K + k0 + tx] : 0.0f;
    bs[ty][tx] = (col < N && k0 + ty < K) ? load_b(B, k0 + ty, col, K, N) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = finish(acc, bias, col);
}

extern "C" void forward($sig) {
  dim3 block(TILE, TILE);
  dim3 grid(($cols + TILE - 1) / TILE, ($rows + TILE - 1) / TILE);
  gemm_kernel<<<grid, block>>>($call);
}
"""
_WARP = """
// One warp per output element: lanes split K, then a shuffle reduction (8 warps per block).
__global__ void gemm_kernel(const float* A, const float* B, const float* bias, float* C, int M, int N, int K) {
  long long out = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (out >= (long long)M * N) return;  // whole warps leave together
  int row = (int)(out / N), col = (int)(out % N);
  float acc = 0.0f;
  for (int kk = lane; kk < K; kk += 32) acc += A[(long long)row * K + kk] * load_b(B, kk, col, K, N);
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) C[out] = finish(acc, bias, col);
}

extern "C" void forward($sig) {
  long long outputs = (long long)$rows * $cols;
  gemm_kernel<<<(unsigned)((outputs + 7) / 8), 256>>>($call);
}
"""
