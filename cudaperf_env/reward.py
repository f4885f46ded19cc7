"""Reward math: pure functions from a submission's outcome to a total and its named terms.

Every term lands in the step's ``info`` as ``reward/<name>``; the total is their sum.
``RewardConfig.preset`` picks the scheme (a dict of pure functions, :data:`PRESETS`):

- ``cudaperf`` (default), the composite::

      format    = format_penalty                    no usable code (format_error, rejected)
      compile   = compile_weight                    it compiled
      correct   = correct_weight                    correct on every configuration
      speedup   = speedup_term(speedup)             correct and timed only (see below)
      structure = structure_weight * structural_score   correct only
      ranker    = ranker_weight * clip(ranker_score, 0, 1)   correct only

  Defaults: -0.5, 0.1, 1.0, (1.0 up, 0.5 down), 0.5, 0.25. ``speedup_term`` is
  ``speedup_weight * log2(s)`` for a faster kernel (clipped at ``speedup_clip``) and
  ``slowdown_penalty * log2(s) / log2(speedup_clip)`` for a slower one (so it never
  falls below ``-slowdown_penalty``), 0 within the noise deadband. Structure and ranker
  are paid to correct code only, so no wrong kernel can farm them.
- ``cuda_agent``: CUDA Agent's milestones, one term ``milestone``: -1 wrong or not
  compiled, 1 correct, 2 correct and more than ``milestone_margin`` (5%) faster than
  the baseline, 3 faster by that margin than both the baseline and torch.compile.
  On a PyTorch task timed on the GPU the baseline is the reference run eagerly and
  ``speedup_vs_compile`` is over its ``torch.compile``-d model, as in CUDA Agent.
  C-to-CUDA tasks have no torch.compile, so the task's baseline plays "eager" and its
  fastest labelled implementation plays torch.compile (``speedup_vs_best``); a PyTorch
  task whose compile failed falls back to that too. Where neither exists, 3 is unreachable.
- ``kevin``: Kevin's ``0.3 * correct + speedup`` (raw ratio, correct and timed only;
  0 for a reply with no code). Use ``shaping="none"`` and :func:`discounted_returns`
  over the turns' scores for Kevin's multi-turn credit.
- ``speedup_only``: the speedup term of a correct submission, 0 where it was not
  timed, ``-(slowdown_penalty + compile_weight)`` for any failure (below every correct one).

Two invariants hold for every preset, and are property-tested
(``tests/cudaperf_env/test_reward.py``) because a policy finds every way around them:

1. **Turns cannot be farmed.** With ``shaping="potential"`` (default) a turn's reward
   is its score minus the previous turn's score (term ``previous``), so an episode's
   return is its last turn's score: a failed detour taken before reaching an outcome
   never raises the return, and failing after a correct turn always lowers it. (A
   failure that follows a worse failure, say a compile error after a reply with no
   code, is an improvement and is paid as one.)
2. **No wrong submission out-earns a correct one** on the same task and turn, whatever
   its structure: wrong code earns at most ``compile_weight``, correct code at least
   ``compile_weight + correct_weight - slowdown_penalty`` (validated to be more).

A term whose input was not measured (NaN: no structural analysis, no ranker, no
previous turn) is left out of ``terms`` rather than reported as 0, so logs tell "not
measured" from "measured as 0".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from cudaperf_env.status import STATUSES, Status

SHAPINGS = ("potential", "none")


@dataclass(frozen=True)
class Outcome:
    """What the reward looks at.

    Attributes:
        status: The evaluation status (a :class:`~cudaperf_env.status.Status` value).
        compiled: nvcc accepted the code (and the backend built it).
        correct: Every configuration matched the reference.
        speedup: Baseline time / candidate time; NaN where not measured (CPU backend).
        structural_score: The structural analysis score in [0, 1]; NaN when not analysed.
        ranker_score: The learned ranker's score in [0, 1]; NaN when no ranker ran.
        previous_score: The previous turn's :attr:`Reward.score`; NaN on the first turn.
        speedup_vs_best: Speedup over the fastest known implementation (``cuda_agent``'s
            torch.compile milestone where there is no torch.compile); NaN when not measured.
        speedup_vs_compile: Speedup over the ``torch.compile``-d PyTorch reference (PyTorch tasks on
            the GPU); NaN when not measured.
    """

    status: str
    compiled: bool
    correct: bool
    speedup: float = math.nan
    structural_score: float = math.nan
    ranker_score: float = math.nan
    previous_score: float = math.nan
    speedup_vs_best: float = math.nan
    speedup_vs_compile: float = math.nan

    def __post_init__(self) -> None:
        s = self.structural_score
        if not (math.isnan(s) or 0.0 <= s <= 1.0):
            raise ValueError(f"structural_score must be in [0, 1] or NaN, got {s}")
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {', '.join(STATUSES)}")

    @property
    def has_code(self) -> bool:
        """The reply carried code that got past the screen."""
        return Status(self.status).has_code


@dataclass(frozen=True)
class RewardConfig:
    """Preset and weights of the reward.

    Attributes:
        preset: The scheme: one of :data:`PRESETS` (``cudaperf``, ``cuda_agent``, ``kevin``, ``speedup_only``).
        shaping: Multi-turn credit: ``potential`` (a turn earns its score minus the previous
            turn's, so an episode returns its last score) or ``none`` (every turn earns its score).
        format_penalty: Added (negative) when no usable code came in or it was rejected.
        compile_weight: For code that compiles.
        correct_weight: For code that is correct on every configuration.
        speedup_weight: Times log2 of a speedup above 1 (correct, timed code only).
        slowdown_penalty: The most a slower-than-baseline correct kernel loses (at ``1/speedup_clip``);
            kept below ``correct_weight`` so a slow correct kernel still beats every wrong one.
        speedup_clip: Speedups are clipped to ``[1/x, x]``.
        speedup_deadband: Speedups within ``1 +- deadband`` count as 1 (timing noise).
        structure_weight: Times the structural score (correct code only).
        ranker_weight: Times the ranker score (correct code only).
        milestone_margin: ``cuda_agent``: how much faster counts as faster (0.05: 5%).
        kevin_correct_weight: ``kevin``: the reward for correctness.
    """

    preset: str = "cudaperf"
    shaping: str = "potential"
    format_penalty: float = -0.5
    compile_weight: float = 0.1
    correct_weight: float = 1.0
    speedup_weight: float = 1.0
    slowdown_penalty: float = 0.5
    speedup_clip: float = 8.0
    speedup_deadband: float = 0.03
    structure_weight: float = 0.5
    ranker_weight: float = 0.25
    milestone_margin: float = 0.05
    kevin_correct_weight: float = 0.3

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown reward preset {self.preset!r}; expected one of {', '.join(PRESETS)}")
        if self.shaping not in SHAPINGS:
            raise ValueError(f"unknown shaping {self.shaping!r}; expected one of {', '.join(SHAPINGS)}")
        if self.format_penalty > 0:
            raise ValueError(f"format_penalty must be <= 0, got {self.format_penalty}")
        if self.speedup_clip <= 1 or not 0 <= self.speedup_deadband < 1:
            raise ValueError("speedup_clip must be > 1 and speedup_deadband in [0, 1)")
        weights = {"compile_weight": self.compile_weight, "speedup_weight": self.speedup_weight,
                   "slowdown_penalty": self.slowdown_penalty, "structure_weight": self.structure_weight,
                   "ranker_weight": self.ranker_weight}  # fmt: skip
        for name, weight in weights.items():
            if weight < 0:
                raise ValueError(f"{name} must be >= 0, got {weight}")
        if self.slowdown_penalty >= self.correct_weight:
            raise ValueError(
                f"slowdown_penalty ({self.slowdown_penalty}) must stay below correct_weight "
                f"({self.correct_weight}), or a slow correct kernel could earn less than a wrong one"
            )
        if self.milestone_margin < 0:
            raise ValueError("milestone_margin must be >= 0")


@dataclass(frozen=True)
class Reward:
    """A total and the terms it is the sum of."""

    total: float
    terms: dict[str, float]

    @property
    def score(self) -> float:
        """The level this turn reached: the total without the ``previous`` term (the next turn's baseline)."""
        return self.total - self.terms.get("previous", 0.0)


def speedup_term(
    speedup: float, clip: float = 8.0, deadband: float = 0.03, weight: float = 1.0, slowdown_penalty: float = 0.5
) -> float:
    """Credit for a measured speedup: ``weight * log2(s)`` above 1, at most ``-slowdown_penalty`` below.

    Speedups are clipped to ``[1/clip, clip]``; within ``1 +- deadband`` (timing noise) and
    when unmeasured (NaN) the term is 0.
    """
    if not math.isfinite(speedup) or speedup <= 0 or abs(speedup - 1.0) <= deadband:
        return 0.0
    octaves = math.log2(min(max(speedup, 1.0 / clip), clip))
    return weight * octaves if octaves > 0 else slowdown_penalty * octaves / math.log2(clip)


def _speedup(outcome: Outcome, config: RewardConfig) -> float:
    return speedup_term(
        outcome.speedup, config.speedup_clip, config.speedup_deadband, config.speedup_weight, config.slowdown_penalty
    )


def _measured(value: float) -> bool:
    return math.isfinite(value)


def cudaperf_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """The default composite (see the module docstring)."""
    correct = outcome.correct
    terms = {
        "format": 0.0 if outcome.has_code else config.format_penalty,
        "compile": config.compile_weight if outcome.compiled else 0.0,
        "correct": config.correct_weight if correct else 0.0,
        "speedup": _speedup(outcome, config) if correct else 0.0,
    }
    if _measured(outcome.structural_score):
        terms["structure"] = config.structure_weight * outcome.structural_score if correct else 0.0
    if _measured(outcome.ranker_score):
        terms["ranker"] = config.ranker_weight * min(1.0, max(0.0, outcome.ranker_score)) if correct else 0.0
    return Reward(sum(terms.values()), terms)


def cuda_agent_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """CUDA Agent's milestones -1 / 1 / 2 / 3 (see the module docstring for the C-to-CUDA mapping)."""
    faster = 1.0 + config.milestone_margin
    if not (outcome.compiled and outcome.correct):
        milestone = -1.0
    elif _measured(outcome.speedup) and outcome.speedup > faster:
        second = outcome.speedup_vs_compile if _measured(outcome.speedup_vs_compile) else outcome.speedup_vs_best
        beats_best = _measured(second) and second > faster
        milestone = 3.0 if beats_best else 2.0
    else:
        milestone = 1.0
    return Reward(milestone, {"milestone": milestone})


def kevin_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """Kevin's ``0.3 * correct + speedup``: the raw speedup of a correct, timed kernel; 0 for no code."""
    correct = outcome.correct and outcome.has_code
    speedup = outcome.speedup if correct and _measured(outcome.speedup) and outcome.speedup > 0 else 0.0
    terms = {"correct": config.kevin_correct_weight if correct else 0.0, "speedup": speedup}
    return Reward(sum(terms.values()), terms)


def speedup_only_reward(outcome: Outcome, config: RewardConfig) -> Reward:
    """The speedup term of a correct submission; any failure earns less than the slowest correct one."""
    term = _speedup(outcome, config) if outcome.correct else -(config.slowdown_penalty + config.compile_weight)
    return Reward(term, {"speedup": term})


PRESETS: Mapping[str, Callable[[Outcome, RewardConfig], Reward]] = MappingProxyType({
    "cudaperf": cudaperf_reward,
    "cuda_agent": cuda_agent_reward,
    "kevin": kevin_reward,
    "speedup_only": speedup_only_reward,
})


# Every term a preset can report, so logs and vector envs see the same keys every step.
PRESET_TERMS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "cudaperf": ("format", "compile", "correct", "speedup", "structure", "ranker", "previous"),
    "cuda_agent": ("milestone", "previous"),
    "kevin": ("correct", "speedup", "previous"),
    "speedup_only": ("speedup", "previous"),
})


def compute_reward(outcome: Outcome, config: RewardConfig | None = None) -> Reward:
    """The reward for one turn under ``config.preset``, shaped over turns by ``config.shaping``."""
    config = config or RewardConfig()
    level = PRESETS[config.preset](outcome, config)
    if config.shaping == "none" or not _measured(outcome.previous_score):
        return level
    terms = {**level.terms, "previous": -outcome.previous_score}
    return Reward(sum(terms.values()), terms)


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
