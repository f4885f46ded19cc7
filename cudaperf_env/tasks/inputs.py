"""Draw a task's inputs for one configuration from a seed (pure and reproducible)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Arg, Config, Task


def make_inputs(task: Task, config: Config, seed: int) -> dict[str, np.ndarray]:
    """Values of every ``in``/``inout`` buffer of ``task`` under ``config``.

    The same ``(task, config, seed)`` always gives the same arrays; each argument
    has its own stream, so adding an argument does not change the others.
    """
    out = {}
    for index, arg in enumerate(task.args):
        if arg.role in ("in", "inout"):
            rng = np.random.default_rng([seed & 0xFFFFFFFF, index, _config_key(config)])
            out[arg.name] = draw(arg, config, rng)
    return out


def scalar_values(task: Task, config: Config) -> dict[str, int | float]:
    """Values of every scalar argument under ``config``."""
    return {a.name: a.scalar_value(config) for a in task.args if not a.is_buffer}


def draw(arg: Arg, config: Config, rng: np.random.Generator) -> np.ndarray:
    """One buffer's values from its ``init`` distribution (defaults by dtype)."""
    n = arg.numel(config)
    dtype = arg.dtype.numpy
    init: Mapping = arg.init or ({"dist": "normal"} if arg.dtype.is_float else {"dist": "randint"})
    dist = init["dist"]

    def bound(key: str, default: float) -> float:
        return evaluate(init[key], config) if key in init else default

    if dist == "normal" and dtype in (np.float32, np.float64):  # fast path, no float64 detour
        values = rng.standard_normal(n, dtype=dtype) * dtype.type(bound("std", 1.0)) + dtype.type(bound("mean", 0.0))
    elif dist == "normal":
        values = rng.normal(bound("mean", 0.0), bound("std", 1.0), n)
    elif dist == "uniform":
        values = rng.uniform(bound("low", 0.0), bound("high", 1.0), n)
    elif dist in ("randint", "sorted_randint"):
        low, high = int(bound("low", 0)), int(bound("high", 100))
        values = rng.integers(low, max(high, low + 1), n, dtype=np.int64)
        if dist == "sorted_randint":
            values.sort()
    elif dist == "permutation":
        values = rng.permutation(n)
    elif dist == "csr_rowptr":
        nnz = int(bound("nnz", 0))
        cuts = np.sort(rng.integers(0, nnz + 1, n - 2, dtype=np.int64))
        values = np.concatenate([[0], cuts, [nnz]]) if n >= 2 else np.zeros(n)
    else:  # the loader rejects unknown distributions
        raise ValueError(f"unknown distribution {dist!r}")
    return np.ascontiguousarray(values.astype(dtype, copy=False))


def _config_key(config: Config) -> int:
    key = 0
    for name in sorted(config):
        for ch in f"{name}={config[name]};":
            key = (key * 131 + ord(ch)) & 0xFFFFFFFF
    return key
