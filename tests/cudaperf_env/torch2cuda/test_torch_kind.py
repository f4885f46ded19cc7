"""The torch2cuda kind: the prompt and reminder, the registered env id, one episode on the CPU backend."""

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import cudaperf_env  # noqa: F401
from cudaperf_env.kinds import kind_named, kind_of
from cudaperf_env.tasks import load_tasks

TASKS = load_tasks(kind="torch2cuda")


def test_prompt_shows_the_pytorch_code_the_entry_and_what_each_argument_is():
    task = TASKS["torch2cuda/linear_mish_relu"]
    kind = kind_of(task)
    assert kind is kind_named("torch2cuda") and kind.reference_noun == "the PyTorch reference"
    prompt = kind.prompt(task)
    assert "class Model(nn.Module)" in prompt and "def get_inputs()" in prompt
    assert ('extern "C" void forward(const float* x, const float* weight, const float* bias, float* y, '
            "int batch, int in_features, int out_features)") in prompt
    assert "`weight`: float32 input (device pointer" in prompt and "parameter `fc.weight` of the Model" in prompt
    assert "`x`: float32 input" in prompt and "forward input 0" in prompt and "`y`: float32 output" in prompt
    assert "`Model(IN, OUT)`" in prompt and "no PyTorch, ATen or c10" in prompt
    assert "B=13, IN=100, OUT=37" in prompt and "B=5, IN=77" not in prompt  # hidden configurations stay hidden
    assert "extern \"C\" void forward(" in kind.reminder(task) and "PyTorch" in kind.reminder(task)


def test_registered_id_passes_the_env_checker_and_plays_an_episode():
    env = gym.make("CudaPerf-Torch2CUDA-v0", backend="cpu")
    check_env(env.unwrapped, skip_render_check=False)
    obs, info = env.reset(seed=0, options={"task_id": "torch2cuda/tanh"})
    assert "torch.tanh(x)" in obs
    task = TASKS["torch2cuda/tanh"]
    obs, reward, terminated, truncated, info = env.step(f"```cuda\n{task.implementations[1].source}```")
    assert info["status"] == "ok" and info["correct"] and reward > 0 and terminated, obs
    obs, reward2, _, _, info = env.step("```cuda\n#include <ATen/ATen.h>\n" + task.implementations[1].source + "```")
    assert info["status"] == "rejected" and not info["correct"]
    env.close()


def test_the_env_lists_only_its_kind():
    env = gym.make("CudaPerf-Torch2CUDA-v0", backend="cpu").unwrapped
    assert set(env.tasks) == set(TASKS) and all(t.kind == "torch2cuda" for t in env.tasks.values())
    env.close()


def test_the_demo_plays_a_torch2cuda_episode():
    import io

    from rich.console import Console

    from cudaperf_env.demo import run_demo

    rows = run_demo("cpu", Console(file=io.StringIO()), kind="torch2cuda")
    assert [r["status"] for r in rows] == ["wrong_answer", "ok", "ok"]
    assert rows[0]["task_id"] == "torch2cuda/linear_mish_relu" and rows[-1]["truncated"]
