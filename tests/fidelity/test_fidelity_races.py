"""Races the serial block engine used to hide, and benign patterns that must pass under every schedule.

Two mechanisms catch them on the CPU backend: seeded block and thread orders (a result that depends on
the order), and the shadow-memory race detector (accesses CUDA leaves unordered).
"""

from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_task

SUM = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "sum.yaml")
ENTRY = 'extern "C" void sum(int n, const float* x, float* out) {\n  cudaMemset(out, 0, sizeof(float));\n'
GRID = "(n + 255) / 256, 256"


def kernel(body: str, launch: str = f"  k<<<{GRID}>>>(n, x, out);\n", prelude: str = "") -> str:
    """A submission: ``k(n, x, out)`` with ``body``, launched by the entry."""
    return prelude + "__global__ void k(int n, const float* x, float* out) {\n" + body + "}\n" + ENTRY + launch + "}\n"


LOAD = "  __shared__ float s[256];\n  int t = threadIdx.x, i = blockIdx.x * 256 + t;\n  s[t] = i < n ? x[i] : 0.0f;\n"

# Wrong on a GPU; the CPU backend must not credit them.
RACY = {
    # The tree's barrier deleted: a thread reads its partner before the partner's previous level.
    "tree_without_loop_barrier": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; }\n"
        "  if (t == 0) atomicAdd(out, s[0]);\n"),
    # No barrier between the shared store and the neighbour's load (right neighbour).
    "right_neighbour_without_barrier": kernel(
        LOAD + "  float v = (t % 2 == 0) ? s[t] + s[t + 1] : 0.0f;\n  atomicAdd(out, v);\n"),
    # The same with the left neighbour: natural order hides it, another thread order does not.
    "left_neighbour_without_barrier": kernel(
        LOAD + "  float v = (t % 2 == 1) ? s[t] + s[t - 1] : 0.0f;\n  atomicAdd(out, v);\n"),
    # Legacy warp-synchronous tail (volatile shared memory, no __syncwarp): undefined since Volta.
    "warp_synchronous_tail": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 32; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t < 32) { volatile float* v = s; v[t] += v[t + 32]; v[t] += v[t + 16]; v[t] += v[t + 8];\n"
        "    v[t] += v[t + 4]; v[t] += v[t + 2]; v[t] += v[t + 1]; }\n"
        "  if (t == 0) atomicAdd(out, s[0]);\n"),
    # The last block reads the other blocks' partial sums without a grid-wide barrier.
    "last_block_reads_partials": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t == 0) partial[blockIdx.x] = s[0];\n"
        "  if (blockIdx.x == gridDim.x - 1 && t == 0) { float a = 0.0f;\n"
        "    for (int b = 0; b < gridDim.x; ++b) a += partial[b];\n    out[0] = a; }\n",
        prelude="__device__ float partial[1024];\n"),
    # A reduction that reads the shared total before the thread that writes it has run.
    "broadcast_before_write": kernel(
        LOAD + "  __shared__ float total;\n  if (t == 255) total = 0.0f;\n  __syncthreads();\n"
        "  atomicAdd(&total, s[t]);\n  if (t == 0) atomicAdd(out, total);\n"),
}

# Threads of one block store different values to one word, with no order between them: the detector
# names it (the last store wins on a GPU, whichever it is).
LAST_WRITER_WINS = kernel(
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) slot[0] = i;\n  __syncthreads();\n"
    "  if (i < n && threadIdx.x == 0) atomicAdd(out, x[i] + 0.0f * slot[0]);\n"
    "  if (i < n && threadIdx.x != 0) atomicAdd(out, x[i]);\n",
    prelude="__device__ int slot[1];\n")


def test_different_values_stored_by_unordered_threads_are_a_race():
    from cudaperf_env.evaluate import EvalOptions

    e = Evaluator(CpuBackend(timeout_s=30.0), EvalOptions(schedules=0)).evaluate(SUM, LAST_WRITER_WINS, seed=1)
    assert e.status == "wrong_answer" and "stored different values" in e.message, e.message


# Correct whatever order threads run in on the CPU (each read-modify-write runs whole), wrong on a GPU:
# only the shadow-memory race detector sees them.
LOST_UPDATES = {
    "nonatomic_accumulate": kernel("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[0] += x[i];\n"),
    "shared_counter": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) { float c = out[0]; out[0] = c + x[i]; }\n"),
    "shared_memory_accumulator": kernel(
        "  __shared__ float acc;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (threadIdx.x == 0) acc = 0.0f;\n  __syncthreads();\n"
        "  if (i < n) acc += x[i];\n  __syncthreads();\n  if (threadIdx.x == 0) atomicAdd(out, acc);\n"),
    "init_without_barrier": kernel(
        "  __shared__ float acc;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (threadIdx.x == 0) acc = 0.0f;\n"
        "  if (i < n) atomicAdd(&acc, x[i]);\n  __syncthreads();\n  if (threadIdx.x == 0) atomicAdd(out, acc);\n"),
    "read_after_atomics_without_barrier": kernel(
        "  __shared__ float acc;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (threadIdx.x == 0) acc = 0.0f;\n  __syncthreads();\n"
        "  if (i < n) atomicAdd(&acc, x[i]);\n  if (threadIdx.x == blockDim.x - 1) atomicAdd(out, acc);\n"),
}

BENIGN = {
    # Many threads store the same value to one word (a visited flag): every order leaves the same bytes.
    "same_value_flag_writes": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n && x[i] == x[i]) flag[0] = 1;\n  if (i < n) atomicAdd(out, x[i]);\n",
        launch=f"  k<<<{GRID}>>>(n, x, out);\n  check<<<1, 1>>>(out);\n",
        prelude="__device__ int flag[1];\n__global__ void check(float* out) { if (flag[0] != 1) out[0] = -1.0f; }\n"),
    "atomic_per_element": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) atomicAdd(out, x[i]);\n"),
    "tree_with_barriers": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t == 0) atomicAdd(out, s[0]);\n"),
    "warp_shuffle": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = i < n ? x[i] : 0.0f;\n"
        "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n"
        "  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);\n"),
    "warp_tail_with_syncwarp": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 16; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t < 32) { float v = s[t]; for (int o = 16; o > 0; o >>= 1) {\n"
        "    v += __shfl_xor_sync(0xffffffff, v, o); } if (t == 0) atomicAdd(out, v); }\n"),
    "shared_atomic_then_global": kernel(
        "  __shared__ float total;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (threadIdx.x == 0) total = 0.0f;\n  __syncthreads();\n"
        "  if (i < n) atomicAdd(&total, x[i]);\n  __syncthreads();\n"
        "  if (threadIdx.x == 0) atomicAdd(out, total);\n"),
    "grid_stride_disjoint_partials": kernel(
        "  float v = 0.0f;\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];\n"
        "  partial[blockIdx.x * blockDim.x + threadIdx.x] = v;\n",
        launch="  k<<<8, 256>>>(n, x, out);\n  finish<<<1, 1>>>(out);\n",
        prelude="__device__ float partial[2048];\n__global__ void finish(float* out) {\n"
                "  float a = 0.0f; for (int j = 0; j < 2048; ++j) a += partial[j]; out[0] = a;\n}\n"),
    "cooperative_groups_tile_reduce": kernel(
        "  namespace cg = cooperative_groups;\n  cg::thread_block block = cg::this_thread_block();\n"
        "  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = i < n ? x[i] : 0.0f;\n"
        "  for (int o = tile.size() / 2; o > 0; o >>= 1) v += tile.shfl_down(v, o);\n"
        "  if (tile.thread_rank() == 0) atomicAdd(out, v);\n",
        prelude="#include <cooperative_groups.h>\n"),
    "ballot_and_popc": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = i < n ? x[i] : 0.0f;\n"
        "  unsigned m = __ballot_sync(0xffffffff, i < n);\n"
        "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n"
        "  if ((threadIdx.x & 31) == 0 && __popc(m) > 0) atomicAdd(out, v);\n"),
    "cas_loop_add": kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
        "  unsigned* p = (unsigned*)out; unsigned old = *p, seen;\n"
        "  do { seen = old; old = atomicCAS(p, seen, __float_as_uint(__uint_as_float(seen) + x[i])); }"
        " while (old != seen);\n"),
    "syncthreads_count_gate": kernel(
        LOAD + "  int live = __syncthreads_count(i < n);\n"
        "  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t == 0 && live > 0) atomicAdd(out, s[0]);\n"),
    "two_kernel_block_partials": kernel(
        LOAD + "  __syncthreads();\n"
        "  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t == 0) partial[blockIdx.x] = s[0];\n",
        launch=f"  k<<<{GRID}>>>(n, x, out);\n  finish<<<1, 1>>>((n + 255) / 256, out);\n",
        prelude="__device__ float partial[1024];\n__global__ void finish(int blocks, float* out) {\n"
                "  float a = 0.0f; for (int b = 0; b < blocks; ++b) a += partial[b]; out[0] = a;\n}\n"),
}


@pytest.mark.parametrize("name", sorted(RACY))
def test_racy_kernel_gets_no_credit(evaluator, name):
    e = evaluator.evaluate(SUM, RACY[name], seed=1)
    if evaluator.backend.name != "cpu" and e.correct:
        pytest.xfail(f"{name}: the race stayed latent on this GPU run (the CPU backend refuses it)")
    assert e.status == "wrong_answer", (e.status, e.message)


def test_a_race_hidden_by_the_natural_order_is_named_a_race(evaluator):
    if evaluator.backend.name != "cpu":
        pytest.skip("schedule perturbation is the CPU backend's")
    e = evaluator.evaluate(SUM, RACY["left_neighbour_without_barrier"], seed=1)
    assert e.status == "wrong_answer" and e.message.startswith("race:"), e.message


@pytest.mark.parametrize("name", sorted(LOST_UPDATES))
def test_lost_update_race_gets_no_credit(evaluator, name):
    e = evaluator.evaluate(SUM, LOST_UPDATES[name], seed=1)
    if evaluator.backend.name != "cpu" and e.correct:
        pytest.xfail(f"{name}: the race stayed latent on this GPU run (the CPU backend refuses it)")
    assert not e.correct, e.message
    if evaluator.backend.name == "cpu":
        assert e.status == "wrong_answer", e.message


def test_race_feedback_names_buffer_element_threads_and_lines():
    # One worker thread: the plain run cannot lose an update by chance, the detector must find it.
    e = Evaluator(CpuBackend(deterministic=True)).evaluate(SUM, LOST_UPDATES["nonatomic_accumulate"], seed=1)
    assert "`out[0]`" in e.message and "line 3" in e.message and "block (0,0,0)" in e.message, e.message


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_kernel_is_correct_on_every_seed(evaluator, name):
    for seed in (1, 2, 3):
        e = evaluator.evaluate(SUM, BENIGN[name], seed=seed)
        assert e.correct, (seed, e.status, e.message)


def test_the_detector_watches_a_template_kernels_shared_memory():
    """A template's function statics were STB_GNU_UNIQUE symbols, bound process-wide to the candidate's
    library loaded first in the worker: the race-check library's accesses went to memory the detector
    does not watch (found 2026-12-07; the race-check build now passes -fno-gnu-unique)."""
    template = (
        "template <int B>\n__global__ void k(int n, const float* x, float* out) {\n"
        "  __shared__ int last;\n  int t = threadIdx.x, i = blockIdx.x * B + t;\n  last = t;\n  __syncthreads();\n"
        "  if (i < n) atomicAdd(out, x[i] + 0.0f * last);\n}\n"
        + ENTRY + "  k<256><<<(n + 255) / 256, 256>>>(n, x, out);\n}\n")  # fmt: skip
    e = Evaluator(CpuBackend(timeout_s=10.0)).evaluate(SUM, template, seed=1)
    assert e.status == "wrong_answer" and "stored different values" in e.message, e.message
