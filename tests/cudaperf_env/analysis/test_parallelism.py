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
