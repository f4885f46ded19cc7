"""PyTorch MLP blocks: ``[LayerNorm ->] Linear -> GELU / ReLU / SiLU -> Linear [+ residual]``, then pointwise
operators.

``y = post(fc2(act(fc1(norm(x)))) [+ x])`` for ``x [B, D]``, ``fc1: D -> H``,
``fc2: H -> O`` (``O = D`` with the residual). Three strategies: a kernel per
stage with a thread per output (dot products from global memory), the two
layers as 16x16 shared-memory-tiled GEMMs with the activation and the residual
fused into their epilogues (the LayerNorm a warp per row), and one block per
row doing everything with the row and its hidden activations in shared memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task
from cudaperf_env.datagen.families.torch_rowwise import BLOCK_REDUCE, COMBINE, WARP_REDUCE

# activation -> (PyTorch line on h, CUDA expression of v)
ACTS = {
    "gelu": ("h = F.gelu(h)", "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))"),
    "relu": ("h = torch.relu(h)", "fmaxf(v, 0.0f)"),
    "silu": ("h = F.silu(h)", "v / (1.0f + expf(-v))"),
    "gelu_tanh": ('h = F.gelu(h, approximate="tanh")',
                  "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))"),
}  # fmt: skip
# (activation, residual, LayerNorm first, biases, operators after)
STRUCTURES = grid(tuple(ACTS), (False, True), (False, True), (True, False), (0, 1))
NORMAL = {"dist": "normal", "mean": 0, "std": 1.0}
PARAM_INIT = {"dist": "uniform", "low": -0.1, "high": 0.1}  # about nn.Linear's 1 / sqrt(fan_in) at these sizes
TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}
CONFIGS = [{"B": 8, "D": 64, "H": 128, "O": 48}, {"B": 13, "D": 100, "H": 75, "O": 37},
           {"B": 4, "D": 48, "H": 257, "O": 64}]  # fmt: skip
HIDDEN = [{"B": 5, "D": 77, "H": 130, "O": 33}]
PERF = [{"B": 4096, "D": 1024, "H": 4096, "O": 1024}]


def mlp(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(fc2(act(fc1([norm](x)))) [+ x]) with ``nn.Linear`` layers and an optional LayerNorm."""
    act, residual, norm, bias, n_post = nth(variant, STRUCTURES)
    post = chain(rng, n_post)
    act_line, act_cuda = ACTS[act]
    no_bias = "" if bias else ", bias=False"
    out = "dim" if residual else "out_features"
    init_body = (["self.norm = nn.LayerNorm(dim)"] if norm else []) + [
        f"self.fc1 = nn.Linear(dim, hidden{no_bias})", f"self.fc2 = nn.Linear(hidden, {out}{no_bias})"]
    body = ["h = self.fc1(self.norm(x))" if norm else "h = self.fc1(x)", act_line, "h = self.fc2(h)",
            "x = x + h" if residual else "x = h", *post.torch_lines(), "return x"]  # fmt: skip
    block = pipeline("LayerNorm" if norm else "", f"Linear(D, H{', no bias' if not bias else ''})", act,
                     f"Linear(H, {'D' if residual else 'O'}{', no bias' if not bias else ''})")
    words = pipeline(f"x + ({block})(x)" if residual else f"({block})(x)", post.words)
    source = module_source(
        doc=f"Computes {words}.", init_params="dim, hidden" + ("" if residual else ", out_features"),
        init_body=init_body, forward_params="x", forward_body=body,
        constants={"batch_size": 4096, "dim": 1024, "hidden": 4096, **({} if residual else {"out_features": 1024})},
        inputs=["torch.randn(batch_size, dim)"], init_inputs=["dim", "hidden", *([] if residual else ["out_features"])],
    )  # fmt: skip
    o_sym = "D" if residual else "O"
    params = _params(norm, bias, o_sym)
    sizes = [scalar("batch", "int32", "B"), scalar("dim", "int32", "D"), scalar("hidden", "int32", "H")]
    if not residual:
        sizes.append(scalar("out_features", "int32", "O"))
    sig = ("const float* x, " + "".join(f"const float* {a['name']}, " for _, a in params) + "float* y, "
           + ", ".join(f"int {a['name']}" for a in sizes))  # fmt: skip
    kw = {"sig": sig, "nout": out, "norm_w": "norm_weight" if norm else "nullptr",
          "norm_b": "norm_bias" if norm else "nullptr", "b1": "fc1_bias" if bias else "nullptr",
          "b2": "fc2_bias" if bias else "nullptr", "res": "x" if residual else "nullptr"}
    impls = _impls(post.device_function("post") + fill(_HEAD, act=act_cuda), norm, kw)
    return torch_task(
        name="mlp", family="mlp",
        description=f"y = {words} (left to right) for x [B, D]"
                    + (", the LayerNorm's weight and bias [D]" if norm else "")
                    + f", fc1's weight [H, D]{' and bias [H]' if bias else ''}, fc2's weight [{o_sym}, H]"
                    + (f" and bias [{o_sym}]" if bias else "") + f"; y [B, {o_sym}].",
        source=source, inputs=[buffer("x", "in", "float32", ["B", "D"], NORMAL)], parameters=params,
        outputs=[buffer("y", "out", "float32", ["B", o_sym])], sizes=sizes,
        init_inputs=["D", "H", *([] if residual else ["O"])], configs=_sizes(CONFIGS, residual),
        hidden=_sizes(HIDDEN, residual), perf=_sizes(PERF, residual),
        implementations=impls, tolerance=TOL,
    )  # fmt: skip


def _params(norm: bool, bias: bool, o_sym: str) -> list[tuple[str, dict[str, Any]]]:
    """(``named_parameters`` key, argument) of the LayerNorm (optional), fc1 and fc2, in the entry's order."""
    params = []
    if norm:
        params += [("norm.weight", buffer("norm_weight", "in", "float32", ["D"],
                                          {"dist": "uniform", "low": 0.5, "high": 1.5})),
                   ("norm.bias", buffer("norm_bias", "in", "float32", ["D"],
                                        {"dist": "uniform", "low": -0.5, "high": 0.5}))]  # fmt: skip
    params.append(("fc1.weight", buffer("fc1_weight", "in", "float32", ["H", "D"], PARAM_INIT)))
    if bias:
        params.append(("fc1.bias", buffer("fc1_bias", "in", "float32", ["H"], PARAM_INIT)))
    params.append(("fc2.weight", buffer("fc2_weight", "in", "float32", [o_sym, "H"], PARAM_INIT)))
    if bias:
        params.append(("fc2.bias", buffer("fc2_bias", "in", "float32", [o_sym], PARAM_INIT)))
    return params


def _impls(head: str, norm: bool, kw: dict[str, str]) -> list[dict[str, Any]]:
    """The three implementations; the LayerNorm's kernel, scratch buffer and reductions only where there is one."""
    free = "  cudaFree(xn);\n" if norm else ""
    per_stage = fill(_NAIVE, norm_kernel=_NORM_THREAD if norm else "", norm_free=free,
                     norm_launch=fill(_NORM_LAUNCH, blocks="(batch + 127) / 128, 128") if norm else "", **kw)
    tiled = fill(_TILED, norm_kernel=_NORM_WARP if norm else "", norm_free=free,
                 norm_launch=fill(_NORM_LAUNCH, blocks="(batch + 7) / 8, 256") if norm else "", **kw)
    reduce = "".join(f"__device__ __forceinline__ float combine_{op}(float a, float b) {{ return {c}; }}\n"
                     for op, (_, c) in COMBINE.items()) + BLOCK_REDUCE + "\n"
    fused = fill(_FUSED, reduce=reduce if norm else "", normalize=_FUSED_NORM if norm else "",
                 shared="  __shared__ float shared[THREADS];  // the block reductions' scratch\n" if norm else "", **kw)
    return [impl("per_stage", ["multi-kernel", "thread-per-element"], head + per_stage),
            impl("tiled16", ["shared-memory-tiling", "fused-epilogue"], head + tiled),
            impl("fused_row", ["block-per-row", "fused", "shared-memory"], head + fused)]


def _sizes(configs: list[dict[str, int]], residual: bool) -> list[dict[str, int]]:
    """``configs`` without ``O`` where the residual makes the output width ``D``."""
    return [{k: v for k, v in c.items() if k != "O" or not residual} for c in configs]


_HEAD = """
__device__ __forceinline__ float act(float v) { return $act; }
// fc1's output before the activation, then fc2's with its bias, the residual (res null when none) and post.
__device__ __forceinline__ float hidden_out(float acc, const float* b1, int j) {
  return act(b1 ? acc + b1[j] : acc);
}
__device__ __forceinline__ float final_out(float acc, const float* b2, const float* res, long long row, int o,
                                          int nout) {
  float v = b2 ? acc + b2[o] : acc;
  return post(res ? v + res[row * nout + o] : v);
}
"""
_FUSED_NORM = """  // LayerNorm in place, each thread its own elements (block_sum's barriers order the writes).
  float s = 0.0f;
  for (int c = tid; c < dim; c += THREADS) s += xs[c];
  float mean = block_sum(s, shared) / dim, q = 0.0f;
  for (int c = tid; c < dim; c += THREADS) q += (xs[c] - mean) * (xs[c] - mean);
  float rstd = rsqrtf(block_sum(q, shared) / dim + 1e-5f);
  for (int c = tid; c < dim; c += THREADS) xs[c] = (xs[c] - mean) * rstd * norm_w[c] + norm_b[c];
"""
_NORM_LAUNCH = """  float* xn;  // the normalized rows
  cudaMalloc(&xn, (long long)batch * dim * sizeof(float));
  norm_kernel<<<$blocks>>>(x, norm_weight, norm_bias, xn, batch, dim);
  a = xn;
"""
_NAIVE = """
$norm_kernel// fc1 + activation: a thread per hidden unit of a row.
__global__ void fc1_kernel(const float* a, const float* w1, const float* b1, float* h, int batch, int dim,
                           int hidden) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch * hidden) return;
  long long row = i / hidden;
  int j = (int)(i % hidden);
  float acc = 0.0f;
  for (int c = 0; c < dim; ++c) acc += a[row * dim + c] * w1[(long long)j * dim + c];
  h[i] = hidden_out(acc, b1, j);
}

// fc2 + bias + residual + post: a thread per output.
__global__ void fc2_kernel(const float* h, const float* w2, const float* b2, const float* res, float* y, int batch,
                           int hidden, int nout) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)batch * nout) return;
  long long row = i / nout;
  int o = (int)(i % nout);
  float acc = 0.0f;
  for (int j = 0; j < hidden; ++j) acc += h[row * hidden + j] * w2[(long long)o * hidden + j];
  y[i] = final_out(acc, b2, res, row, o, nout);
}

extern "C" void forward($sig) {
  const float* a = x;
  float* h;
$norm_launch  cudaMalloc(&h, (long long)batch * hidden * sizeof(float));
  fc1_kernel<<<(unsigned)(((long long)batch * hidden + 255) / 256), 256>>>(a, fc1_weight, $b1, h, batch, dim, hidden);
  fc2_kernel<<<(unsigned)(((long long)batch * $nout + 255) / 256), 256>>>(h, fc2_weight, $b2, $res, y, batch, hidden,
                                                                          $nout);
  cudaFree(h);
$norm_free}
"""
_NORM_THREAD = """
// LayerNorm: a thread per row, two passes (mean, then variance), into a scratch copy.
__global__ void norm_kernel(const float* x, const float* w, const float* b, float* xn, int batch, int dim) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= batch) return;
  const float* xr = x + (long long)row * dim;
  float mean = 0.0f, var = 0.0f;
  for (int c = 0; c < dim; ++c) mean += xr[c];
  mean /= dim;
  for (int c = 0; c < dim; ++c) var += (xr[c] - mean) * (xr[c] - mean);
  float rstd = rsqrtf(var / dim + 1e-5f);
  for (int c = 0; c < dim; ++c) xn[(long long)row * dim + c] = (xr[c] - mean) * rstd * w[c] + b[c];
}

"""
_NORM_WARP = "".join(f"__device__ __forceinline__ float combine_{op}(float a, float b) {{ return {c}; }}\n"
                     for op, (_, c) in COMBINE.items()) + WARP_REDUCE + """
// LayerNorm: a warp per row (8 per block), shuffle reductions, into a scratch copy.
__global__ void norm_kernel(const float* x, const float* w, const float* b, float* xn, int batch, int dim) {
  int row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= batch) return;  // whole warps leave together
  const float* xr = x + (long long)row * dim;
  float s = 0.0f;
  for (int c = lane; c < dim; c += 32) s += xr[c];
  float mean = warp_sum(s) / dim, q = 0.0f;
  for (int c = lane; c < dim; c += 32) q += (xr[c] - mean) * (xr[c] - mean);
  float rstd = rsqrtf(warp_sum(q) / dim + 1e-5f);
  for (int c = lane; c < dim; c += 32) xn[(long long)row * dim + c] = (xr[c] - mean) * rstd * w[c] + b[c];
}

"""
_TILED = """
$norm_kernel// out[r, c] = epilogue(sum_k a[r, k] * w[c, k]) for a [rows, K] and w [cols, K] (nn.Linear's layout),
// 16x16 tiles of both staged in shared memory; STAGE 1 is fc1 (bias, activation), STAGE 2 fc2 (bias, residual,
// post).
constexpr int TILE = 16;

template <int STAGE>
__global__ void linear_tiled(const float* a, const float* w, const float* bias, const float* res, float* out,
                             int rows, int cols, int K) {
  __shared__ float as[TILE][TILE], ws[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int r = blockIdx.y * TILE + ty, c = blockIdx.x * TILE + tx, wc = blockIdx.x * TILE + ty;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    as[ty][tx] = (r < rows && k0 + tx < K) ? a[(long long)r * K + k0 + tx] : 0.0f;
    ws[ty][tx] = (wc < cols && k0 + tx < K) ? w[(long long)wc * K + k0 + tx] : 0.0f;  // coalesced along K
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * ws[tx][kk];
    __syncthreads();
  }
  if (r >= rows || c >= cols) return;
  out[(long long)r * cols + c] = STAGE == 1 ? hidden_out(acc, bias, c) : final_out(acc, bias, res, r, c, cols);
}

extern "C" void forward($sig) {
  const float* a = x;
  float* h;
$norm_launch  cudaMalloc(&h, (long long)batch * hidden * sizeof(float));
  dim3 block(TILE, TILE);
  linear_tiled<1><<<dim3((hidden + TILE - 1) / TILE, (batch + TILE - 1) / TILE), block>>>(a, fc1_weight, $b1,
                                                                                       nullptr, h, batch, hidden, dim);
  linear_tiled<2><<<dim3(($nout + TILE - 1) / TILE, (batch + TILE - 1) / TILE), block>>>(h, fc2_weight, $b2, $res,
                                                                                      y, batch, $nout, hidden);
  cudaFree(h);
$norm_free}
"""
_FUSED = """
$reduce// One block per row, one kernel: the (normalized) row and then its hidden activations in shared memory
// (dim + hidden floats), each thread a hidden unit or an output at a time.
constexpr int THREADS = 128;

__global__ void mlp_kernel(const float* x, const float* norm_w, const float* norm_b, const float* w1,
                           const float* b1, const float* w2, const float* b2, const float* res, float* y, int dim,
                           int hidden, int nout) {
  extern __shared__ float smem[];
  float* xs = smem;        // [dim]
  float* hs = smem + dim;  // [hidden]
$shared  long long row = blockIdx.x;
  int tid = threadIdx.x;
  const float* xr = x + row * dim;
  for (int c = tid; c < dim; c += THREADS) xs[c] = xr[c];
$normalize  __syncthreads();
  for (int j = tid; j < hidden; j += THREADS) {
    float acc = 0.0f;
    for (int c = 0; c < dim; ++c) acc += xs[c] * w1[(long long)j * dim + c];
    hs[j] = hidden_out(acc, b1, j);
  }
  __syncthreads();
  for (int o = tid; o < nout; o += THREADS) {
    float acc = 0.0f;
    for (int j = 0; j < hidden; ++j) acc += hs[j] * w2[(long long)o * hidden + j];
    y[row * nout + o] = final_out(acc, b2, res, row, o, nout);
  }
}

extern "C" void forward($sig) {
  mlp_kernel<<<batch, THREADS, (dim + hidden) * sizeof(float)>>>(x, $norm_w, $norm_b, fc1_weight, $b1, fc2_weight,
                                                                 $b2, $res, y, dim, hidden, $nout);
}
"""
