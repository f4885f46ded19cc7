"""Time budgets for slow submissions: when timing may stop, and how long a correctness call may run.

A correct kernel thousands of times slower than the baseline earns exactly what one
ten times slower earns once the reward clips speedups to ``[1/clip, clip]``, so
measuring it precisely only holds the GPU. Two pure rules keep such kernels cheap:

* :func:`decided_slow`: timing stops once the speedup's upper bound, the slowest
  baseline call against the fastest candidate call widened by a margin, is below the
  clip floor. Later calls would have to be ``margin`` times faster than every call so
  far to lift the measured speedup above the floor, so the reward is the one the full
  measurement would have given after clipping.
* :class:`CallLimits`: each correctness call may run a multiple of the baseline's time
  on that configuration plus a floor, so a correct but very slow kernel times out on
  its first large configuration instead of occupying the GPU for its whole run.

The worker (``gpu_worker.py``, standard library only) applies the same rule as
``_decided_slow`` to stop its loop; the parent decides again from the samples it gets
back (``tests/.../test_budget.py`` checks that both agree).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cudaperf_env.tasks.schema import Config, Task


def speedup_upper_bound(candidate_ms: Sequence[float], baseline_ms: Sequence[float], margin: float) -> float:
    """``margin`` x the slowest baseline call / the fastest candidate call (pure).

    The ratio of the medians of these samples (the reported speedup) is at most the
    unwidened ratio; ``margin`` covers what later calls could still move (clock ramp,
    noise). ``inf`` while either side has no sample or a call took no time.
    """
    if not candidate_ms or not baseline_ms or min(candidate_ms) <= 0:
        return math.inf
    return margin * max(baseline_ms) / min(candidate_ms)


def decided_slow(candidate_ms: Sequence[float], baseline_ms: Sequence[float], bound: float, margin: float) -> bool:
    """Whether the candidate is certainly slower than ``bound`` allows: timing it further changes no reward.

    Args:
        candidate_ms: The candidate's event times so far (every call, warmup included).
        baseline_ms: The baseline's, from the same rounds.
        bound: The reward's clip floor, ``1 / speedup_clip``; 0 disables the rule.
        margin: How far below the bound the raw ratio must be (>= 1).
    """
    return bound > 0 and speedup_upper_bound(candidate_ms, baseline_ms, margin) < bound


def wall_check_calls(calls: int, candidate_ms: float, budget_left_s: float) -> int:
    """Back-to-back calls of the wall-clock check that fit the budget left, at least 1 and at most ``calls``."""
    if not math.isfinite(candidate_ms) or candidate_ms <= 0 or math.isinf(budget_left_s):
        return calls
    return max(1, min(calls, int(max(0.0, budget_left_s) * 1e3 / candidate_ms)))


@dataclass(frozen=True)
class CallLimits:
    """Wall-clock limit of one correctness call, scaled from the baseline's time on its configuration.

    Attributes:
        factor: The limit is this many times the baseline's time on the configuration ...
        floor_s: ... plus this (buffer transfers, module loading, launch overhead). Never more than
            the backend's ``timeout_s``; just ``timeout_s`` where the baseline's time is unknown.
    """

    factor: float = 1000.0
    floor_s: float = 2.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.factor) and self.factor >= 1):
            raise ValueError(f"CallLimits.factor must be a finite number >= 1, got {self.factor}")
        if not (math.isfinite(self.floor_s) and self.floor_s > 0):
            raise ValueError(f"CallLimits.floor_s must be a positive number of seconds, got {self.floor_s}")

    def limit_s(self, baseline_ms: float, ceiling_s: float) -> float:
        """The limit for a configuration where the baseline takes ``baseline_ms`` (NaN: unknown)."""
        if not math.isfinite(baseline_ms) or baseline_ms < 0:
            return ceiling_s
        return min(ceiling_s, self.floor_s + self.factor * baseline_ms / 1e3)


def labelled_ms(task: Task, config: Config) -> float:
    """The baseline's labelled median on ``config`` (``Implementation.labels``); NaN when not labelled."""
    if not task.baseline:
        return math.nan
    for label in task.implementation(task.baseline).labels:
        if dict(label.config) == dict(config) and label.median_ms > 0:
            return float(label.median_ms)
    return math.nan


def too_slow_message(config: Config, hidden: bool, passed: int, limit_s: float, baseline_ms: float) -> str:
    """The ``timeout`` message of a correctness call stopped at its limit (pure).

    Args:
        config: The configuration it ran on; named unless ``hidden``.
        hidden: One of the task's hidden configurations (its sizes are not shown).
        passed: Configurations before it that were correct.
        limit_s: The limit it ran into.
        baseline_ms: The baseline's time on it (NaN: unknown).
    """
    where = "a hidden configuration" if hidden else ", ".join(f"{k}={v}" for k, v in config.items())
    before = f"correct on the {passed} configuration{'s' if passed != 1 else ''} before it; " if passed else ""
    against = f" vs the baseline's {baseline_ms:.3g} ms" if math.isfinite(baseline_ms) else ""
    return f"{before}too slow on {where}: over {limit_s * 1e3:.0f} ms{against} (stopped)"
