"""The SB3 and PettingZoo examples run top to bottom with a tiny budget (the rl extra)."""

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
def test_sb3_pick_example_beats_chance():
    pytest.importorskip("stable_baselines3")
    scores = load("sb3_pick").main(train_tasks=40, steps=1024, held_out_tasks=20, episodes=60)
    assert scores["train/ppo"].mean_reward > scores["train/random"].mean_reward


def test_pettingzoo_review_example_pays_both_agents():
    pytest.importorskip("pettingzoo")
    returns = load("pettingzoo_review").main(backend="cpu")
    assert returns["coder"] > 1.0 and returns["reviewer"] > 0.0
