"""Draw a task's inputs for one configuration from a seed (pure and reproducible)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cudaperf_env.tasks.distributions import DISTRIBUTIONS
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Arg, Config, Task


def make_inputs(task: Task, config: Config, seed: int) -> dict[str, np.ndarray]:
    """Values of every ``in``/``inout`` buffer of ``task`` under ``config``, and of every scalar
    drawn per episode (a one-element array under the scalar's name).

    The same ``(task, config, seed)`` always gives the same arrays; each argument
    has its own stream, so adding an argument does not change the others. Arguments
    of one ``group`` share one stream and take their ``part`` of one structure.
    """
    out: dict[str, np.ndarray] = {}
    structures: dict[str, dict[str, np.ndarray]] = {}
    for index, arg in enumerate(task.args):
        if arg.role == "scalar" and arg.init:
            rng = np.random.default_rng([seed & 0xFFFFFFFF, index, _config_key(config)])
            out[arg.name] = DISTRIBUTIONS[arg.init["dist"]].draw(resolve(arg.init, config), 1, (1,), rng).astype(
                arg.dtype.numpy)  # fmt: skip
            continue
        if arg.role not in ("in", "inout"):
            continue
        group = arg.init.get("group")
        if group is None:
            rng = np.random.default_rng([seed & 0xFFFFFFFF, index, _config_key(config)])
            out[arg.name] = draw(arg, config, rng)
            continue
        if group not in structures:
            rng = np.random.default_rng([seed & 0xFFFFFFFF, _text_key(str(group)), _config_key(config), 1])
            structures[group] = DISTRIBUTIONS[arg.init["dist"]].draw(resolve(arg.init, config), rng)
        values = structures[group][arg.init["part"]]
        if values.size != arg.numel(config):
            raise ValueError(f"{task.id}: {arg.name} holds {arg.numel(config)} elements under {dict(config)}, "
                             f"but part {arg.init['part']!r} of group {group!r} has {values.size}")  # fmt: skip
        out[arg.name] = np.ascontiguousarray(values.astype(arg.dtype.numpy, copy=False))
    return out


def scalar_values(task: Task, config: Config, inputs: Mapping[str, np.ndarray] | None = None) -> dict[str, int | float]:
    """Values of every scalar argument under ``config`` (drawn ones from ``inputs``, else their centre)."""
    drawn = inputs or {}
    return {a.name: drawn[a.name].item() if a.name in drawn else a.scalar_value(config)
            for a in task.args if not a.is_buffer}  # fmt: skip


def resolve(init: Mapping[str, Any], config: Config) -> dict[str, float]:
    """An ``init``'s parameters with their expressions evaluated (booleans as 0/1)."""
    skip = {"dist", "group", "part"}
    return {k: (float(v) if isinstance(v, bool) else evaluate(v, config)) for k, v in init.items() if k not in skip}


def draw(arg: Arg, config: Config, rng: np.random.Generator) -> np.ndarray:
    """One buffer's values from its ``init`` distribution (defaults by dtype)."""
    n = arg.numel(config)
    dtype = arg.dtype.numpy
    init: Mapping = arg.init or {"dist": "normal" if arg.dtype.is_float else "bernoulli" if arg.dtype.is_bool
                                 else "randint"}  # fmt: skip
    params = resolve(init, config)
    if init["dist"] == "normal" and dtype in (np.float32, np.float64):  # fast path, no float64 detour
        std, mean = dtype.type(params.get("std", 1.0)), dtype.type(params.get("mean", 0.0))
        values = rng.standard_normal(n, dtype=dtype) * std + mean
    else:
        shape = tuple(int(evaluate(d, config)) for d in arg.shape)
        values = DISTRIBUTIONS[init["dist"]].draw(params, n, shape, rng).reshape(-1)
    return np.ascontiguousarray(values.astype(dtype, copy=False))


def _config_key(config: Config) -> int:
    return _text_key("".join(f"{name}={config[name]};" for name in sorted(config)))


def _text_key(text: str) -> int:
    key = 0
    for ch in text:
        key = (key * 131 + ord(ch)) & 0xFFFFFFFF
    return key
