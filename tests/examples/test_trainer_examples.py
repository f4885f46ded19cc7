"""The trainer-integration examples (TRL, Ray, verl, verifiers, TensorBoard) run top to bottom with a tiny budget."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_trl_grpo_example_runs_a_step():
    pytest.importorskip("trl")
    history = load("trl_grpo").main(steps=1, backend="cpu")
    assert any("rewards/CudaPerfToolEnv/mean" in row for row in history)


@pytest.mark.slow
def test_ray_pool_example_grades_a_group():
    pytest.importorskip("ray")
    correct, broken, no_code = load("ray_pool").main(backend="cpu", num_actors=1)
    assert correct > 1.0 > broken > no_code


@pytest.mark.slow
def test_verl_reward_example():
    pytest.importorskip("verl")
    correct, refused = load("verl_reward").main()
    assert correct > 1.0 > refused


def test_verifiers_env_example_loads():
    pytest.importorskip("verifiers.v1")
    rubric = load("verifiers_env").main(limit=2)
    assert rubric["correct"] == 1.0 and len(rubric) == 6


@pytest.mark.slow
def test_gym_vector_logging_example_logs_every_reward_term(tmp_path):
    pytest.importorskip("tensorboard")
    scalars = load("gym_vector_logging").main(num_envs=2, steps=1, log_dir=str(tmp_path), backend="cpu")
    assert scalars["status/ok"] == 1.0 and "reward/correct" in scalars
    assert any(tmp_path.iterdir())
