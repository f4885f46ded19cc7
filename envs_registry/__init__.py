"""Gymnasium registrations of every CudaPerf environment id, in one place.

Bump the version suffix whenever the reward or the dynamics change.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

ENV_IDS = ("CudaPerf-C2CUDA-v0",)


def register_envs() -> None:
    """Register the ids (idempotent: importing twice is harmless).

    No ``max_episode_steps``: the env truncates at its own ``max_turns``, so the
    two can never disagree.
    """
    if "CudaPerf-C2CUDA-v0" not in registry:
        register(
            id="CudaPerf-C2CUDA-v0",
            entry_point="cudaperf_env.env:CudaPerfEnv",
            kwargs={"kind": "c2cuda"},
            nondeterministic=True,  # fresh inputs per turn; GPU timing is noisy
        )
