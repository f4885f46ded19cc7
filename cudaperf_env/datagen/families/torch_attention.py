"""PyTorch attention blocks: ``softmax(q @ k^T * scale [+ causal mask]) @ v`` over ``[B, H, S, D]``, then an
optional output projection (``nn.Linear`` over the concatenated heads) and pointwise operators.

The reference is spelled out (``matmul``, ``masked_fill``, ``softmax``) or is
``F.scaled_dot_product_attention``. A query row is ``r = (b * H + h) * S + s``;
its keys and values are rows ``r - s .. r - s + S - 1`` of ``k`` and ``v``.
Three strategies: three kernels through a materialized score matrix (scores,
row softmax, probabilities times values), one block per query row with its
scores in shared memory, and a warp per query row with an online (flash-style)
softmax in a single pass over the keys. With a projection, the attention writes
``[B, S, H, D]`` to a scratch buffer that a projection kernel reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task
from cudaperf_env.datagen.families.torch_rowwise import BLOCK_REDUCE, COMBINE

# (scale spelling, causal, output projection, operators after)
STRUCTURES = grid(("head_dim", "sdpa", "const"), (True, False), ("none", "bias", "no_bias"), (0, 1))
NORMAL = {"dist": "normal", "mean": 0, "std": 1.0}
PARAM_INIT = {"dist": "uniform", "low": -0.1, "high": 0.1}
TOL = {"rtol": 1.0e-3, "atol": 1.0e-4}
CONFIGS = [{"B": 2, "H": 2, "S": 37, "D": 16}, {"B": 1, "H": 3, "S": 64, "D": 24},
           {"B": 2, "H": 1, "S": 100, "D": 32}]  # fmt: skip
HIDDEN = [{"B": 1, "H": 2, "S": 77, "D": 72}]
PERF = [{"B": 8, "H": 16, "S": 512, "D": 64}]


def attention(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(q, k, v)`` = post(proj(softmax(q @ k^T * scale [masked causally]) @ v)), projection optional."""
    scale_kind, causal, proj, n_post = nth(variant, STRUCTURES)
    post = chain(rng, n_post)
    const = round(float(rng.uniform(0.05, 0.3)), 4)
    body, words = _forward(scale_kind, causal, proj, const)
    words = pipeline(words, post.words)
    source = module_source(
        doc=f"Computes {words}.", init_params="embed" if proj != "none" else "",
        init_body=[f"self.proj = nn.Linear(embed, embed{', bias=False' if proj == 'no_bias' else ''})"]
        if proj != "none" else [],
        forward_params="q, k, v", forward_body=[*body, *post.torch_lines(), "return x"],
        constants={"batch_size": 8, "heads": 16, "seq_len": 512, "head_dim": 64},
        inputs=["torch.randn(batch_size, heads, seq_len, head_dim)"] * 3,
        init_inputs=["heads * head_dim"] if proj != "none" else [],
    )  # fmt: skip
    params = []
    if proj != "none":
        params.append(("proj.weight", buffer("proj_weight", "in", "float32", ["H * D", "H * D"], PARAM_INIT)))
    if proj == "bias":
        params.append(("proj.bias", buffer("proj_bias", "in", "float32", ["H * D"], PARAM_INIT)))
    sig = ("const float* q, const float* k, const float* v, "
           + "".join(f"const float* {a['name']}, " for _, a in params)
           + "float* y, int batch, int heads, int seq_len, int head_dim")  # fmt: skip
    out_at = ("r * d + e" if proj == "none"  # y [B, H, S, D]
              else "(((r / ((long long)heads * n)) * n + r % n) * heads + (r / n) % heads) * d + e")  # o [B, S, H, D]
    head = post.device_function("post") + fill(
        _HEAD, scale=f"{const!r}f" if scale_kind == "const" else "1.0f / sqrtf((float)d)",
        allowed="t <= s" if causal else "true", out_at=out_at, attn_out="v" if proj != "none" else "post(v)")
    bias = "proj_bias" if proj == "bias" else "nullptr"
    impls = []
    for name, strategies, code, launch in _STRATEGIES:  # the projection (a thread per output) is the same for all
        host = fill(_HOST_PLAIN if proj == "none" else _HOST_PROJECTED, sig=sig, bias=bias,
                    launch=fill(launch, out="y" if proj == "none" else "o"))
        impls.append(impl(name, strategies, head + code + (_PROJECT if proj != "none" else "") + host))
    out_shape = ["B", "H", "S", "D"] if proj == "none" else ["B", "S", "H * D"]
    return torch_task(
        name="attention", family="attention",
        description=f"y = {words} (left to right) for q, k, v [B, H, S, D] (H heads of dimension D <= 128)"
                    + (f", the projection's weight [H * D, H * D]{' and bias [H * D]' if proj == 'bias' else ''} "
                       "applied to the heads' outputs concatenated per position" if proj != "none" else "")
                    + f"; y [{', '.join(out_shape)}].",
        source=source, inputs=[buffer(n, "in", "float32", ["B", "H", "S", "D"], NORMAL) for n in ("q", "k", "v")],
        parameters=params, outputs=[buffer("y", "out", "float32", out_shape)],
        sizes=[scalar("batch", "int32", "B"), scalar("heads", "int32", "H"), scalar("seq_len", "int32", "S"),
               scalar("head_dim", "int32", "D")],
        init_inputs=["H * D"] if proj != "none" else [], configs=CONFIGS, hidden=HIDDEN, perf=PERF,
        implementations=impls, tolerance=TOL,
    )  # fmt: skip


def _forward(scale_kind: str, causal: bool, proj: str, const: float) -> tuple[list[str], str]:
    """``forward``'s lines up to the operators after, and the words for them."""
    if scale_kind == "sdpa":
        body = [f"x = F.scaled_dot_product_attention(q, k, v{', is_causal=True' if causal else ''})"]
        words = f"scaled_dot_product_attention(q, k, v{', causal' if causal else ''})"
    else:
        scale = "q.size(-1) ** -0.5" if scale_kind == "head_dim" else repr(const)
        body = [f"scores = torch.matmul(q, k.transpose(-2, -1)) * {scale}"]
        if causal:
            body += ["n = q.size(-2)", "mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)",
                     'scores = scores.masked_fill(mask, float("-inf"))']  # fmt: skip
        body += ["x = torch.softmax(scores, dim=-1)", "x = torch.matmul(x, v)"]
        shown = "/ sqrt(D)" if scale_kind == "head_dim" else f"* {const!r}"
        words = f"softmax(q @ k^T {shown}{' with a causal mask' if causal else ''}) @ v"
    if proj != "none":
        body += ["b, h, n, d = x.shape", "x = x.transpose(1, 2).reshape(b, n, h * d)", "x = self.proj(x)"]
        layer = f"nn.Linear(H * D, H * D{', no bias' if proj == 'no_bias' else ''})"
        words = pipeline(words, "concatenate heads", layer)
    return body, words


_HEAD = """
// q, k, v: [B, H, S, D]. Query row r = (b * H + h) * S + s (n = S, d = D); its keys and values are the rows
// r - s + t, t = 0 .. S - 1.
__device__ __forceinline__ float scale_of(int d) { (void)d; return $scale; }
__device__ __forceinline__ bool allowed(int s, int t) { (void)s; (void)t; return $allowed; }
// Where dimension e of row r's attention output goes.
__device__ __forceinline__ long long out_at(long long r, int e, int heads, int n, int d) {
  (void)heads;
  return $out_at;
}
__device__ __forceinline__ float attn_out(float v) { return $attn_out; }
"""
_NAIVE = """
// Kernel 1: every score, p[r, t] = q[r] . k[t] * scale (or -inf where masked).
__global__ void scores_kernel(const float* q, const float* k, float* p, long long rows, int n, int d) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * n) return;
  long long r = i / n;
  int t = (int)(i % n), s = (int)(r % n);
  const float* qr = q + r * d;
  const float* kr = k + (r - s + t) * d;
  float acc = 0.0f;
  for (int e = 0; e < d; ++e) acc += qr[e] * kr[e];
  p[i] = allowed(s, t) ? acc * scale_of(d) : -INFINITY;
}

// Kernel 2: a thread per row turns its scores into probabilities, in place.
__global__ void softmax_kernel(float* p, long long rows, int n) {
  long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* row = p + r * n;
  float m = -INFINITY, l = 0.0f;
  for (int t = 0; t < n; ++t) m = fmaxf(m, row[t]);
  for (int t = 0; t < n; ++t) {
    row[t] = expf(row[t] - m);
    l += row[t];
  }
  for (int t = 0; t < n; ++t) row[t] /= l;
}

// Kernel 3: a thread per output element, o[r, e] = sum_t p[r, t] * v[t, e].
__global__ void pv_kernel(const float* p, const float* v, float* o, long long rows, int heads, int n, int d) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * d) return;
  long long r = i / d;
  int e = (int)(i % d), s = (int)(r % n);
  const float* pr = p + r * n;
  const float* vb = v + (r - s) * d;
  float acc = 0.0f;
  for (int t = 0; t < n; ++t) acc += pr[t] * vb[(long long)t * d + e];
  o[out_at(r, e, heads, n, d)] = attn_out(acc);
}
"""
_NAIVE_LAUNCH = """  float* p;  // the [rows, S] score matrix
  cudaMalloc(&p, rows * seq_len * sizeof(float));
  scores_kernel<<<(unsigned)((rows * seq_len + 255) / 256), 256>>>(q, k, p, rows, seq_len, head_dim);
  softmax_kernel<<<(unsigned)((rows + 127) / 128), 128>>>(p, rows, seq_len);
  pv_kernel<<<(unsigned)((rows * head_dim + 255) / 256), 256>>>(p, v, $out, rows, heads, seq_len, head_dim);
  cudaFree(p);
"""
_BLOCK = "".join(f"__device__ __forceinline__ float combine_{op}(float a, float b) {{ return {c}; }}\n"
                 for op, (_, c) in COMBINE.items()) + BLOCK_REDUCE + """
// One block per query row: the query and the row's scores in shared memory (d + n floats), block reductions for
// the maximum and the sum, then a thread per output dimension.
constexpr int THREADS = 128;

__global__ void attn_kernel(const float* q, const float* k, const float* v, float* o, long long rows, int heads,
                            int n, int d) {
  extern __shared__ float smem[];
  float* qs = smem;      // [d] the query
  float* ps = smem + d;  // [n] the scores, then exp(score - max)
  __shared__ float shared[THREADS];
  long long r = blockIdx.x;
  int s = (int)(r % n), tid = threadIdx.x;
  const float* kb = k + (r - s) * d;
  const float* vb = v + (r - s) * d;
  for (int e = tid; e < d; e += THREADS) qs[e] = q[r * d + e];
  __syncthreads();
  float m = -INFINITY;
  for (int t = tid; t < n; t += THREADS) {
    float z = -INFINITY;
    if (allowed(s, t)) {
      float acc = 0.0f;
      for (int e = 0; e < d; ++e) acc += qs[e] * kb[(long long)t * d + e];
      z = acc * scale_of(d);
    }
    ps[t] = z;
    m = fmaxf(m, z);
  }
  m = block_max(m, shared);
  float l = 0.0f;
  for (int t = tid; t < n; t += THREADS) {
    ps[t] = expf(ps[t] - m);
    l += ps[t];
  }
  l = block_sum(l, shared);  // its barriers also publish every thread's ps
  for (int e = tid; e < d; e += THREADS) {
    float acc = 0.0f;
    for (int t = 0; t < n; ++t) acc += ps[t] * vb[(long long)t * d + e];
    o[out_at(r, e, heads, n, d)] = attn_out(acc / l);
  }
}
"""
_BLOCK_LAUNCH = """  size_t shared = (head_dim + seq_len) * sizeof(float);
  attn_kernel<<<(unsigned)rows, THREADS, shared>>>(q, k, v, $out, rows, heads, seq_len, head_dim);
"""
_WARP = """
// One warp per query row (8 per block), one pass over the keys with an online softmax: the running maximum m,
// the running sum l and the output accumulators are rescaled whenever m grows. Lane j owns dimensions
// j, j + 32, ... (head dimension at most MAXD).
constexpr int MAXD = 128, PER_LANE = MAXD / 32;

__global__ void attn_kernel(const float* q, const float* k, const float* v, float* o, long long rows, int heads,
                            int n, int d) {
  long long r = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (r >= rows) return;  // whole warps leave together: the shuffles stay full-warp
  int s = (int)(r % n);
  const float* kb = k + (r - s) * d;
  const float* vb = v + (r - s) * d;
  float qv[PER_LANE], acc[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    int e = lane + 32 * i;
    qv[i] = e < d ? q[r * d + e] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int t = 0; t < n; ++t) {
    if (!allowed(s, t)) continue;  // the same for every lane of the warp
    float part = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      int e = lane + 32 * i;
      if (e < d) part += qv[i] * kb[(long long)t * d + e];
    }
    for (int offset = 16; offset > 0; offset >>= 1) part += __shfl_xor_sync(0xffffffffu, part, offset);
    float z = part * scale_of(d);
    float m_new = fmaxf(m, z), correction = expf(m - m_new), p = expf(z - m_new);
    l = l * correction + p;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) {
      int e = lane + 32 * i;
      if (e < d) acc[i] = acc[i] * correction + p * vb[(long long)t * d + e];
    }
    m = m_new;
  }
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) {
    int e = lane + 32 * i;
    if (e < d) o[out_at(r, e, heads, n, d)] = attn_out(acc[i] / l);
  }
}
"""
_WARP_LAUNCH = """  attn_kernel<<<(unsigned)((rows + 7) / 8), 256>>>(q, k, v, $out, rows, heads, seq_len, head_dim);
"""
_PROJECT = """
// The projection: a thread per output, y[p, f] = post(sum_c o[p, c] * w[f, c] (+ bias[f])), e = H * D features.
__global__ void project_kernel(const float* o, const float* w, const float* bias, float* y, long long positions,
                               int e) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= positions * e) return;
  long long p = i / e;
  int f = (int)(i % e);
  float acc = 0.0f;
  for (int c = 0; c < e; ++c) acc += o[p * e + c] * w[(long long)f * e + c];
  y[i] = post(bias ? acc + bias[f] : acc);
}

void project(const float* o, const float* w, const float* bias, float* y, long long positions, int e) {
  project_kernel<<<(unsigned)((positions * e + 255) / 256), 256>>>(o, w, bias, y, positions, e);
}
"""
# (name, strategies, kernels, launch statements writing the attention's output to ``$out``)
_STRATEGIES = (
    ("three_kernels", ["multi-kernel", "materialized-scores", "thread-per-element"], _NAIVE, _NAIVE_LAUNCH),
    ("block_per_row", ["block-per-row", "fused", "shared-memory", "tree-reduction"], _BLOCK, _BLOCK_LAUNCH),
    ("warp_online", ["warp-per-row", "online-softmax", "single-pass", "warp-shuffle"], _WARP, _WARP_LAUNCH),
)
_HOST_PLAIN = """
extern "C" void forward($sig) {
  long long rows = (long long)batch * heads * seq_len;
$launch}
"""
_HOST_PROJECTED = """
extern "C" void forward($sig) {
  long long rows = (long long)batch * heads * seq_len;
  float* o;  // the attention's output as [B, S, H, D]: the projection's input [B * S, H * D]
  cudaMalloc(&o, rows * head_dim * sizeof(float));
$launch  project(o, proj_weight, $bias, y, (long long)batch * seq_len, heads * head_dim);
  cudaFree(o);
}
"""
