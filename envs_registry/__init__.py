"""Gymnasium registrations of every CudaPerf environment id, in one place.

Bump the version suffix whenever the reward or the dynamics change.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

ENV_IDS = ("CudaPerf-C2CUDA-v1", "CudaPerf-C2CUDA-v0")
PICK_IDS = ("CudaPerf-C2CUDA-Pick-v0",)
"""Discrete variants for classic RL (``cudaperf_env.integrations.pick``): Box observations, no backend argument."""

# id -> keyword arguments; each id's behaviour is in CudaPerfEnv's Version History.
_SPECS: dict[str, dict[str, object]] = {
    "CudaPerf-C2CUDA-v1": {"kind": "c2cuda"},  # refines to max_turns where timing exists
    "CudaPerf-C2CUDA-v0": {"kind": "c2cuda", "stop_on_correct": True},  # ends at the first correct reply
}


def register_envs() -> None:
    """Register the ids (idempotent: importing twice is harmless).

    No ``max_episode_steps``: the env truncates at its own ``max_turns``, so the
    two can never disagree.
    """
    for env_id in ENV_IDS:
        if env_id not in registry:
            register(
                id=env_id,
                entry_point="cudaperf_env.env:CudaPerfEnv",
                kwargs=dict(_SPECS[env_id]),
                nondeterministic=True,  # fresh inputs per turn; GPU timing is noisy
            )
    for env_id in PICK_IDS:
        if env_id not in registry:
            # Deterministic given the seed (rewards are the shipped labels); one decision per episode.
            register(id=env_id, entry_point="cudaperf_env.integrations.pick:CudaPerfPickEnv")
