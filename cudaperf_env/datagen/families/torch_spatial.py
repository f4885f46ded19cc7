"""PyTorch sliding-window models: max / average pooling and small convolutions (1d and 2d), with epilogues.

Both are windows over the spatial dims of ``[N, C, L]`` or ``[N, C, H, W]``
(stride, padding, kernel size drawn per task). Output sizes are
``(L + 2 * P - K) // S + 1`` per spatial dim, written as shape expressions, so
odd sizes work. Three strategies each: a thread per output, a grid-stride loop
with the window offsets hoisted, and (pooling) four outputs per thread or
(convolution) the filter of one output channel staged in shared memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, impl, pick, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task

NORMAL = {"dist": "normal", "mean": 0, "std": 1.0}
CONFIGS = {1: [{"N": 2, "C": 3, "L": 100}, {"N": 3, "C": 4, "L": 77}, {"N": 4, "C": 2, "L": 64}],
           2: [{"N": 2, "C": 3, "H": 20, "W": 24}, {"N": 1, "C": 4, "H": 17, "W": 23}, {"N": 2, "C": 2, "H": 16,
                                                                                     "W": 16}]}  # fmt: skip
HIDDEN = {1: [{"N": 2, "C": 5, "L": 131}], 2: [{"N": 1, "C": 3, "H": 29, "W": 19}]}
PERF = {1: [{"N": 64, "C": 64, "L": 8192}], 2: [{"N": 32, "C": 64, "H": 128, "W": 128}]}


def _out(size: str, k: int, s: int, p: int) -> str:
    return f"({size} + {2 * p} - {k}) // {s} + 1" if p else f"({size} - {k}) // {s} + 1"


def pooling(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(max_pool or avg_pool (1d or 2d) of pre(x)), kernel 2-4, stride 1-kernel, padding."""
    dims, kind = int(pick(rng, (1, 2))), pick(rng, ("max", "avg"))
    k = int(rng.integers(2, 5))
    s, p = int(rng.integers(1, k + 1)), int(rng.integers(0, k // 2 + 1))
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 2)))
    spatial = ["L"] if dims == 1 else ["H", "W"]
    out = [_out(d, k, s, p) for d in spatial]
    call = f"F.{kind}_pool{dims}d(x, {k}, stride={s}, padding={p})"
    words = pipeline("x", pre.words, f"{kind}_pool{dims}d(kernel={k}, stride={s}, padding={p})", post.words)
    source = module_source(
        doc=f"Computes {words}.", init_params="", init_body=[], forward_params="x",
        forward_body=[*pre.torch_lines(), f"x = {call}", *post.torch_lines(), "return x"],
        constants={"batch_size": 16, "channels": 32, **({"length": 4096} if dims == 1 else {"height": 128,
                                                                                           "width": 128})},
        inputs=["torch.randn(batch_size, channels, length)" if dims == 1
                else "torch.randn(batch_size, channels, height, width)"], init_inputs=[],
    )  # fmt: skip
    # max pooling pads with -inf; average pooling counts the padded zeros (count_include_pad=True)
    comb = "v = fmaxf(v, pre(x[i]));" if kind == "max" else "v += pre(x[i]);"
    w = _window(dims, k, s, p)
    final = "v" if kind == "max" else f"v / {float(k ** dims)!r}f"
    device = (f"{pre.device_function('pre')}{post.device_function('post')}{w['outs']}\n"
              f"__device__ float pool_at(const float* x, long long o, {w['sizes']}) {{\n{w['decode']}"
              f"  long long base = (o / outs) * {w['plane']};\n"
              f"  float v = {'-INFINITY' if kind == 'max' else '0.0f'};\n"
              f"  {w['loop'].replace('$comb', comb)}\n  return post({final});\n}}\n")
    kw = {"sizes": w["sizes"], "args": w["args"], "at": f"pool_at(x, o, {w['args']})",
          "sig": f"const float* x, float* y, {w['sizes']}", "kargs": f"x, y, {w['args']}",
          "total": f"(long long)batch * channels * spatial_outs({w['args']})"}
    impls = [impl("naive", ["thread-per-output"], device + fill(ONE_PER_THREAD, **kw)),
             impl("grid_stride", ["grid-stride", "coalesced"], device + fill(GRID_STRIDE, **kw)),
             impl("four_per_thread", ["multi-output-per-thread", "loop-unrolling"],
                  device + fill(FOUR_PER_THREAD, **kw))]
    return _spatial_task("pooling", f"y = {words} (left to right) of a [N, C, {', '.join(spatial)}] float32 "
                         "tensor.", source, dims, [], out, impls, {"rtol": 1.0e-4, "atol": 1.0e-5})


def conv(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x)`` = post(conv(x)): ``nn.Conv1d`` / ``nn.Conv2d`` (kernel 1-5, stride 1-2, padding, bias or not)."""
    dims, k = int(pick(rng, (1, 2))), int(pick(rng, (1, 3, 5)))
    s, p = int(rng.integers(1, 3)), int(rng.integers(0, k // 2 + 1))
    bias, post = bool(rng.integers(0, 4)), chain(rng, int(rng.integers(0, 3)))
    co = int(pick(rng, (4, 8)))
    spatial = ["L"] if dims == 1 else ["H", "W"]
    out = [_out(d, k, s, p) for d in spatial]
    layer = f"nn.Conv{dims}d(in_channels, {co}, {k}, stride={s}, padding={p}{'' if bias else ', bias=False'})"
    words = pipeline(f"conv{dims}d(out_channels={co}, kernel={k}, stride={s}, padding={p}"
                     f"{'' if bias else ', no bias'})", post.words)  # fmt: skip
    source = module_source(
        doc=f"Computes {words}.", init_params="in_channels", init_body=[f"self.conv = {layer}"], forward_params="x",
        forward_body=["x = self.conv(x)", *post.torch_lines(), "return x"],
        constants={"batch_size": 16, "in_channels": 16, **({"length": 4096} if dims == 1 else {"height": 128,
                                                                                              "width": 128})},
        inputs=["torch.randn(batch_size, in_channels, length)" if dims == 1
                else "torch.randn(batch_size, in_channels, height, width)"], init_inputs=["in_channels"],
    )  # fmt: skip
    init = {"dist": "uniform", "low": -0.25, "high": 0.25}  # about nn.Conv's 1 / sqrt(fan_in) at these sizes
    params = [("conv.weight", buffer("weight", "in", "float32", [co, "C", *[k] * dims], init))]
    if bias:
        params.append(("conv.bias", buffer("bias", "in", "float32", [co], init)))
    w = _window(dims, k, s, p)
    ksq = k ** dims
    device = (f"{post.device_function('post')}{w['outs']}\nconstexpr int CO = {co}, KSQ = {ksq};\n\n"
              f"// Output o = ((n * CO + co) * spatial outputs + position); it reads every input channel's window.\n"
              f"__device__ float conv_at(const float* x, const float* weight, const float* bias, long long o, "
              f"long long filter_stride, {w['sizes']}) {{\n{w['decode']}  long long plane_o = o / outs;\n"
              f"  int co = (int)(plane_o % CO);\n"
              f"  long long nb = plane_o / CO;\n  float v = 0.0f;\n  for (int ci = 0; ci < channels; ++ci) {{\n"
              f"    long long base = (nb * channels + ci) * {w['plane']};\n"
              f"    const float* wt = weight + co * filter_stride + (long long)ci * KSQ;\n"
              f"    {w['loop'].replace('$comb', 'v += x[i] * wt[wi];')}\n  }}\n"
              f"  return post(bias ? v + bias[co] : v);\n}}\n")
    params_sig = "const float* weight, " + ("const float* bias, " if bias else "")
    b = "bias" if bias else "nullptr"
    kw = {"sizes": w["sizes"], "args": w["args"],
          "at": f"conv_at(x, weight, {b}, o, (long long)channels * KSQ, {w['args']})",
          "sig": f"const float* x, {params_sig}float* y, {w['sizes']}", "bias": b,
          "kargs": f"x, weight, {'bias, ' if bias else ''}y, {w['args']}",
          "total": f"(long long)batch * CO * spatial_outs({w['args']})"}
    impls = [impl("naive", ["thread-per-output"], device + fill(ONE_PER_THREAD, **kw)),
             impl("grid_stride", ["grid-stride", "coalesced"], device + fill(GRID_STRIDE, **kw)),
             impl("shared_filter", ["shared-memory", "block-per-output-channel"], device + fill(SHARED_FILTER, **kw))]
    return _spatial_task("conv", f"y = {words} (left to right) of x [N, C, {', '.join(spatial)}] with the "
                         f"layer's weight [{co}, C, {', '.join([str(k)] * dims)}]"
                         f"{f' and bias [{co}]' if bias else ''}.", source, dims, params, out, impls,
                         {"rtol": 1.0e-3, "atol": 1.0e-4}, co)  # fmt: skip


def _window(dims: int, k: int, s: int, p: int) -> dict[str, str]:
    """C pieces of a window over output position ``o``: size parameters, the spatial output count, decoding,
    and the window loop (``$comb`` reads element ``i`` of the plane at ``base``, filter tap ``wi``)."""
    if dims == 1:
        sizes, args = "int batch, int channels, int length", "batch, channels, length"
        outs = (f"__host__ __device__ inline long long spatial_outs({sizes}) {{ return (length + {2 * p} - {k}) / {s}"
                " + 1; }")
        decode = f"  long long outs = spatial_outs({args});\n  int ol = (int)(o % outs);\n"
        loop = (f"for (int a = 0; a < {k}; ++a) {{ int l = ol * {s} - {p} + a; if (l < 0 || l >= length) continue; "
                f"long long i = base + l; int wi = a; $comb }}")
        plane = "(long long)length"
    else:
        sizes, args = "int batch, int channels, int height, int width", "batch, channels, height, width"
        outs = (f"__host__ __device__ inline long long spatial_outs({sizes}) {{\n"
                f"  return (long long)((height + {2 * p} - {k}) / {s} + 1) * ((width + {2 * p} - {k}) / {s} + 1);\n}}")
        decode = (f"  long long outs = spatial_outs({args});\n  int wo_n = (width + {2 * p} - {k}) / {s} + 1;\n"
                  "  int ow = (int)(o % outs % wo_n), oh = (int)(o % outs / wo_n);\n")
        loop = (f"for (int a = 0; a < {k}; ++a) for (int b = 0; b < {k}; ++b) {{ int h = oh * {s} - {p} + a, "
                f"w = ow * {s} - {p} + b; if (h < 0 || h >= height || w < 0 || w >= width) continue; "
                f"long long i = base + (long long)h * width + w; int wi = a * {k} + b; $comb }}")
        plane = "(long long)height * width"
    return {"sizes": sizes, "args": args, "outs": outs, "decode": decode, "loop": loop, "plane": plane}


def _spatial_task(family: str, description: str, source: str, dims: int, params: list, out: list[str],
                  impls: list[dict[str, Any]], tol: dict[str, float], out_channels: int = 0
                  ) -> dict[str, Any]:  # fmt: skip
    spatial = ["L"] if dims == 1 else ["H", "W"]
    names = ["batch", "channels", *(["length"] if dims == 1 else ["height", "width"])]
    return torch_task(
        name=family, family=family, description=description, source=source,
        inputs=[buffer("x", "in", "float32", ["N", "C", *spatial], NORMAL)], parameters=params,
        outputs=[buffer("y", "out", "float32", ["N", out_channels or "C", *out])],
        sizes=[scalar(n, "int32", sym) for n, sym in zip(names, ["N", "C", *spatial], strict=True)],
        init_inputs=["C"] if out_channels else [], configs=CONFIGS[dims], hidden=HIDDEN[dims], perf=PERF[dims],
        implementations=impls, tolerance=tol,
    )


ONE_PER_THREAD = """
__global__ void window_kernel($sig) {
  long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (o < $total) y[o] = $at;
}

extern "C" void forward($sig) {
  long long total = $total;
  window_kernel<<<(unsigned)((total + 255) / 256), 256>>>($kargs);
}
"""
GRID_STRIDE = """
__global__ void window_kernel($sig) {
  long long total = $total;
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += step) y[o] = $at;
}

extern "C" void forward($sig) {
  long long blocks = ($total + 255) / 256;
  window_kernel<<<(unsigned)(blocks < 1024 ? blocks : 1024), 256>>>($kargs);
}
"""
FOUR_PER_THREAD = """
// Each block covers 4 * 256 consecutive outputs; thread t takes t, t + 256, ... (coalesced stores).
constexpr int THREADS = 256, ITEMS = 4;

__global__ void window_kernel($sig) {
  long long total = $total;
  long long first = (long long)blockIdx.x * THREADS * ITEMS + threadIdx.x;
#pragma unroll
  for (int item = 0; item < ITEMS; ++item) {
    long long o = first + (long long)item * THREADS;
    if (o < total) y[o] = $at;
  }
}

extern "C" void forward($sig) {
  long long total = $total;
  window_kernel<<<(unsigned)((total + THREADS * ITEMS - 1) / (THREADS * ITEMS)), THREADS>>>($kargs);
}
"""
SHARED_FILTER = """
// blockIdx.y = n * CO + co: the block's outputs share output channel co, whose filter it stages in shared memory.
__global__ void window_kernel($sig) {
  extern __shared__ float filter[];
  int co = blockIdx.y % CO;
  for (int t = threadIdx.x; t < channels * KSQ; t += blockDim.x) filter[t] = weight[(long long)co * channels * KSQ + t];
  __syncthreads();
  long long outs = spatial_outs($args);
  long long position = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (position >= outs) return;
  long long o = (long long)blockIdx.y * outs + position;
  y[o] = conv_at(x, filter, $bias, o, 0, $args);  // the staged filter is channel co's: no stride per channel
}

extern "C" void forward($sig) {
  long long outs = spatial_outs($args);
  dim3 grid((unsigned)((outs + 127) / 128), (unsigned)(batch * CO));
  window_kernel<<<grid, 128, channels * KSQ * sizeof(float)>>>($kargs);
}
"""
