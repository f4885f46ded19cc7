"""torch2cuda native mode on a real GPU: every starter implementation correct, timed against its baseline,
and the cold step time of one submission measured.

Marked ``gpu``: skipped in CI. Run on the GPU machine with
``pytest -m gpu tests/cudaperf_env/torch2cuda/test_torch_gpu.py``.
"""

import time

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

pytestmark = pytest.mark.gpu
TASKS = load_tasks(kind="torch2cuda")
CASES = [(t, i.name) for t in TASKS.values() for i in t.implementations]
QUICK = TimingOptions(min_trials=5, max_trials=20, budget_s=1.0)


@pytest.fixture(scope="module")
def correctness():
    return Evaluator(CudaBackend(measures_time=False, timeout_s=20))


@pytest.fixture(scope="module")
def timed():
    return Evaluator(CudaBackend(timing=QUICK, timeout_s=20))


@pytest.mark.parametrize(("task", "impl"), CASES, ids=[f"{t.id}:{i}" for t, i in CASES])
def test_every_implementation_is_correct_on_the_gpu(correctness, task, impl):
    e = correctness.evaluate(task, task.implementation(impl).source, seed=5)
    assert (e.status, e.correct) == ("ok", True), f"{e.message}\n{e.compile_log}"


@pytest.mark.parametrize("task_id", ["torch2cuda/softmax", "torch2cuda/linear_mish_relu"])
def test_the_baseline_against_itself_is_about_1x_and_a_cold_step_is_bounded(timed, task_id):
    task = TASKS[task_id]
    started = time.perf_counter()
    e = timed.evaluate(task, task.implementation(task.baseline).source, seed=1)
    cold_s = time.perf_counter() - started
    # the headline speedup is over PyTorch eager (test_torch_baselines_gpu.py); against itself, about 1x
    assert e.status == "ok" and 0.8 < e.speedup_vs_impl < 1.25, (e.message, e.speedup_vs_impl)
    print(f"{task_id}: cold step {cold_s:.2f} s, phases {dict(e.seconds)}")  # the figure for benchmarks/
