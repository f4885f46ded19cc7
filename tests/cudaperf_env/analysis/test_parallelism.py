"""Configuration-aware parallelism features on known kernels."""

from __future__ import annotations

import math

import pytest

from cudaperf_env.analysis.parallelism import config_features
from cudaperf_env.tasks import parse_task
from tests.cudaperf_env.ranker.conftest import GRID_STRIDE, PER_ELEMENT, SINGLE_THREAD, saxpy_record

N = 1 << 20


@pytest.fixture
def task():
    return parse_task(saxpy_record("c2cuda/par", "fixture"))


def test_single_thread_vs_grid_stride(task):
    one = config_features(task, SINGLE_THREAD, {"N": N})
    grid = config_features(task, GRID_STRIDE, {"N": N})
    assert one["log2_threads"] == 0 and one["sm_fill"] == pytest.approx(1 / 132)
    assert one["log2_iterations_per_thread"] == pytest.approx(math.log2(1 + N))  # the whole loop in one thread
    assert grid["log2_threads"] == pytest.approx(math.log2(264 * 256))
    assert grid["log2_iterations_per_thread"] == pytest.approx(math.log2(1 + math.ceil(N / (264 * 256))))
    assert grid["sm_fill"] == 1.0 and grid["grid_known"] == 1.0


def test_grid_folds_from_the_configuration(task):
    small, large = (config_features(task, PER_ELEMENT, {"N": n}) for n in (1000, N))
    assert small["log2_blocks"] == pytest.approx(math.log2(4)) and large["log2_blocks"] == pytest.approx(12)
    assert large["log2_threads_per_output"] == 0.0  # one thread per output
    assert large["log2_traffic_over_minimum"] == pytest.approx(0.0)  # reads x and y, writes y: the minimum


def test_triangular_nest_counts_half_and_unknown_bounds_are_flagged(task):
    code = """
    __global__ void k(int n, float a, const float* x, float* y) {
      for (int i = 0; i < n; ++i) for (int j = 0; j < i; ++j) y[i] += x[j];
      int m = (int)x[0];
      for (int t = 0; t < m; ++t) y[t] = 0;
    }
    extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<1, 32>>>(n, a, x, y); }
    """
    f = config_features(task, code, {"N": 1000})
    assert f["log2_iterations_per_thread"] == pytest.approx(math.log2(1 + 1000 + 1000 * 500 + 1), abs=0.01)
    assert f["unknown_trip_loops"] == 1.0


def test_reference_is_one_thread(task):
    f = config_features(task, task.reference_source, {"N": 4096})
    assert f["log2_threads"] == 0 and f["log2_iterations_per_thread"] == pytest.approx(math.log2(4097))


@pytest.mark.parametrize("code", ["", "}}}{{{", "x" * 300_000, "__global__ void k(" + "(" * 5000, "\x00\xff garbage"])
def test_hostile_source_never_raises(task, code):
    assert isinstance(config_features(task, code, {"N": 10}), dict)


@pytest.fixture(scope="module")
def starter():
    from cudaperf_env.tasks import load_tasks

    return load_tasks(kind="c2cuda")


def test_warp_collectives_and_guarded_atomics_on_the_sum_kernels(starter):
    task = starter["c2cuda/sum_f32"]
    config = {"N": 1 << 26}
    f = {i.name: config_features(task, i.source, config) for i in task.implementations}
    # naive: 2^26 threads, a shared-memory tree, one atomicAdd per 256-thread block (threadIdx.x == 0)
    assert f["naive"]["log2_warp_ops_per_thread"] == 0.0
    assert f["naive"]["log2_global_atomics"] == pytest.approx(math.log2(1 + (1 << 26) / 256))
    # warp_shuffle_atomic: 1024 blocks of 256; two 5-step shuffle loops; `lane == 0` inside `warp == 0`: per block
    assert f["warp_shuffle_atomic"]["log2_warp_ops_per_thread"] == pytest.approx(math.log2(1 + 10))
    assert f["warp_shuffle_atomic"]["log2_global_atomics"] == pytest.approx(math.log2(1 + 1024))
    # two_pass: no atomics, but a cudaMalloc and a cudaFree on every call
    assert f["two_pass"]["log2_global_atomics"] == 0.0
    assert (f["two_pass"]["host_allocations"], f["naive"]["host_allocations"]) == (2.0, 0.0)


def test_register_tile_and_shared_reuse_on_the_matmul_kernels(starter):
    task = starter["c2cuda/matmul_f32"]
    config = {"M": 4096, "N": 4096, "K": 4096}
    f = {i.name: config_features(task, i.source, config) for i in task.implementations}
    assert f["register_blocked_64x64"]["log2_register_tile"] == pytest.approx(math.log2(1 + 16))  # acc[4][4]
    assert f["smem_tiled_32"]["log2_register_tile"] == 0.0 and f["naive"]["log2_register_tile"] == 0.0
    assert f["register_blocked_64x64"]["log2_threads_per_output"] == pytest.approx(-4.0)  # 16 outputs a thread
    # shared bytes per global byte: the 32x32 tile reads each loaded element 32 times from shared memory
    # (2 global loads, 2 shared stores and 64 shared reads per step); a 2-D shared subscript counts
    # once per dimension (as in log2_shared_bytes_per_thread), so 132 shared words per 2 global ones
    assert f["smem_tiled_32"]["log2_shared_over_global"] == pytest.approx(math.log2(66), abs=0.01)
    assert f["naive"]["log2_shared_over_global"] < -10


def test_host_round_trips_are_counted(task):
    code = PER_ELEMENT.replace(
        "k<<<(n + 255) / 256, 256>>>(n, a, x, y);",
        "float* t; cudaMalloc(&t, n * sizeof(float)); k<<<(n + 255) / 256, 256>>>(n, a, x, y); "
        "cudaDeviceSynchronize(); cudaMemcpy(t, y, 4, cudaMemcpyDeviceToDevice); cudaFree(t);")
    f = config_features(task, code, {"N": N})
    plain = config_features(task, PER_ELEMENT, {"N": N})
    assert (f["host_allocations"], f["host_syncs"]) == (2.0, 2.0)
    assert (plain["host_allocations"], plain["host_syncs"]) == (0.0, 0.0)
    assert plain["log2_global_atomics"] == 0.0 and plain["log2_warp_ops_per_thread"] == 0.0
