"""PyTorch eager and torch.compile baselines on a real GPU: speedups over both are finite and plausible on
starter tasks, a slow submission gets a speedup below 1, a compile past its limit falls back to eager-only,
and the cuda_agent milestones read the two baselines.

Marked ``gpu``: skipped in CI. Run on the GPU machine (a CUDA build of torch installed) with
``pytest -m gpu tests/cudaperf_env/torch2cuda/test_torch_baselines_gpu.py -s`` (``-s`` prints the figures).
"""

import math

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.reward import RewardConfig
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.turn import Grader

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
TASKS = load_tasks(kind="torch2cuda")
QUICK = TimingOptions(min_trials=10, max_trials=50, budget_s=1.5)
H200_BANDWIDTH = 4.8e12  # bytes/s (HBM3e): no eager call moves its bytes faster


@pytest.fixture(scope="module")
def grader():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here: install a CUDA build of torch for the baselines")
    return Grader.on(CudaBackend(timing=QUICK, timeout_s=30), reward=RewardConfig(preset="cuda_agent"))


def _grade(grader, task_id, implementation):
    task = TASKS[task_id]
    turn = grader.grade(task, f"```cuda\n{task.implementation(implementation).source}\n```", seed=3)
    info = turn.info()
    print(f"{task_id}:{implementation}: speedup over eager {info['speedup']:.3f}, vs compile "
          f"{info['speedup_vs_compile']:.3f}, vs the {task.baseline} implementation {info['speedup_vs_impl']:.3f}; "
          f"eager {info['baseline_ms']:.4f} ms, compiled {info['compile_ms']:.4f} ms, candidate "
          f"{info['runtime_ms']:.4f} ms; milestone {info['reward/milestone']}")  # fmt: skip
    return task, info, turn


@pytest.mark.parametrize(("task_id", "implementation"),
                         [("torch2cuda/softmax", "warp_per_row"), ("torch2cuda/linear_mish_relu", "tiled16")])
def test_speedups_over_eager_and_compile_are_finite_and_plausible(grader, task_id, implementation):
    task, info, turn = _grade(grader, task_id, implementation)
    assert info["status"] == "ok" and info["baseline"] == "pytorch_eager", turn.evaluation.message
    assert not info["compile_fallback"], turn.evaluation.compile_error
    assert math.isfinite(info["speedup"]) and 0.01 < info["speedup"] < 50
    assert math.isfinite(info["speedup_vs_compile"]) and 0.01 < info["speedup_vs_compile"] < 50
    assert info["speedup_vs_impl"] > 1  # faster than the task's naive baseline implementation
    config = task.perf_configs[0]
    moved = sum(a.dtype.itemsize * math.prod(int(evaluate(d, config)) for d in a.shape)
                for a in task.args if a.is_buffer)  # fmt: skip
    assert info["baseline_ms"] > moved / H200_BANDWIDTH * 1e3  # eager is not faster than the memory allows
    assert info["compile_ms"] > 0


@pytest.mark.parametrize(("task_id", "implementation"),
                         [("torch2cuda/softmax", "thread_per_row"), ("torch2cuda/linear_mish_relu", "naive")])
def test_a_slow_submission_gets_a_speedup_below_one_and_the_correct_milestone(grader, task_id, implementation):
    _, info, turn = _grade(grader, task_id, implementation)
    assert info["status"] == "ok", turn.evaluation.message
    assert info["speedup"] < 1 and info["reward/milestone"] == 1.0


def test_a_compile_past_its_limit_falls_back_to_eager_only():
    backend = CudaBackend(timing=QUICK, timeout_s=30, compile_timeout_s=0.01)
    grader = Grader.on(backend, reward=RewardConfig(preset="cuda_agent"))
    _, info, turn = _grade(grader, "torch2cuda/tanh", "unroll4")
    assert info["status"] == "ok" and info["compile_fallback"], turn.evaluation.message
    assert "compile_timeout_s" in turn.evaluation.compile_error
    assert math.isfinite(info["speedup"]) and math.isnan(info["speedup_vs_compile"])
