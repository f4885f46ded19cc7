"""Reward math: pure functions from a submission's outcome to a total and its named terms.

Every term lands in the step's ``info`` as ``reward/<name>``; the total is their sum.
``RewardConfig.preset`` picks the scheme (a dict of pure functions, :data:`PRESETS`):

- ``cudaperf`` (default), the composite::

      format  = format_penalty               if no usable code (format_error, rejected)
      compile = compile_weight               if it compiled
      correct = correct_weight               if correct on every configuration
      speedup = speedup_weight * log2(clip(speedup))   correct and timed only (deadband for noise)
      structure   = structure_weight * structural_score   compiled only
      ranker      = ranker_weight * clip(ranker_score, 0, 1)   compiled only
      improvement = improvement_weight * clip(score - previous_score, +-improvement_clip)

  Defaults: -0.5, 0.1, 1.0, 1.0, 0.5, 0.25, 0.5. The shaping terms are kept below
  correctness (``structure_weight + ranker_weight < correct_weight`` is enforced): a
  wrong kernel never outscores a correct one through structure alone. ``score`` is
  the total without ``improvement`` (:attr:`Reward.score`); pass the previous
  turn's ``score`` as ``previous_score`` to credit improvement over it.
- ``cuda_agent``: CUDA Agent's milestones, one term ``milestone``: -1 wrong or not
  compiled, 1 correct, 2 correct and more than ``milestone_margin`` (5%) faster than
  the baseline, 3 faster by that margin than both the baseline and the best
  reference. C-to-CUDA tasks have no torch.compile: the task's baseline plays
  "eager" (``speedup``) and ``speedup_vs_best`` (speedup over the fastest known
  implementation) plays torch.compile; while that is NaN, 3 is unreachable.
- ``kevin``: Kevin's ``0.3 * correct + speedup`` (raw ratio, correct and timed only;
  0 for a reply with no code). :func:`discounted_returns` gives its multi-turn credit.
- ``speedup_only``: the log2 speedup term of a correct submission, else 0.

A shaping term whose input was not measured (NaN: no structural analysis, no
ranker, no previous turn) is left out of ``terms`` rather than reported as 0,
so logs tell "not measured" from "measured as 0".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

NO_CODE = ("format_error", "rejected")


@dataclass(frozen=True)
class Outcome:
    """What the reward looks at.

    Attributes:
        status: The evaluation status (``ok``, ``compile_error``, ...).
        compiled: nvcc accepted the code (and the backend built it).
        correct: Every configuration matched the reference.
        speedup: Baseline time / candidate time; NaN where not measured (CPU backend).
        structural_score: The structural analysis score in [0, 1]; NaN when not analysed.
        ranker_score: The learned ranker's score in [0, 1]; NaN when no ranker ran.
        previous_score: The previous turn's :attr:`Reward.score`; NaN on the first turn.
        speedup_vs_best: Speedup over the fastest known implementation (``cuda_agent``'s
            torch.compile milestone); NaN when not measured.
    """

    status: str
    compiled: bool
    correct: bool
    speedup: float = math.nan
    structural_score: float = math.nan
    ranker_score: float = math.nan
    previous_score: float = math.nan
    speedup_vs_best: float = math.nan

    def __post_init__(self) -> None:
        s = self.structural_score
        if not (math.isnan(s) or 0.0 <= s <= 1.0):
            raise ValueError(f"structural_score must be in [0, 1] or NaN, got {s}")


@dataclass(frozen=True)
class RewardConfig:
    """Preset and weights of the reward.

    Attributes:
        preset: The scheme: one of :data:`PRESETS` (``cudaperf``, ``cuda_agent``, ``kevin``, ``speedup_only``).
        format_penalty: Added (negative) when no usable code came in or it was rejected.
        compile_weight: For code that compiles.
        correct_weight: For code that is correct on every configuration.
        speedup_weight: Times the log2 speedup term (correct code with a measured speedup only).
        speedup_clip: Speedups are clipped to ``[1/x, x]`` before the log.
        speedup_deadband: Speedups within ``1 +- deadband`` count as 1 (timing noise).
        structure_weight: Times the structural score (compiled code only).
        ranker_weight: Times the ranker score (compiled code only).
        improvement_weight: Times the change of score since the previous turn.
        improvement_clip: The change is clipped to ``[-x, x]``.
        milestone_margin: ``cuda_agent``: how much faster counts as faster (0.05: 5%).
        kevin_correct_weight: ``kevin``: the reward for correctness.
    """

    preset: str = "cudaperf"
    format_penalty: float = -0.5
    compile_weight: float = 0.1
    correct_weight: float = 1.0
    speedup_weight: float = 1.0
    speedup_clip: float = 8.0
    speedup_deadband: float = 0.03
    structure_weight: float = 0.5
    ranker_weight: float = 0.25
    improvement_weight: float = 0.5
    improvement_clip: float = 2.0
    milestone_margin: float = 0.05
    kevin_correct_weight: float = 0.3

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown reward preset {self.preset!r}; expected one of {', '.join(PRESETS)}")
        if self.format_penalty > 0:
            raise ValueError(f"format_penalty must be <= 0, got {self.format_penalty}")
        if self.speedup_clip < 1 or not 0 <= self.speedup_deadband < 1:
            raise ValueError("speedup_clip must be >= 1 and speedup_deadband in [0, 1)")
        shaping = {"structure_weight": self.structure_weight, "ranker_weight": self.ranker_weight,
                   "improvement_weight": self.improvement_weight}
        for name, weight in shaping.items():
            if weight < 0:
                raise ValueError(f"{name} must be >= 0, got {weight}")
        if self.structure_weight + self.ranker_weight >= self.correct_weight > 0:
            raise ValueError(
                f"structure_weight + ranker_weight ({self.structure_weight + self.ranker_weight}) must stay below "
                f"correct_weight ({self.correct_weight}), or a wrong kernel could outscore a correct one"
            )
        if self.improvement_clip <= 0 or self.milestone_margin < 0:
            raise ValueError("improvement_clip must be > 0 and milestone_margin >= 0")


@dataclass(frozen=True)
class Reward:
    """A total and the terms it is the sum of."""

    total: float
    terms: dict[str, float]

    @property
    def score(self) -> float:
        """The total without the ``improvement`` term: the next turn's ``previous_score``."""
        return self.total - self.terms.get("improvement", 0.0)


def speedup_term(speedup: float, clip: float = 8.0, deadband: float = 0.03) -> float:
    """log2 of the clipped speedup; 0 within the noise deadband or when unmeasured (NaN)."""
    if not math.isfinite(speedup) or speedup <= 0:
        return 0.0
    if abs(speedup - 1.0) <= deadband:
        return 0.0
    return math.log2(min(max(speedup, 1.0 / clip), clip))


def _measured(value: float) -> bool:
    return math.isfinite(value)


def cudaperf_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """The default composite (see the module docstring)."""
    no_code = outcome.status in NO_CODE
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
    if _measured(outcome.structural_score):
        terms["structure"] = config.structure_weight * outcome.structural_score if outcome.compiled else 0.0
    if _measured(outcome.ranker_score):
        ranked = min(1.0, max(0.0, outcome.ranker_score))
        terms["ranker"] = config.ranker_weight * ranked if outcome.compiled else 0.0
    if _measured(outcome.previous_score):
        change = sum(terms.values()) - outcome.previous_score
        clipped = min(config.improvement_clip, max(-config.improvement_clip, change))
        terms["improvement"] = config.improvement_weight * clipped
    return Reward(sum(terms.values()), terms)


def cuda_agent_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """CUDA Agent's milestones -1 / 1 / 2 / 3 (see the module docstring for the C-to-CUDA mapping)."""
    faster = 1.0 + config.milestone_margin
    if not (outcome.compiled and outcome.correct):
        milestone = -1.0
    elif _measured(outcome.speedup) and outcome.speedup > faster:
        beats_best = _measured(outcome.speedup_vs_best) and outcome.speedup_vs_best > faster
        milestone = 3.0 if beats_best else 2.0
    else:
        milestone = 1.0
    return Reward(milestone, {"milestone": milestone})


def kevin_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """Kevin's ``0.3 * correct + speedup``: the raw speedup of a correct, timed kernel; 0 for no code."""
    correct = outcome.correct and outcome.status not in NO_CODE
    speedup = outcome.speedup if correct and _measured(outcome.speedup) and outcome.speedup > 0 else 0.0
    terms = {"correct": config.kevin_correct_weight if correct else 0.0, "speedup": speedup}
    return Reward(sum(terms.values()), terms)


def speedup_only_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """The log2 speedup term of a correct submission; 0 otherwise."""
    term = speedup_term(outcome.speedup, config.speedup_clip, config.speedup_deadband) if outcome.correct else 0.0
    return Reward(term, {"speedup": term})


PRESETS: Mapping[str, Callable[[Outcome, RewardConfig], Reward]] = MappingProxyType({
    "cudaperf": cudaperf_reward,
    "cuda_agent": cuda_agent_reward,
    "kevin": kevin_reward,
    "speedup_only": speedup_only_reward,
})


# Every term a preset can report, so logs and vector envs see the same keys every step.
PRESET_TERMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "cudaperf": ("format", "compile", "correct", "speedup", "structure", "ranker", "improvement"),
    "cuda_agent": ("milestone",),
    "kevin": ("correct", "speedup"),
    "speedup_only": ("speedup",),
})


def compute_reward(outcome: Outcome, config: RewardConfig | None = None) -> Reward:
    """The reward for one submission under ``config.preset`` (default: the ``cudaperf`` composite)."""
    config = config or RewardConfig()
    return PRESETS[config.preset](outcome, config)


def discounted_returns(scores: Sequence[float], gamma: float = 0.4) -> list[float]:
    """Each turn's return: its score plus ``gamma`` times the next turn's return (Kevin's multi-turn credit).

    Args:
        scores: Per-turn scores of one trajectory, first turn first.
        gamma: Discount in [0, 1] (Kevin uses 0.4).

    Returns:
        ``R_t = s_t + gamma * R_{t+1}`` for every turn, in turn order.

    Raises:
        ValueError: For a ``gamma`` outside [0, 1] or a non-finite score.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    returns = [0.0] * len(scores)
    running = 0.0
    for t in range(len(scores) - 1, -1, -1):
        if not math.isfinite(scores[t]):
            raise ValueError(f"score of turn {t} is {scores[t]}; every score must be finite")
        running = scores[t] + gamma * running
        returns[t] = running
    return returns
