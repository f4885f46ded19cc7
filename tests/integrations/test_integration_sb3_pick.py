"""The Pick variant: both env checkers, masks, label rewards, and PPO learning to pick faster candidates than chance."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import cudaperf_env  # noqa: F401
from cudaperf_env.integrations.pick import FEATURES, CudaPerfPickEnv

sb3 = pytest.importorskip("stable_baselines3", reason="needs the rl extra: pip install 'cudaperf-env[rl]'")


@pytest.fixture(scope="module")
def pick_env():
    env = gym.make("CudaPerf-C2CUDA-Pick-v0", split="train", limit=100)
    yield env
    env.close()


def test_registered_and_passes_gymnasium_and_sb3_checkers(pick_env):
    from stable_baselines3.common.env_checker import check_env

    assert isinstance(pick_env.unwrapped, CudaPerfPickEnv)
    check_env(pick_env.unwrapped, warn=True)
    gym_check_env(pick_env.unwrapped, skip_render_check=True)


def test_masks_rewards_and_info_follow_the_labels(pick_env):
    env = pick_env.unwrapped
    observation, info = env.reset(seed=3)
    assert env.observation_space.contains(observation) and observation.shape[0] > 4 * len(FEATURES)
    mask = env.action_masks()
    assert mask.sum() == info["candidates"] == len(env.slots) >= 2 and not mask[len(env.slots):].any()
    times = [c.time_ms for c in env.slots]
    best = int(np.argmin(times))
    baseline_ms = next(c.time_ms for c in env.candidates(env.task.id)[0] if c.name == env.task.baseline)
    _, reward, terminated, truncated, info = env.step(best)
    assert terminated and not truncated and info["picked_fastest"] and info["regret"] == 0.0
    assert reward == pytest.approx(math.log2(baseline_ms / min(times)))


def test_shuffled_each_episode_and_invalid_actions_never_raise(pick_env):
    env = pick_env.unwrapped
    orders = set()
    for seed in range(8):
        env.reset(seed=seed, options={"task_id": env._order[0]})
        orders.add(tuple(c.name for c in env.slots))
    assert len(orders) > 1
    env.reset(seed=0, options={"task_id": None})
    for bad in (env.max_candidates - 1 if len(env.slots) < env.max_candidates else -1, "x", None):
        env.reset(seed=1)
        _, reward, terminated, _, info = env.step(bad)
        assert info["invalid"] and reward == env.invalid_penalty and terminated


@pytest.mark.slow
def test_ppo_learns_to_pick_faster_candidates_than_chance(pick_env):
    """Measured: 100 train tasks, 4,096 episodes of PPO; scored on 400 seeded episodes of the same tasks."""
    import torch

    from cudaperf_env.integrations.sb3 import model_policy, oracle_policy, random_policy, score_policy, train_ppo

    torch.set_num_threads(1)
    model, _ = train_ppo(steps=4096, seed=0, env=pick_env)
    learned = score_policy(pick_env, model_policy(model), episodes=400)
    chance = score_policy(pick_env, random_policy(0), episodes=400)
    best = score_policy(pick_env, oracle_policy(), episodes=400)
    print(f"learned {learned} chance {chance} oracle {best}")
    assert best.fastest_rate == 1.0
    assert learned.mean_reward > chance.mean_reward + 0.5, (learned, chance)
    assert learned.fastest_rate > chance.fastest_rate + 0.25, (learned, chance)


@pytest.mark.slow
def test_maskable_ppo_trains_with_the_masks(pick_env):
    pytest.importorskip("sb3_contrib")
    from cudaperf_env.integrations.sb3 import model_policy, score_policy, train_ppo

    model, _ = train_ppo(steps=512, seed=0, maskable=True, env=pick_env)
    score = score_policy(pick_env, model_policy(model), episodes=50)
    assert score.episodes == 50 and math.isfinite(score.mean_reward)
