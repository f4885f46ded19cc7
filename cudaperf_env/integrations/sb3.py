"""Stable-Baselines3 on ``CudaPerf-C2CUDA-Pick-v0``: train PPO (or MaskablePPO) and score a policy against chance.

::

    from cudaperf_env.integrations.sb3 import train_ppo, score_policy
    model, env = train_ppo(steps=4096, limit=100)
    print(score_policy(env, model_policy(model)), score_policy(env, random_policy()))

Each episode is one decision, so PPO runs with ``gamma=0`` (a contextual bandit);
scores are the mean reward (log2 speedup over the baseline, from the GPU labels)
and how often the fastest candidate was picked, over the same seeded episodes for
every policy compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from cudaperf_env.integrations.pick import CudaPerfPickEnv

__all__ = ["PickScore", "mask_fn", "model_policy", "oracle_policy", "random_policy", "score_policy", "train_ppo"]

Policy = Callable[[np.ndarray, CudaPerfPickEnv], int]


@dataclass(frozen=True)
class PickScore:
    """How a policy did over a fixed set of episodes.

    Attributes:
        mean_reward: Mean log2 speedup of the chosen candidate over the task's baseline.
        fastest_rate: Fraction of episodes where the fastest candidate was chosen.
        episodes: Episodes scored.
    """

    mean_reward: float
    fastest_rate: float
    episodes: int


def mask_fn(env: gym.Env) -> np.ndarray:
    """Valid actions of a (wrapped) Pick env, for ``sb3_contrib.common.wrappers.ActionMasker``."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, CudaPerfPickEnv)
    return unwrapped.action_masks()


def train_ppo(steps: int = 4096, seed: int = 0, maskable: bool = False, env: gym.Env | None = None,
              **env_kwargs: Any) -> tuple[Any, gym.Env]:  # fmt: skip
    """Train PPO (``maskable``: ``sb3_contrib.MaskablePPO``) on the Pick env; returns ``(model, env)``.

    Args:
        steps: Environment steps (= episodes) of training.
        seed: Seeds the policy and the environment.
        maskable: Use action masks (needs ``sb3-contrib``).
        env: An environment to train on (default: ``gym.make("CudaPerf-C2CUDA-Pick-v0", **env_kwargs)``).
    """
    import cudaperf_env  # noqa: F401  (registers the ids)

    env = env if env is not None else gym.make("CudaPerf-C2CUDA-Pick-v0", **env_kwargs)
    hyper: dict[str, Any] = dict(n_steps=512, batch_size=128, n_epochs=10, learning_rate=1e-3, gamma=0.0,
                                 ent_coef=0.0, seed=seed, verbose=0, device="cpu")  # fmt: skip
    if maskable:
        from sb3_contrib import MaskablePPO
        from sb3_contrib.common.wrappers import ActionMasker

        model: Any = MaskablePPO("MlpPolicy", ActionMasker(env, mask_fn), **hyper)
    else:
        from stable_baselines3 import PPO

        model = PPO("MlpPolicy", env, **hyper)
    model.learn(total_timesteps=steps)
    return model, env


def model_policy(model: Any) -> Policy:
    """A trained SB3 model as a policy (deterministic actions; masks passed when the model takes them)."""

    def act(observation: np.ndarray, env: CudaPerfPickEnv) -> int:
        try:
            action, _ = model.predict(observation, deterministic=True, action_masks=env.action_masks())
        except TypeError:  # plain PPO takes no masks
            action, _ = model.predict(observation, deterministic=True)
        return int(action)

    return act


def random_policy(seed: int = 0) -> Policy:
    """Chance: a uniformly drawn valid candidate."""
    rng = np.random.default_rng(seed)
    return lambda observation, env: int(rng.choice(np.flatnonzero(env.action_masks())))


def oracle_policy() -> Policy:
    """The best possible: the candidate with the fastest labelled time."""
    return lambda observation, env: int(np.argmin([c.time_ms for c in env.slots]))


def score_policy(env: gym.Env, policy: Policy, episodes: int = 500, seed: int = 12345) -> PickScore:
    """Mean reward and fastest-pick rate of ``policy`` over ``episodes`` seeded episodes (the same for any policy)."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, CudaPerfPickEnv)
    rewards, fastest = [], []
    for i in range(episodes):
        observation, _ = unwrapped.reset(seed=seed + i)
        _, reward, _, _, info = unwrapped.step(policy(observation, unwrapped))
        rewards.append(reward)
        fastest.append(bool(info["picked_fastest"]))
    return PickScore(float(np.mean(rewards)), float(np.mean(fastest)), episodes)
