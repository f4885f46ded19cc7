"""Reward math: pure functions from a submission's outcome to a total and its named terms.

Every term lands in the step's ``info`` as ``reward/<name>``; the total is their sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """What the reward looks at.

    Attributes:
        status: The evaluation status (``ok``, ``compile_error``, ...).
        compiled: nvcc accepted the code (and the backend built it).
        correct: Every configuration matched the reference.
        speedup: Baseline time / candidate time; NaN where not measured (CPU backend).
    """

    status: str
    compiled: bool
    correct: bool
    speedup: float = math.nan


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the composite reward.

    Attributes:
        format_penalty: Added (negative) when no usable code came in or it was rejected.
        compile_weight: For code that compiles.
        correct_weight: For code that is correct on every configuration.
        speedup_weight: Times the log2 speedup term (correct code with a measured speedup only).
        speedup_clip: Speedups are clipped to ``[1/x, x]`` before the log.
        speedup_deadband: Speedups within ``1 +- deadband`` count as 1 (timing noise).
    """

    format_penalty: float = -0.5
    compile_weight: float = 0.1
    correct_weight: float = 1.0
    speedup_weight: float = 1.0
    speedup_clip: float = 8.0
    speedup_deadband: float = 0.03

    def __post_init__(self) -> None:
        if self.format_penalty > 0:
            raise ValueError(f"format_penalty must be <= 0, got {self.format_penalty}")
        if self.speedup_clip < 1 or not 0 <= self.speedup_deadband < 1:
            raise ValueError("speedup_clip must be >= 1 and speedup_deadband in [0, 1)")


@dataclass(frozen=True)
class Reward:
    """A total and the terms it is the sum of."""

    total: float
    terms: dict[str, float]


def speedup_term(speedup: float, clip: float = 8.0, deadband: float = 0.03) -> float:
    """log2 of the clipped speedup; 0 within the noise deadband or when unmeasured (NaN)."""
    if not math.isfinite(speedup) or speedup <= 0:
        return 0.0
    if abs(speedup - 1.0) <= deadband:
        return 0.0
    return math.log2(min(max(speedup, 1.0 / clip), clip))


def compute_reward(outcome: Outcome, config: RewardConfig | None = None) -> Reward:
    """The composite reward for one submission."""
    config = config or RewardConfig()
    no_code = outcome.status in ("format_error", "rejected")
    terms = {
        "format": config.format_penalty if no_code else 0.0,
        "compile": config.compile_weight if outcome.compiled else 0.0,
        "correct": config.correct_weight if outcome.correct else 0.0,
        "speedup": (
            config.speedup_weight * speedup_term(outcome.speedup, config.speedup_clip, config.speedup_deadband)
            if outcome.correct
            else 0.0
        ),
    }
    return Reward(sum(terms.values()), terms)
