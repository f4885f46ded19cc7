"""One frontier step of a graph traversal on CSR adjacency: BFS expansion, parent choice, edge relaxation."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudaperf_env.datagen.families.common import buffer, fill, grid, impl, nth, scalar, task

# (description of the output, per-vertex init of out[v], visit of edge e = (u -> v) from a frontier vertex u,
#  per-vertex finish or ""); all outcomes are independent of the order of visits.
KINDS: dict[str, tuple[str, str, str, str]] = {
    "next_mask": ("out[v] = 1 if v is unvisited (level[v] < 0) and some frontier vertex has an edge to v, else 0",
                  "out[v] = 0;", "if (level[v] < 0) out[v] = 1;", ""),
    "in_count": ("out[v] = the number of edges from frontier vertices to v",
                 "out[v] = 0;", "ATOMIC_ADD(&out[v], 1);", ""),
    "unvisited_count": ("out[v] = the number of edges from frontier vertices to v if v is unvisited (level[v] < 0), "
                        "else 0", "out[v] = 0;", "if (level[v] < 0) ATOMIC_ADD(&out[v], 1);", ""),
    "min_parent": ("out[v] = the smallest frontier vertex u with an edge u -> v if v is unvisited (level[v] < 0), "
                   "else -1 (also when there is none)", "out[v] = 0x7fffffff;",
                   "if (level[v] < 0) ATOMIC_MIN(&out[v], u);", "if (out[v] == 0x7fffffff) out[v] = -1;"),
    "max_parent": ("out[v] = the largest frontier vertex u with an edge u -> v, or -1 when there is none",
                   "out[v] = -1;", "ATOMIC_MAX(&out[v], u);", ""),
    "next_level": ("out[v] = cur + 1 if v is unvisited (level[v] < 0) and some frontier vertex has an edge to v, "
                   "else level[v] (the level array after one BFS step)", "out[v] = level[v];",
                   "if (level[v] < 0) out[v] = cur + 1;", ""),
    "weight_sum": ("out[v] = the sum of weight[e] over edges e = (u -> v) from frontier vertices u",
                   "out[v] = 0;", "ATOMIC_ADD(&out[v], weight[e]);", ""),
    "relax": ("out[v] = min(dist[v], min over edges e = (u -> v) from frontier vertices u of dist[u] + weight[e]) "
              "(one Bellman-Ford relaxation from the frontier)", "out[v] = dist[v];",
              "ATOMIC_MIN(&out[v], dist[u] + weight[e]);", ""),
    "relax_max": ("out[v] = max(dist[v], max over edges e = (u -> v) from frontier vertices u of dist[u] + weight[e]) "
                  "(one longest-path relaxation from the frontier)", "out[v] = dist[v];",
                  "ATOMIC_MAX(&out[v], dist[u] + weight[e]);", ""),
    "min_weight": ("out[v] = the smallest weight[e] over edges e = (u -> v) from frontier vertices u, or -1 when "
                   "there is none", "out[v] = 0x7fffffff;", "ATOMIC_MIN(&out[v], weight[e]);",
                   "if (out[v] == 0x7fffffff) out[v] = -1;"),
    "xor_parents": ("out[v] = the bitwise xor of u over edges e = (u -> v) from frontier vertices u (0 when none)",
                    "out[v] = 0;", "ATOMIC_XOR(&out[v], u);", ""),
    "parent_bits": ("out[v] = the bitwise or of 1 << (u % 31) over edges e = (u -> v) from frontier vertices u",
                    "out[v] = 0;", "ATOMIC_OR(&out[v], 1 << (u % 31));", ""),
}  # fmt: skip
FRONTIERS = {"eq": "level[u] == cur", "ge": "level[u] >= cur", "odd": "level[u] >= 0 && (level[u] & 1) == (cur & 1)",
             "band": "level[u] == cur || level[u] == cur + 1", "le": "level[u] >= 0 && level[u] <= cur",
             "unvisited": "level[u] < 0", "mod3": "level[u] >= 0 && level[u] % 3 == cur % 3",
             "near": "level[u] > cur - 2 && level[u] < cur + 2"}
STRUCTURES = grid(sorted(KINDS), sorted(FRONTIERS))
_SEQ = {
    "ATOMIC_ADD(&out[v], 1)": "out[v] += 1",
    "ATOMIC_ADD(&out[v], weight[e])": "out[v] += weight[e]",
    "ATOMIC_MIN(&out[v], u)": "if (u < out[v]) out[v] = u",
    "ATOMIC_MAX(&out[v], u)": "if (u > out[v]) out[v] = u",
    "ATOMIC_MIN(&out[v], dist[u] + weight[e])": "if (dist[u] + weight[e] < out[v]) out[v] = dist[u] + weight[e]",
    "ATOMIC_MAX(&out[v], dist[u] + weight[e])": "if (dist[u] + weight[e] > out[v]) out[v] = dist[u] + weight[e]",
    "ATOMIC_MIN(&out[v], weight[e])": "if (weight[e] < out[v]) out[v] = weight[e]",
    "ATOMIC_XOR(&out[v], u)": "out[v] ^= u",
    "ATOMIC_OR(&out[v], 1 << (u % 31))": "out[v] |= 1 << (u % 31)",
}


def frontier_step(rng: np.random.Generator, variant: int) -> dict[str, Any]:
    """Push from every frontier vertex u (a predicate of level[u]) along its out-edges; deterministic outputs."""
    kind, fname = nth(variant, STRUCTURES)
    what, init, visit, finish = KINDS[kind]
    ins = [buffer("rowptr", "in", "int32", ["V + 1"], {"dist": "csr_rowptr", "nnz": "E"}),
           buffer("colidx", "in", "int32", ["E"], {"dist": "randint", "low": 0, "high": "V"}),
           buffer("level", "in", "int32", ["V"], {"dist": "randint", "low": -3, "high": 4})]  # fmt: skip
    if "weight" in visit:
        ins.append(buffer("weight", "in", "int32", ["E"], {"dist": "randint", "low": 1, "high": 50}))
    if "dist" in visit:
        ins.append(buffer("dist", "in", "int32", ["V"], {"dist": "randint", "low": 0, "high": 1000}))
    sig = "int nv, int cur, " + ", ".join(f"const int* {a['name']}" for a in ins) + ", int* out"
    call = "nv, cur, " + ", ".join(a["name"] for a in ins) + ", out"
    seq_visit = visit
    for atomic, plain in _SEQ.items():
        seq_visit = seq_visit.replace(atomic, plain)
    dev_visit = visit
    for name in ("ADD", "MIN", "MAX", "XOR", "OR"):
        dev_visit = dev_visit.replace(f"ATOMIC_{name}", f"atomic{name.capitalize()}")
    kw = {"sig": sig, "call": call, "init": init, "visit": dev_visit, "seq_visit": seq_visit,
          "front": FRONTIERS[fname], "finish": finish or "(void)v;",
          "fin_launch": "finish_kernel<<<(nv + 255) / 256, 256>>>(" + call + ");" if finish else ""}  # fmt: skip
    common = fill(_COMMON, **kw)
    impls = [
        impl("naive", ["thread-per-vertex", "push", "atomics"], common + fill(_NAIVE, **kw)),
        impl("warp_per_vertex", ["warp-per-vertex", "push", "coalesced", "atomics"], common + fill(_WARP, **kw)),
        impl(
            "frontier_queue",
            ["frontier-queue", "compaction", "warp-per-vertex", "atomics"],
            common + fill(_QUEUE, **kw),
        ),
    ]
    args = [scalar("nv", "int32", "V"), scalar("cur", "int32", int(rng.integers(0, 3))), *ins,
            buffer("out", "out", "int32", ["V"])]  # fmt: skip
    return task(
        name="frontier_step", family="frontier_step", entry="frontier_step", args=args,
        description=f"One push step of a graph traversal on a directed graph of nv vertices in CSR form (the "
        f"out-edges of u are colidx[e] for e in [rowptr[u], rowptr[u+1]); duplicate edges count separately). "
        f"Vertex u is in the frontier when {FRONTIERS[fname]}. Output (int32, one per vertex): {what}.",
        configs=[{"V": 17, "E": 50}, {"V": 1000, "E": 5003}, {"V": 20011, "E": 160007}],
        hidden=[{"V": 3001, "E": 24001}], perf=[{"V": 1 << 22, "E": 1 << 25}, {"V": 1 << 20, "E": 1 << 26}],
        reference=fill(_REF, **kw), implementations=impls,
    )  # fmt: skip


_REF = """
void frontier_step($sig) {
  for (int v = 0; v < nv; ++v) { $init }
  for (int u = 0; u < nv; ++u) {
    if (!($front)) continue;
    for (int e = rowptr[u]; e < rowptr[u + 1]; ++e) {
      int v = colidx[e];
      $seq_visit;
    }
  }
  for (int v = 0; v < nv; ++v) { $finish }
}
"""
_COMMON = """
__device__ __forceinline__ bool in_frontier(int u, int cur, const int* level) { return $front; }
__global__ void init_kernel($sig) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < nv) { $init }
}
__global__ void finish_kernel($sig) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < nv) { $finish }
}
"""
_NAIVE = """
// One thread per vertex: non-frontier threads idle, frontier threads walk their whole edge list.
__global__ void push_kernel($sig) {
  int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= nv || !in_frontier(u, cur, level)) return;
  for (int e = rowptr[u]; e < rowptr[u + 1]; ++e) {
    int v = colidx[e];
    $visit
  }
}
extern "C" void frontier_step($sig) {
  init_kernel<<<(nv + 255) / 256, 256>>>($call);
  push_kernel<<<(nv + 255) / 256, 256>>>($call);
  $fin_launch
}
"""
_WARP = """
// One warp per vertex: lanes take consecutive edges, so colidx reads are coalesced.
__global__ void push_kernel($sig) {
  int u = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (u >= nv || !in_frontier(u, cur, level)) return;
  for (int e = rowptr[u] + lane; e < rowptr[u + 1]; e += 32) {
    int v = colidx[e];
    $visit
  }
}
extern "C" void frontier_step($sig) {
  init_kernel<<<(nv + 255) / 256, 256>>>($call);
  push_kernel<<<(nv + 7) / 8, 256>>>($call);
  $fin_launch
}
"""
_QUEUE = """
// Compact the frontier into a queue first (any order: the outputs do not depend on it),
// then one warp per queued vertex, so no warp is spent on vertices outside the frontier.
__global__ void enqueue_kernel($sig, int* queue, int* count) {
  int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u < nv && in_frontier(u, cur, level)) queue[atomicAdd(count, 1)] = u;
}
__global__ void push_kernel($sig, const int* queue, const int* count) {
  int k = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (k >= *count) return;
  int u = queue[k];
  for (int e = rowptr[u] + lane; e < rowptr[u + 1]; e += 32) {
    int v = colidx[e];
    $visit
  }
}
extern "C" void frontier_step($sig) {
  int *queue, *count, size = 0;
  cudaMalloc(&queue, sizeof(int) * (nv > 0 ? nv : 1));
  cudaMalloc(&count, sizeof(int));
  cudaMemset(count, 0, sizeof(int));
  init_kernel<<<(nv + 255) / 256, 256>>>($call);
  enqueue_kernel<<<(nv + 255) / 256, 256>>>($call, queue, count);
  cudaMemcpy(&size, count, sizeof(int), cudaMemcpyDeviceToHost);
  if (size > 0) push_kernel<<<(size + 7) / 8, 256>>>($call, queue, count);
  $fin_launch
  cudaFree(queue);
  cudaFree(count);
}
"""
