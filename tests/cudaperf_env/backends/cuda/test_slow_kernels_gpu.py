"""A correct but very slow kernel on a real GPU: cheap to evaluate, rewarded as its clipped full measurement.

Marked ``gpu``: run on the GPU machine with ``pytest -m gpu tests/cudaperf_env/backends/cuda/test_slow_kernels_gpu.py``.
The same kernels, budget on and off, with figures: ``benchmarks/slow_kernels.py``.
"""

import time

import pytest

from benchmarks.slow_kernels import SINGLE_BLOCK, SINGLE_THREAD
from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.reward import speedup_term
from cudaperf_env.tasks import load_tasks

pytestmark = pytest.mark.gpu
DOT = load_tasks(kind="c2cuda")["c2cuda/dot_f64"]
CLIP = 8.0


@pytest.fixture(scope="module")
def evaluator():
    evaluator = Evaluator(make_backend("cuda"))
    evaluator.evaluate(DOT, DOT.implementation(DOT.baseline).source)  # harness, perf inputs, baseline times
    return evaluator


def new_submission(evaluator: Evaluator, source: str):
    """Wall seconds and evaluation of ``source`` as a submission the build cache has not seen."""
    started = time.perf_counter()
    e = evaluator.evaluate(DOT, f"```cuda\n// submission {time.time_ns()}\n{source}```", seed=3)
    return time.perf_counter() - started, e


@pytest.mark.parametrize("slow", [SINGLE_THREAD, SINGLE_BLOCK], ids=["single_thread", "single_block"])
def test_a_slow_kernel_costs_at_most_twice_an_ordinary_step_and_earns_the_clip_floor(evaluator, slow):
    ordinary_s, ordinary = new_submission(evaluator, DOT.implementation(DOT.baseline).source)
    slow_s, e = new_submission(evaluator, slow)
    assert ordinary.status == "ok" and (e.status, e.correct) == ("ok", True), e.message
    assert not e.timing_flags and e.speedup < 1 / CLIP
    assert speedup_term(e.credited_speedup, clip=CLIP) == speedup_term(1 / CLIP, clip=CLIP)
    # The goal is 2x; a capped kernel still makes one checked call per timing configuration (its
    # outputs at the large size are verified), which for a single-thread dot over 64M doubles costs
    # ~2.4 s: measured 1.97x (single thread) and 0.93x (single block) on the H200, 2026-12-02
    # (benchmarks/results/slow_kernels.json), against 25.8x and 2.4x without the budget.
    assert slow_s <= 2.5 * ordinary_s, (slow_s, ordinary_s, dict(e.seconds))
