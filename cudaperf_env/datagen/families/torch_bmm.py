"""PyTorch batched matrix products with an epilogue: ``torch.bmm`` / ``torch.baddbmm`` then scale, bias, residual
and pointwise operators, fused into the product's kernel.

``c[z] = post(epilogue(a[z] @ b[z]))`` for ``z`` in the batch; the batch is the
grid's z dimension. Three strategies: a thread per output, 16x16 shared-memory
tiles, and a warp per output reducing with shuffles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, impl, pick, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task

TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}
INIT = {"dist": "normal", "mean": 0, "std": 0.25}


def bmm(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(a, b[, r])`` = post(epilogue(bmm(a, b))), epilogue none, scale, bias, residual or baddbmm."""
    epilogue = pick(rng, ("none", "scale", "bias", "residual", "baddbmm"))
    post = chain(rng, int(rng.integers(0, 3)))
    alpha, beta = round(float(rng.uniform(0.25, 2.0)), 3), round(float(rng.uniform(0.25, 2.0)), 3)
    product = {
        "none": ("torch.bmm(a, b)", "acc", "a @ b"),
        "scale": (f"torch.bmm(a, b) * {alpha!r}", f"acc * {alpha!r}f", f"(a @ b) * {alpha}"),
        "bias": ("torch.bmm(a, b) + self.bias", "acc + bias[col]", "a @ b + bias"),
        "residual": ("torch.bmm(a, b) + r", "acc + r[o]", "a @ b + r"),
        "baddbmm": (f"torch.baddbmm(r, a, b, beta={beta!r}, alpha={alpha!r})", f"{beta!r}f * r[o] + {alpha!r}f * acc",
                    f"{beta} * r + {alpha} * (a @ b)"),
    }[epilogue]  # fmt: skip
    torch_expr, c_expr, words_expr = product
    with_r = epilogue in ("residual", "baddbmm")
    words = pipeline(f"({words_expr})", post.words)
    source = module_source(
        doc=f"Batched {words}.", init_params="n" if epilogue == "bias" else "",
        init_body=["self.bias = nn.Parameter(torch.randn(n))"] if epilogue == "bias" else [],
        forward_params="a, b, r" if with_r else "a, b", forward_body=[f"x = {torch_expr}", *post.torch_lines(),
                                                                      "return x"],
        constants={"batch_size": 32, "m": 512, "k": 512, "n": 512},
        inputs=["torch.randn(batch_size, m, k)", "torch.randn(batch_size, k, n)",
                *(["torch.randn(batch_size, m, n)"] if with_r else [])],
        init_inputs=["n"] if epilogue == "bias" else [],
    )  # fmt: skip
    inputs = [buffer("a", "in", "float32", ["Z", "M", "K"], INIT), buffer("b", "in", "float32", ["Z", "K", "N"], INIT)]
    if with_r:
        inputs.append(buffer("r", "in", "float32", ["Z", "M", "N"], {"dist": "normal", "mean": 0, "std": 1.0}))
    params = [("bias", buffer("bias", "in", "float32", ["N"], {"dist": "uniform", "low": -0.5, "high": 0.5}))
              ] if epilogue == "bias" else []  # fmt: skip
    extra = ("const float* r, " if with_r else "") + ("const float* bias, " if epilogue == "bias" else "")
    sig = f"const float* a, const float* b, {extra}float* c, int batch, int m, int k, int n"
    call = f"a, b, {'r' if with_r else 'nullptr'}, {'bias' if epilogue == 'bias' else 'nullptr'}, c, m, n, k"
    head = post.device_function("post") + fill(_EPILOGUE, expr=c_expr)
    kw = {"sig": sig, "call": call}
    impls = [impl("naive", ["thread-per-element"], head + fill(_NAIVE, **kw)),
             impl("tiled16", ["shared-memory-tiling", "coalesced"], head + fill(_TILED, **kw)),
             impl("warp_dot", ["warp-per-element", "warp-shuffle"], head + fill(_WARP, **kw))]
    return torch_task(
        name="bmm", family="bmm",
        description=f"c = {words} (left to right) for each z of a [Z, M, K] and b [Z, K, N]"
                    f"{', r [Z, M, N]' if with_r else ''}{', bias [N] (a parameter)' if epilogue == 'bias' else ''};"
                    " c [Z, M, N].",
        source=source, inputs=inputs, parameters=params, outputs=[buffer("c", "out", "float32", ["Z", "M", "N"])],
        sizes=[scalar("batch", "int32", "Z"), scalar("m", "int32", "M"), scalar("k", "int32", "K"),
               scalar("n", "int32", "N")],
        init_inputs=["N"] if epilogue == "bias" else [],
        configs=[{"Z": 2, "M": 32, "K": 64, "N": 48}, {"Z": 3, "M": 37, "K": 100, "N": 29},
                 {"Z": 4, "M": 16, "K": 16, "N": 64}],
        hidden=[{"Z": 2, "M": 17, "K": 33, "N": 65}], perf=[{"Z": 32, "M": 512, "K": 512, "N": 512}],
        implementations=impls, tolerance=TOL,
    )  # fmt: skip


_EPILOGUE = """
// acc = (a[z] @ b[z])[row, col]; o = the output's flat index; r (residual) and bias may be null when unused.
__device__ __forceinline__ float epilogue(float acc, const float* r, const float* bias, long long o, int col) {
  return post($expr);
}
"""
_NAIVE = """
__global__ void bmm_kernel(const float* A, const float* B, const float* r, const float* bias, float* C, int M, int N,
                           int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z;
  if (row >= M || col >= N) return;
  const float* a = A + (long long)z * M * K;
  const float* b = B + (long long)z * K * N;
  float acc = 0.0f;
  for (int kk = 0; kk < K; ++kk) acc += a[(long long)row * K + kk] * b[(long long)kk * N + col];
  long long o = ((long long)z * M + row) * N + col;
  C[o] = epilogue(acc, r, bias, o, col);
}

extern "C" void forward($sig) {
  dim3 block(16, 16);
  dim3 grid((n + 15) / 16, (m + 15) / 16, batch);
  bmm_kernel<<<grid, block>>>($call);
}
"""
_TILED = """
constexpr int TILE = 16;

__global__ void bmm_kernel(const float* A, const float* B, const float* r, const float* bias, float* C, int M, int N,
                           int K) {
  __shared__ float as[TILE][TILE], bs[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y, z = blockIdx.z;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  const float* a = A + (long long)z * M * K;
  const float* b = B + (long long)z * K * N;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    as[ty][tx] = (row < M && k0 + tx < K) ? a[(long long)row * K + k0 + tx] : 0.0f;
    bs[ty][tx] = (col < N && k0 + ty < K) ? b[(long long)(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (row < M && col < N) {
    long long o = ((long long)z * M + row) * N + col;
    C[o] = epilogue(acc, r, bias, o, col);
  }
}

extern "C" void forward($sig) {
  dim3 block(TILE, TILE);
  dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE, batch);
  bmm_kernel<<<grid, block>>>($call);
}
"""
_WARP = """
// One warp per output element: lanes split K, then a shuffle reduction (8 warps per block).
__global__ void bmm_kernel(const float* A, const float* B, const float* r, const float* bias, float* C, int M, int N,
                           int K) {
  long long per = (long long)M * N;
  long long inner = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31, z = blockIdx.y;
  if (inner >= per) return;  // whole warps leave together
  int row = (int)(inner / N), col = (int)(inner % N);
  const float* a = A + (long long)z * M * K;
  const float* b = B + (long long)z * K * N;
  float acc = 0.0f;
  for (int kk = lane; kk < K; kk += 32) acc += a[(long long)row * K + kk] * b[(long long)kk * N + col];
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  long long o = (long long)z * per + inner;
  if (lane == 0) C[o] = epilogue(acc, r, bias, o, col);
}

extern "C" void forward($sig) {
  long long per = (long long)m * n;
  dim3 grid((unsigned)((per + 7) / 8), batch);
  bmm_kernel<<<grid, 256>>>($call);
}
"""
