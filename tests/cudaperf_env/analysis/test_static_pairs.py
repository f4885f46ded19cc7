"""Static source features on pairs of kernels that differ in one property."""

from __future__ import annotations

import pytest

from cudaperf_env.analysis import analyze
from cudaperf_env.analysis.static import analyze_source, source_features
from cudaperf_env.tasks import load_tasks


def features(code: str) -> dict:
    return source_features(analyze_source(code))


COALESCED = """
__global__ void copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
"""
STRIDED = """
__global__ void copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 32) y[i] = x[threadIdx.x * 32];
}
"""


def test_unit_stride_is_coalesced_and_stride_32_is_not():
    good, bad = features(COALESCED), features(STRIDED)
    assert good["coalescing"] == 1.0 and good["strided_accesses"] == 0
    assert bad["strided_accesses"] == 1 and bad["coalesced_accesses"] == 1  # the store is still coalesced
    assert bad["coalescing"] == pytest.approx(0.5)
    assert (bad["strided_loads"], bad["strided_stores"]) == (1, 0)
    hints = analyze(STRIDED, None).hints
    assert "loads of `x` are strided by 32 in threadIdx.x (line 4): not coalesced" in hints
    assert not any("strided" in h for h in analyze(COALESCED, None).hints)


SCATTER = """
__global__ void scatter(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 32) y[threadIdx.x * 32] = x[i];
}
"""


def test_a_strided_store_and_a_strided_load_are_told_apart():
    """A gather (strided loads) and a scatter (strided stores) have the same access counts; the GPU
    runs them at different speeds (permute: 2.3x on an H200), so the features split them."""
    gather, scatter = features(STRIDED), features(SCATTER)
    assert gather["strided_accesses"] == scatter["strided_accesses"] == 1
    assert (scatter["strided_loads"], scatter["strided_stores"]) == (0, 1)
    assert (gather["strided_loads"], gather["strided_stores"]) == (1, 0)


def test_symbolic_stride_names_the_variable():
    code = """
__global__ void rows(int n, const float* a, float* out) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f;
  for (int j = 0; j < n; ++j) s += a[r * n + j];
  out[r] = s;
}
"""
    assert any(h.startswith("loads of `a` are strided by n in threadIdx.x") for h in analyze(code, None).hints)


def test_index_through_locals_pointers_and_2d_blocks():
    code = """
__global__ void t(int rows, int cols, const float* a, float* b) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  const float* row = a + (size_t)i * cols;
  if (i < rows && j < cols) b[j * rows + i] = row[j];
}
"""
    found = analyze_source(code)
    verdicts = {(a.array, a.op): a.verdict for a in found.accesses}
    assert verdicts == {("a", "load"): "coalesced", ("b", "store"): "strided"}
    assert [a.index.stride for a in found.accesses if a.array == "b"] == ["rows"]


VEC4 = """
__global__ void scale4(int n4, const float4* __restrict__ x, float4* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
    y[i] = v;
  }
}
"""
SCALAR = """
__global__ void scale(int n, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
"""
CAST4 = """
__global__ void scale4(int n, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4 v = x4[i];
  reinterpret_cast<float4*>(y)[i] = v;
}
"""


def test_float4_accesses_are_vectorized_and_coalesced():
    vec, scalar, cast = features(VEC4), features(SCALAR), features(CAST4)
    assert vec["vector_accesses"] == 2 and vec["vectorized_fraction"] == 1.0
    assert scalar["vector_accesses"] == 0 and scalar["vectorized_fraction"] == 0.0
    assert cast["vector_accesses"] == 2 and cast["coalescing"] == 1.0
    assert vec["grid_stride_loops"] == 1 and scalar["grid_stride_loops"] == 0


def matmul(name: str) -> str:
    return load_tasks()["c2cuda/matmul_f32"].implementation(name).source


def test_shared_memory_tiling_raises_arithmetic_intensity():
    naive, tiled = features(matmul("naive")), features(matmul("smem_tiled_32"))
    assert naive["shared_arrays"] == 0 and tiled["shared_arrays"] == 2
    assert tiled["shared_static_bytes"] == 2 * 32 * 32 * 4
    assert tiled["syncthreads"] == 2 and tiled["barriers_in_loops"] == 2 and tiled["divergent_barriers"] == 0
    assert tiled["arithmetic_intensity"] > 4 * naive["arithmetic_intensity"]
    assert tiled["unrolled_loops"] == 1
    assert any("re-reads `a`" in h and "shared memory" in h for h in analyze(matmul("naive"), None).hints)


SMEM_REDUCE = """
__global__ void block_sum(int n, const float* x, float* out) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
"""
SHUFFLE_REDUCE = """
__device__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
__global__ void block_sum(int n, const float* x, float* out) {
  __shared__ float partial[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = warp_sum(i < n ? x[i] : 0.0f);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_sum(lane < blockDim.x / 32 ? partial[lane] : 0.0f);
    if (lane == 0) atomicAdd(out, v);
  }
}
"""


def test_shuffle_reduction_replaces_the_barrier_per_step():
    tree, shuffle = features(SMEM_REDUCE), features(SHUFFLE_REDUCE)
    assert tree["smem_tree_reductions"] == 1 and tree["warp_primitives"] == 0 and tree["barriers_in_loops"] == 1
    assert shuffle["smem_tree_reductions"] == 0 and shuffle["warp_primitives"] == 2  # one site, inlined twice
    assert shuffle["barriers_in_loops"] == 0
    assert tree["contended_atomics"] == shuffle["contended_atomics"] == 0  # one lane per block does the atomic
    tree_report, shuffle_report = analyze(SMEM_REDUCE, None), analyze(SHUFFLE_REDUCE, None)
    assert tree_report.components["sync"] < shuffle_report.components["sync"] == 1.0
    assert any("tree reduction with a barrier per step (line 7)" in h for h in tree_report.hints)


DIVERGENT_BARRIER = """
__global__ void k(int n, float* x) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    s[threadIdx.x] = x[i];
    __syncthreads();
    x[i] = s[255 - threadIdx.x];
  }
}
"""
UNIFORM_BARRIER = """
__global__ void k(int n, float* x) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) x[i] = s[255 - threadIdx.x];
}
"""


def test_barrier_inside_a_thread_dependent_branch_is_flagged():
    bad, good = features(DIVERGENT_BARRIER), features(UNIFORM_BARRIER)
    assert bad["divergent_barriers"] == 1 and good["divergent_barriers"] == 0
    report = analyze(DIVERGENT_BARRIER, None)
    assert report.hints[0].startswith("__syncthreads inside a divergent branch (line 7): may deadlock")
    assert report.components["sync"] == 0.0
    assert report.score < analyze(UNIFORM_BARRIER, None).score


def test_barrier_in_a_block_uniform_branch_or_thread_y_branch():
    block_uniform = "__global__ void k(float* x) { if (blockIdx.x > 0) { __syncthreads(); } x[0] = 1; }"
    thread_y = "__global__ void k(float* x) { if (threadIdx.y == 0) { __syncthreads(); } x[0] = 1; }"
    grid_loop = """
__global__ void k(int n, float* x) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    x[i] = 0; __syncthreads();
  }
}"""
    assert features(block_uniform)["divergent_barriers"] == 0
    assert features(thread_y)["divergent_barriers"] == 1  # threads of one block disagree
    assert features(grid_loop)["divergent_barriers"] == 1  # trip counts differ per thread


def test_contended_and_data_dependent_atomics():
    head = "__global__ void k(int n, const int* v, int* h) { int i = threadIdx.x; "
    contended = head + "if (i < n) atomicMax(h, v[i]); }"
    histogram = head + "if (i < n) atomicAdd(&h[v[i]], 1); }"
    privatized = """
__global__ void k(int n, const int* v, int* h) {
  __shared__ int s[256];
  s[threadIdx.x] = 0; __syncthreads();
  atomicAdd(&s[v[blockIdx.x * blockDim.x + threadIdx.x]], 1); __syncthreads();
  atomicAdd(&h[threadIdx.x], s[threadIdx.x]);
}"""
    assert features(contended)["contended_atomics"] == 1
    assert features(histogram)["indirect_global_atomics"] == 1
    assert features(privatized)["shared_atomics"] == 1 and features(privatized)["indirect_global_atomics"] == 0
    assert "same address of `h` (line 1): contended" in analyze(contended, None).hints[0]
    assert "privatize them in shared memory" in analyze(histogram, None).hints[0]


def test_shared_padding_and_bank_conflicts():
    def transpose(cols: str) -> str:
        return f"""
__global__ void t(const float* a, float* b, int n) {{
  __shared__ float tile[32][{cols}];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = a[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  b[y * n + x] = tile[threadIdx.x][threadIdx.y];
}}"""
    padded, unpadded = features(transpose("33")), features(transpose("32"))
    assert padded["shared_padded"] and not unpadded["shared_padded"]
    assert padded["bank_conflict_accesses"] == 0 and padded["max_bank_ways"] == 1
    assert unpadded["max_bank_ways"] == 32
    assert any("32-way bank conflicts" in h for h in analyze(transpose("32"), None).hints)


def test_launch_configuration_and_constants():
    code = """
#define TILE 16
constexpr int ROWS = 4;
template <int B> __global__ void k(float* x) { x[threadIdx.x] = B; }
__global__ void __launch_bounds__(512) other(float* x) { x[threadIdx.x] = 1; }
extern "C" void run(float* x, int n) {
  dim3 block(TILE, ROWS);
  k<128><<<n, block, 4 * sizeof(float)>>>(x);
}
"""
    found = analyze_source(code)
    kernels = {k.name: k for k in found.kernels}
    # `dim3 block(TILE, ROWS)` parses as a function declaration; it still reads as 16 x 4
    assert (kernels["k"].threads, kernels["k"].threads_origin, kernels["k"].dynamic_shared) == (64, "launch", 16)
    assert (kernels["other"].threads, kernels["other"].threads_origin) == (512, "launch_bounds")
    assert found.launches[0].template_args == (128,)
    hinted = analyze_source(code.replace("dim3 block(TILE, ROWS);", "dim3 block(n, 1);"), block_size_hint=64)
    assert {k.name: k.threads_origin for k in hinted.kernels} == {"k": "hint", "other": "hint"}


def test_unroll_pragma_between_nested_loops_keeps_the_nest():
    code = """
__global__ void k(float* x) {
  #pragma unroll
  for (int r = 0; r < 4; ++r)
    #pragma unroll 2
    for (int q = 0; q < 4; ++q) x[threadIdx.x + 32 * (r * 4 + q)] += 1.0f;
}"""
    f = features(code)
    assert f["loops"] == 2 and f["unrolled_loops"] == 2 and f["max_loop_depth"] == 2 and f["parse_errors"] == 0


def test_nesting_deeper_than_any_kernel_scores_zero_and_says_why():
    deep = "__global__ void k(int* x) {" + "if (threadIdx.x) {" * 300 + "__syncthreads();" + "}" * 300 + "}"
    report = analyze(deep, None)
    assert report.score == 0.0 and report.value("analysis_truncated") is True
    assert report.hints == ("the code nests too deeply to analyse: flatten the nested branches and expressions",)


@pytest.mark.parametrize(
    "garbage",
    ["", "int main() { return 0; }", "this is not C++ at all {{{ ]]] <<<", "\x00\xff" * 50,
     "__global__ void k(" + "(" * 5000, "__global__ void k(float* x) { x[" + "(" * 3000 + "1" + ")" * 3000 + "] = 0; }",
     "__global__ void k(int* x) {" + "if (threadIdx.x) {" * 800 + "}" * 800 + "}"],
)
def test_garbage_and_hostile_source_never_raise(garbage):
    report = analyze(garbage, None)
    assert 0.0 <= report.score <= 1.0
    if "__global__" not in garbage:
        assert report.features == {} and report.score == 0.0
        assert report.hints == ("no __global__ kernel found: nothing runs on the GPU",)


RUNTIME_DIVISOR = """
__global__ void unflatten(const float* a, float* o, long long n, long long w, int m) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (int j = 0; j < m; j++) o[i] += a[i / w] * (i % w);
}
"""
CONSTANT_DIVISOR = """
__global__ void unflatten(const float* a, float* o, long long n, long long w, int m) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (int j = 0; j < m; j++) o[i] += a[i / 32] * (i % 32);
}
"""


def test_integer_division_by_a_runtime_divisor_is_counted_per_loop_iteration_and_a_constant_one_is_not():
    runtime, constant = features(RUNTIME_DIVISOR), features(CONSTANT_DIVISOR)
    assert constant["int_divmods_weighted"] == 0
    outside = features(RUNTIME_DIVISOR.replace("for (int j = 0; j < m; j++) ", ""))
    assert outside["int_divmods_weighted"] == 2
    assert runtime["int_divmods_weighted"] > outside["int_divmods_weighted"]
    assert runtime["flops_weighted"] == constant["flops_weighted"]
