"""Every example runs top to bottom with a tiny budget."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gym_loop_runs_episodes_and_earns_reward():
    returns = load("gym_loop").main(episodes=1)
    assert len(returns) == 1 and returns[0] > 1.0  # the baseline implementation is correct


def test_grpo_group_reward_ranks_correct_above_broken_above_no_code():
    correct, no_code, broken = load("grpo_group_reward").main()
    assert correct > 1.0 > broken > no_code
