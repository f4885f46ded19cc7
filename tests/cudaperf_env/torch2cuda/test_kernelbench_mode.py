"""KernelBench mode through the env and the grader on a machine without a GPU: construction, the prompt, the
static stages' verdicts, and a clear status (never an exception, never a hang) where the mode cannot run."""

from pathlib import Path

import gymnasium as gym
import pytest

import cudaperf_env  # noqa: F401  (registers the ids)
from cudaperf_env.backends import gpu_available
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import STAGES, EvalOptions, Evaluator
from cudaperf_env.evaluate_kernelbench import KERNELBENCH_STAGES, NEEDS_GPU
from cudaperf_env.prompt import task_prompt
from cudaperf_env.tasks import load_tasks
from cudaperf_env.turn import Grader

FIXTURES = Path(__file__).parents[2] / "fixtures" / "kernelbench_mode"
TANH_SOURCE = (FIXTURES / "tanh_modelnew.py").read_text()
TASKS = load_tasks(kind="torch2cuda")
no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the answer on a machine without a GPU")


def test_the_cpu_backend_cannot_be_asked_for_kernelbench_mode():
    with pytest.raises(ValueError, match="mode='kernelbench' runs ModelNew's CUDA extensions on a GPU; the cpu "
                                         "backend cannot: pass backend='cuda'"):  # fmt: skip
        gym.make("CudaPerf-Torch2CUDA-v0", backend="cpu", mode="kernelbench")
    with pytest.raises(ValueError, match="the cpu backend cannot"):
        Grader.on(CpuBackend(), EvalOptions(mode="kernelbench"))


def test_the_mode_is_checked_against_the_kind():
    with pytest.raises(ValueError, match="mode='kernelbench' is for torch2cuda tasks"):
        gym.make("CudaPerf-C2CUDA-v1", backend="cpu", mode="kernelbench")
    with pytest.raises(ValueError, match="unknown mode 'fast'"):
        gym.make("CudaPerf-Torch2CUDA-v0", backend="cpu", mode="fast")
    with pytest.raises(ValueError, match="mode must be one of native, kernelbench"):
        EvalOptions(mode="fast")


def test_the_evaluator_takes_the_stages_of_its_mode():
    assert Evaluator(CpuBackend(), EvalOptions(mode="kernelbench")).stages == KERNELBENCH_STAGES
    assert Evaluator(CpuBackend()).stages == STAGES


def test_the_prompt_shows_the_reference_and_asks_for_model_new():
    task = TASKS["torch2cuda/linear_mish_relu"]
    prompt = task_prompt(task, "kernelbench")
    assert task.reference_source.strip() in prompt
    assert "Write `class ModelNew(nn.Module)`, a drop-in replacement for `Model`" in prompt
    assert "under the same names (`fc.weight`, `fc.bias`)" in prompt
    assert prompt.endswith("class ModelNew) in one ```python fenced block.")
    assert 'extern "C"' not in prompt


@pytest.fixture(scope="module")
def env():
    environment = gym.make("CudaPerf-Torch2CUDA-v0", backend="auto", mode="kernelbench", max_turns=6)
    environment.reset(seed=0, options={"task_id": "torch2cuda/tanh"})
    yield environment
    environment.close()


@no_gpu
def test_without_a_gpu_an_honest_reply_gets_a_status_saying_the_mode_needs_one(env):
    obs, reward, terminated, truncated, info = env.step(f"```python\n{TANH_SOURCE}```")
    assert info["status"] == "runtime_error" and not info["correct"] and not terminated
    assert NEEDS_GPU.format(backend="cpu") in obs
    assert info["eval_seconds"] < 10  # the screen only: nothing is built or started


@pytest.mark.parametrize(("reply", "status", "words"), [
    ("Here is my kernel.", "format_error", "one ```python block"),
    ("```python\nclass ModelNew(nn.Module:\n```", "compile_error", "Python syntax error"),
    (f"```python\n{TANH_SOURCE.replace('return self.tanh.tanh_cuda(x)', 'return torch.tanh(x)')}```", "rejected",
     "line 50: `torch.tanh` is PyTorch compute"),
])  # fmt: skip
def test_the_static_stages_answer_on_any_machine(env, reply, status, words):
    obs, _, _, _, info = env.step(reply)
    assert info["status"] == status and words in obs
    assert info["score"] <= 0 and not info["correct"]
