"""PyTorch indexing models with integer index inputs: gather, index_select, embedding lookup, scatter_add.

Indices are ``int32`` inputs drawn in range (the model casts them with
``.long()``, as torch's indexing wants); the kernel reads them as ``const int*``.
Gathers get a thread per output, a grid-stride loop and four outputs per thread
(:mod:`torch_spatial`'s templates); ``scatter_add`` gets atomics per source
element, a thread per output that searches its row's indices (no atomics,
deterministic), and a block per row accumulating in shared memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, impl, pick, scalar
from cudaperf_env.datagen.families.torch_common import chain, module_source, pipeline, torch_task
from cudaperf_env.datagen.families.torch_spatial import FOUR_PER_THREAD, GRID_STRIDE, ONE_PER_THREAD

NORMAL = {"dist": "normal", "mean": 0, "std": 1.0}
TOL = {"rtol": 1.0e-4, "atol": 1.0e-5}
CONFIGS = [{"B": 8, "D": 300, "K": 100}, {"B": 13, "D": 77, "K": 129}, {"B": 32, "D": 64, "K": 16}]
HIDDEN = [{"B": 5, "D": 1001, "K": 37}]
PERF = [{"B": 4096, "D": 4096, "K": 2048}]


def gather(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(x, idx)`` = post(gather / index_select / embedding of pre(x) at integer indices ``idx``)."""
    kind = pick(rng, ("gather", "index_select", "embedding"))
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 3)))
    x_name = "weight" if kind == "embedding" else "x"
    x_shape, idx_shape, y_shape, idx_high = {
        "gather": (["B", "D"], ["B", "K"], ["B", "K"], "D"),  # y[b, k] = x[b, idx[b, k]]
        "index_select": (["B", "D"], ["K"], ["K", "D"], "B"),  # y[k, d] = x[idx[k], d]
        "embedding": (["B", "D"], ["K"], ["K", "D"], "B"),  # y[k, d] = weight[idx[k], d]: B embeddings of size D
    }[kind]
    torch_call = {"gather": "torch.gather(x, 1, idx.long())", "index_select": "torch.index_select(x, 0, idx.long())",
                  "embedding": "self.embed(idx.long())"}[kind]  # fmt: skip
    value = {"gather": "x[(o / k) * dim + idx[o]]", "index_select": "x[(long long)idx[o / dim] * dim + o % dim]",
             "embedding": "weight[(long long)idx[o / dim] * dim + o % dim]"}[kind]  # fmt: skip
    total = "(long long)batch * k" if kind == "gather" else "(long long)k * dim"
    if kind == "embedding":
        body = ["x = self.embed(idx.long())", *pre.torch_lines(), *post.torch_lines(), "return x"]
        words = pipeline("embedding(idx) of a [B, D] table", pre.words, post.words)
    else:
        body = [*pre.torch_lines(), f"x = {torch_call}", *post.torch_lines(), "return x"]
        words = pipeline("x", pre.words, f"{kind}(idx)", post.words)
    source = module_source(
        doc=f"Computes {words}.", init_params="num, dim" if kind == "embedding" else "",
        init_body=["self.embed = nn.Embedding(num, dim)"] if kind == "embedding" else [],
        forward_params="idx" if kind == "embedding" else "x, idx", forward_body=body,
        constants={"num": 4096, "dim": 1024, "k": 2048},
        inputs=([] if kind == "embedding" else ["torch.randn(num, dim)"])
        + [f"torch.randint(0, {'dim' if kind == 'gather' else 'num'}, {'(num, k)' if kind == 'gather' else '(k,)'})"],
        init_inputs=["num", "dim"] if kind == "embedding" else [],
    )  # fmt: skip
    floats = "" if kind == "embedding" else "const float* x, "
    sig = f"{floats}const int* idx, {'const float* weight, ' if kind == 'embedding' else ''}float* y, " \
          "int batch, int dim, int k"
    kargs = ("x, " if kind != "embedding" else "") + "idx, " + ("weight, " if kind == "embedding" else "") \
        + "y, batch, dim, k"  # fmt: skip
    head = pre.device_function("pre") + post.device_function("post")
    kw = {"sig": sig, "kargs": kargs, "total": total, "at": f"post(pre({value}))"}
    impls = [impl("naive", ["thread-per-output"], head + fill(ONE_PER_THREAD, **kw)),
             impl("grid_stride", ["grid-stride", "coalesced"], head + fill(GRID_STRIDE, **kw)),
             impl("four_per_thread", ["multi-output-per-thread", "loop-unrolling"], head + fill(FOUR_PER_THREAD, **kw))]
    index = buffer("idx", "in", "int32", idx_shape, {"dist": "randint", "low": 0, "high": idx_high})
    table = buffer(x_name, "in", "float32", x_shape, NORMAL)
    return torch_task(
        name="gather", family="gather",
        description=f"y = {words} (left to right): {kind} with int32 indices idx {_dims(idx_shape)} into a float32 "
                    f"{'embedding table' if kind == 'embedding' else 'tensor'} {_dims(x_shape)}, y {_dims(y_shape)}.",
        source=source, inputs=[index] if kind == "embedding" else [table, index],
        parameters=[("embed.weight", table)] if kind == "embedding" else [],
        outputs=[buffer("y", "out", "float32", y_shape)],
        sizes=[scalar("batch", "int32", "B"), scalar("dim", "int32", "D"), scalar("k", "int32", "K")],
        init_inputs=["B", "D"] if kind == "embedding" else [], configs=CONFIGS, hidden=HIDDEN, perf=PERF,
        implementations=impls, tolerance=TOL,
    )


def scatter_add(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """``forward(src, idx)`` = post(zeros(B, D).scatter_add_(1, idx, pre(src))): sums at colliding indices."""
    pre, post = chain(rng, int(rng.integers(0, 2))), chain(rng, int(rng.integers(0, 3)))
    words = pipeline("src", pre.words, "scatter_add(dim=1, idx) into zeros [B, D]", post.words)
    body = [*pre.torch_lines("src"), "y = torch.zeros(src.shape[0], self.dim, dtype=src.dtype)",
            "y = y.scatter_add(1, idx.long(), src)", *post.torch_lines("y"), "return y"]  # fmt: skip
    source = module_source(
        doc=f"Computes {words}.", init_params="dim", init_body=["self.dim = dim"], forward_params="src, idx",
        forward_body=body, constants={"batch_size": 128, "dim": 1024, "k": 4096},
        inputs=["torch.randn(batch_size, k)", "torch.randint(0, dim, (batch_size, k))"], init_inputs=["dim"],
    )
    head = pre.device_function("pre") + post.device_function("post")
    sig = "const float* src, const int* idx, float* y, int batch, int dim, int k"
    impls = [impl("atomic", ["atomics", "thread-per-input"], head + _SCATTER_ATOMIC),
             impl("search", ["thread-per-output", "no-atomics"], head + _SCATTER_SEARCH),
             impl("shared_row", ["block-per-row", "shared-memory", "shared-atomics"], head + _SCATTER_SHARED)]
    for i in impls:
        i["source"] = i["source"].replace("$sig", sig)
    return torch_task(
        name="scatter_add", family="scatter_add",
        description=f"y = {words} (left to right) for src [B, K] float32 and int32 column indices idx [B, K] in "
                    "[0, D); y [B, D], zero where no index lands.",
        source=source, inputs=[buffer("src", "in", "float32", ["B", "K"], NORMAL),
                               buffer("idx", "in", "int32", ["B", "K"], {"dist": "randint", "low": 0, "high": "D"})],
        parameters=[], outputs=[buffer("y", "out", "float32", ["B", "D"])],
        sizes=[scalar("batch", "int32", "B"), scalar("dim", "int32", "D"), scalar("k", "int32", "K")],
        init_inputs=["D"], configs=CONFIGS, hidden=HIDDEN, perf=[{"B": 1024, "D": 4096, "K": 4096}],
        implementations=impls, tolerance={"rtol": 1.0e-4, "atol": 1.0e-5},
    )


def _dims(shape: list[str]) -> str:
    return "[" + ", ".join(shape) + "]"


_SCATTER_ATOMIC = """
__global__ void scatter_kernel($sig) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)batch * k) atomicAdd(&y[(i / k) * dim + idx[i]], pre(src[i]));
}

__global__ void finish_kernel(float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = post(y[i]);
}

extern "C" void forward($sig) {
  long long n = (long long)batch * dim, m = (long long)batch * k;
  cudaMemset(y, 0, n * sizeof(float));  // outputs arrive poisoned
  scatter_kernel<<<(unsigned)((m + 255) / 256), 256>>>(src, idx, y, batch, dim, k);
  finish_kernel<<<(unsigned)((n + 255) / 256), 256>>>(y, n);
}
"""
_SCATTER_SEARCH = """
// Output (b, d) sums the sources of row b whose index is d, in index order: no atomics, same order every run.
__global__ void scatter_kernel($sig) {
  long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= (long long)batch * dim) return;
  long long b = o / dim;
  int d = (int)(o % dim);
  float acc = 0.0f;
  for (int j = 0; j < k; ++j)
    if (idx[b * k + j] == d) acc += pre(src[b * k + j]);
  y[o] = post(acc);
}

extern "C" void forward($sig) {
  long long n = (long long)batch * dim;
  scatter_kernel<<<(unsigned)((n + 255) / 256), 256>>>(src, idx, y, batch, dim, k);
}
"""
_SCATTER_SHARED = """
// One block per row: the row's D sums live in shared memory (dynamic size), added with shared atomics.
__global__ void scatter_kernel($sig) {
  extern __shared__ float row[];
  long long b = blockIdx.x;
  for (int d = threadIdx.x; d < dim; d += blockDim.x) row[d] = 0.0f;
  __syncthreads();
  for (int j = threadIdx.x; j < k; j += blockDim.x) atomicAdd(&row[idx[b * k + j]], pre(src[b * k + j]));
  __syncthreads();
  for (int d = threadIdx.x; d < dim; d += blockDim.x) y[b * dim + d] = post(row[d]);
}

extern "C" void forward($sig) {
  scatter_kernel<<<batch, 256, dim * sizeof(float)>>>(src, idx, y, batch, dim, k);
}
"""
