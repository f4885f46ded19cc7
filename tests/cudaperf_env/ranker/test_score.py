"""Scoring with the shipped ranker: a probability, the obvious order on known kernels, NaN (not an error) on garbage."""

from __future__ import annotations

import math
import time

import pytest

from cudaperf_env.analysis import analyze
from cudaperf_env.ranker import Ranker, load_ranker
from cudaperf_env.tasks import load_tasks
from tests.cudaperf_env.ranker.conftest import GRID_STRIDE, PER_ELEMENT, SINGLE_THREAD


@pytest.fixture(scope="module")
def ranker() -> Ranker:
    return load_ranker()


def test_shipped_model_loads_once_with_provenance(ranker):
    assert load_ranker() is ranker
    assert ranker.provenance["labels"]["card"] == "NVIDIA H200"
    assert ranker.provenance["dataset_digest"] == ranker.model.meta["dataset_digest"]


def test_single_thread_scores_below_a_parallel_kernel(ranker, saxpy_task):
    one = ranker.score(saxpy_task, SINGLE_THREAD, None, None)
    par = ranker.score(saxpy_task, GRID_STRIDE, None, None)
    assert 0.0 <= one < 0.5 < par <= 1.0  # the task's baseline is the per-element kernel


def test_the_baseline_against_itself_is_a_coin(ranker, saxpy_task):
    assert ranker.score(saxpy_task, PER_ELEMENT, None, None) == pytest.approx(0.5)


def test_structural_report_is_reused_and_gives_the_same_score(ranker, saxpy_task):
    structure = analyze(GRID_STRIDE, None)
    assert ranker.score(saxpy_task, GRID_STRIDE, None, structure) == ranker.score(saxpy_task, GRID_STRIDE, None, None)


def test_task_without_implementations_scores_against_the_c_reference(ranker):
    from dataclasses import replace

    task = replace(load_tasks()["c2cuda/saxpy_f32"], implementations=())
    assert 0.5 < ranker.score(task, GRID_STRIDE, None, None) <= 1.0


@pytest.mark.parametrize("code", ["", "int main() { return 0; }", "}}}{{{ garbage", "x" * 300_000,
                                  "__global__ void k(" + "(" * 5000, "\x00\ufffd\U0001f600",
                                  'extern "C" void saxpy(int n, float a, const float* x, float* y) '
                                  "{ k<<<n/0, 1>>>(); }"])
def test_garbage_gives_nan_or_a_probability_never_an_error(ranker, saxpy_task, code):
    value = ranker.score(saxpy_task, code, None, None)
    assert math.isnan(value) or 0.0 <= value <= 1.0
    if "saxpy" not in code:
        assert math.isnan(value)


def test_scoring_after_the_features_is_fast(ranker, saxpy_task):
    ranker.score(saxpy_task, GRID_STRIDE, None, None)  # warm: parse cache, baseline record
    start = time.perf_counter()
    for _ in range(10):
        ranker.score(saxpy_task, GRID_STRIDE, None, None)
    assert (time.perf_counter() - start) / 10 < 0.25  # generous for a loaded CI box; the benchmark holds the figure
