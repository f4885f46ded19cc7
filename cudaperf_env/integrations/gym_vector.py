"""Vector environments and loggers: spawn-safe ``make_vec``, and ``info`` flattened to float scalars.

``gym.make_vec("CudaPerf-C2CUDA-v1", num_envs=4, vectorization_mode="async")`` works as
it is: each worker process builds its own environment (its own backend, evaluator and
sandbox workers), every evaluation gets a private scratch folder, and the build cache
they share is content-addressed with atomic writes and a file lock around the one
shared build (the CPU runtime object), so workers never see each other's half-written
files. :func:`make_vec` adds what a CUDA machine needs: the ``spawn`` start method
(a forked child of a process that touched CUDA cannot use it).

Loggers (TensorBoard, W&B, SB3's logger) want the same float keys every step;
``info`` has strings (``task_id``, ``status``, ``backend``) and, in vector envs,
arrays with ``_key`` masks. :class:`FlattenInfo` makes every ``info`` a flat dict of
floats with fixed keys (``status`` one-hot as ``status/<name>``, nested dicts such as
``RecordEpisodeStatistics``' ``episode`` as ``episode/r``), and :func:`info_scalars`
reduces a single or vector ``info`` to one float per key (the mean over the
environments that reported it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from cudaperf_env.status import STATUSES

__all__ = ["FlattenInfo", "flatten_info", "info_scalars", "make_vec"]

ONE_HOT: Mapping[str, tuple[str, ...]] = {"status": STATUSES}
"""String keys turned into fixed one-hot float keys (``status/ok``, ``status/compile_error``, ...)."""


def make_vec(env_id: str = "CudaPerf-C2CUDA-v1", num_envs: int = 2, flatten: bool = False,
             context: str = "spawn", **kwargs: Any) -> gym.vector.VectorEnv:  # fmt: skip
    """``gym.make_vec(env_id, num_envs, vectorization_mode="async")`` with worker processes started by ``context``.

    Args:
        env_id: A registered CudaPerf id (``import cudaperf_env`` registers them).
        num_envs: Worker processes, one environment each.
        flatten: Wrap each environment in :class:`FlattenInfo` (float ``info`` with fixed keys).
        context: The multiprocessing start method (``spawn``: safe where CUDA is used).
        **kwargs: The environment's arguments (``backend``, ``max_turns``, ``split`` ...).
    """
    import cudaperf_env  # noqa: F401  (registers the ids in this process; spawned workers import it themselves)

    wrappers = [FlattenInfo] if flatten else None
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="async",
                        vector_kwargs={"context": context}, wrappers=wrappers, **kwargs)  # fmt: skip


def flatten_info(info: Mapping[str, Any], sep: str = "/") -> dict[str, float]:
    """A flat dict of floats: numbers and bools as floats, nested dicts joined with ``sep``,
    :data:`ONE_HOT` strings one-hot; other strings (``task_id``, ``backend``) dropped."""
    out: dict[str, float] = {}
    _flatten_into(out, info, "", sep)
    return out


def _flatten_into(out: dict[str, float], info: Mapping[str, Any], prefix: str, sep: str) -> None:
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten_into(out, value, f"{name}{sep}", sep)
        elif isinstance(value, str) and key in ONE_HOT and not prefix:
            out.update({f"{name}{sep}{choice}": float(value == choice) for choice in ONE_HOT[key]})
        else:
            number = _as_float(value)
            if number is not None:
                out[name] = number


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool | int | float | np.number | np.bool_):
        return float(value)
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "biuf":
        return float(value.reshape(()))
    return None


def info_scalars(info: Mapping[str, Any], sep: str = "/") -> dict[str, float]:
    """One float per key of a single-env or vector-env ``info`` (mean over reporting environments, NaN skipped).

    Vector ``info`` arrays are masked by their ``_key`` entries; string arrays of
    :data:`ONE_HOT` keys become the fraction of environments in each state.
    """
    out: dict[str, float] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        if isinstance(value, Mapping):
            out.update({f"{key}{sep}{k}": v for k, v in info_scalars(value, sep).items()})
            continue
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            out.update(flatten_info({key: value}, sep))
            continue
        mask = np.asarray(info.get(f"_{key}", np.ones(len(value), dtype=bool)), dtype=bool)
        chosen = value[mask]
        if key in ONE_HOT:
            for choice in ONE_HOT[key]:
                out[f"{key}{sep}{choice}"] = float(np.mean(chosen == choice)) if chosen.size else math.nan
        elif chosen.dtype.kind in "biuf":
            numbers = chosen.astype(float)
            finite = numbers[~np.isnan(numbers)]
            out[key] = float(finite.mean()) if finite.size else math.nan
        elif chosen.dtype == object:
            numbers = [n for n in (_as_float(v) for v in chosen) if n is not None and not math.isnan(n)]
            if numbers:
                out[key] = float(np.mean(numbers))
    return out


class FlattenInfo(gym.Wrapper[Any, Any, Any, Any]):
    """Every ``info`` from ``reset`` and ``step`` as :func:`flatten_info` makes it (fixed float keys).

    The keys of a step are the same every step (each reward term of the preset, every
    status), so vector environments batch them into plain float arrays.
    """

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the wrapped environment; flatten its ``info``."""
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, flatten_info(info)

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the wrapped environment; flatten its ``info``."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, flatten_info(info)
