"""One refinement turn: grade a reply to a task, given the previous turn.

This is the seam every caller uses: the Gymnasium env, ``cudaperf eval``, the
bundled agent and trainer, and each integration (TRL, verl, verifiers, ...).
``grade`` runs the evaluation pipeline, turns the result into the reward's
:class:`~cudaperf_env.reward.Outcome`, computes the reward (potential-based over
turns: a turn is credited with the change of score it made) and the feedback
text, and :meth:`Turn.info` / :meth:`Turn.as_json` are the one mapping from an
evaluation to the flat ``info`` dict and to JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cudaperf_env.backends import make_backend
from cudaperf_env.backends.base import Backend
from cudaperf_env.evaluate import EvalOptions, Evaluation, Evaluator
from cudaperf_env.feedback import feedback
from cudaperf_env.reward import PRESET_TERMS, Outcome, Reward, RewardConfig, compute_reward
from cudaperf_env.tasks.schema import Task

__all__ = ["EvalOptions", "Grader", "RewardConfig", "Turn", "grade", "grade_many", "outcome_of", "turn_of"]


@dataclass(frozen=True)
class Turn:
    """A graded reply: what happened, what it earned, what the agent reads next.

    Attributes:
        task_id: The task the reply answered.
        number: 1 for the first reply of an episode, then 2, 3, ...
        evaluation: The pipeline's full result.
        outcome: What the reward looked at.
        reward: This turn's reward and its terms (``reward.score``: the level reached).
        feedback: Execution feedback, the next observation's main part.
        preset: The reward preset, which fixes the ``reward/<term>`` keys of :meth:`info`.
    """

    task_id: str
    number: int
    evaluation: Evaluation
    outcome: Outcome
    reward: Reward
    feedback: str
    preset: str

    @property
    def status(self) -> str:
        """The evaluation status as a plain string (``ok``, ``wrong_answer``, ...)."""
        return str(self.evaluation.status)

    @property
    def correct(self) -> bool:
        """Correct on every configuration."""
        return self.evaluation.correct

    def info(self) -> dict[str, Any]:
        """Flat scalars for Gymnasium's ``info`` and loggers; the same keys every turn of a preset."""
        e = self.evaluation
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "turn": self.number,
            "status": self.status,
            "cut_off": e.cut_off,
            "compiled": e.compiled,
            "correct": e.correct,
            "speedup": e.speedup,
            "speedup_lcb": e.speedup_lcb,
            "speedup_vs_best": e.speedup_vs_best,
            "timing_flagged": bool(e.timing_flags),
            "speedup_capped": math.isfinite(e.speedup_bound),
            "runtime_ms": e.runtime_ms,
            "baseline_ms": e.baseline_ms,
            "baseline": e.baseline,
            "speedup_vs_c": e.speedup_vs_c,
            "speedup_vs_compile": e.speedup_vs_compile,
            "speedup_vs_impl": e.speedup_vs_impl,
            "compile_ms": e.compile_ms,
            "compile_fallback": bool(e.compile_error),
            "backend": e.backend,
            "eval_seconds": e.seconds.get("total", math.nan),
            "structural_score": e.structure.score if e.structure is not None else math.nan,
            "ranker_score": e.ranker_score,
            "score": self.reward.score,
        }
        info.update({f"reward/{name}": self.reward.terms.get(name, 0.0) for name in PRESET_TERMS[self.preset]})
        return info

    def as_json(self) -> dict[str, Any]:
        """Everything a report or a trajectory file needs, JSON-safe (NaN becomes ``null``)."""
        e = self.evaluation
        record: dict[str, Any] = {key: _json_value(value) for key, value in self.info().items()}
        record.update(
            message=e.message,
            reward=self.reward.total,
            reward_terms=dict(self.reward.terms),
            timing_flags=list(e.timing_flags),
            device=dict(e.device),
            feedback=self.feedback,
            seconds=dict(e.seconds),
            features={},
            hints=[],
        )
        if e.structure is not None:
            structure = e.structure.as_dict()
            record.update(features=structure["features"], hints=structure["hints"])
        return record


@dataclass(frozen=True)
class Grader:
    """An evaluator and a reward configuration: what every caller needs to grade replies.

    Attributes:
        evaluator: Runs the pipeline on its backend.
        reward: Preset and weights.
    """

    evaluator: Evaluator
    reward: RewardConfig = RewardConfig()

    @classmethod
    def on(
        cls, backend: str | Backend = "auto", options: EvalOptions | None = None, reward: RewardConfig | None = None
    ) -> Grader:
        """A grader on ``backend`` (``cpu``, ``cuda``, ``auto`` or a backend object).

        Raises:
            ValueError: ``options.mode`` is ``kernelbench`` and the backend asked for cannot run it (``cpu``, or a
                backend object without the ``kernelbench`` capability). ``auto`` on a machine without a GPU is
                accepted: each reply then gets a status saying the mode needs a GPU.
        """
        chosen = make_backend(backend) if isinstance(backend, str) else backend
        if options is not None and options.mode == "kernelbench" and backend != "auto" and \
                chosen.capabilities.kernelbench is None:  # fmt: skip
            raise ValueError(f"mode='kernelbench' runs ModelNew's CUDA extensions on a GPU; the {chosen.name} backend "
                             "cannot: pass backend='cuda' (or 'auto') on a machine with an NVIDIA GPU, or use "
                             "mode='native'")  # fmt: skip
        return cls(Evaluator(chosen, options), reward or RewardConfig())

    @property
    def backend_name(self) -> str:
        """``cpu`` or ``cuda``."""
        return self.evaluator.backend.name

    @property
    def measures_time(self) -> bool:
        """Whether correct replies get a measured speedup."""
        return self.evaluator.measures_time

    def grade(self, task: Task, reply: str, previous: Turn | None = None, seed: int = 0) -> Turn:
        """:func:`grade` with this grader's evaluator and reward."""
        return grade(task, reply, previous, evaluator=self.evaluator, reward=self.reward, seed=seed)

    def grade_many(
        self, task: Task, replies: Sequence[str], previous: Sequence[Turn | None] | None = None, seed: int = 0
    ) -> list[Turn]:
        """:func:`grade_many` with this grader's evaluator and reward."""
        return grade_many(task, replies, previous, evaluator=self.evaluator, reward=self.reward, seed=seed)


def grade(
    task: Task,
    reply: str,
    previous: Turn | None = None,
    *,
    evaluator: Evaluator,
    reward: RewardConfig | None = None,
    seed: int = 0,
) -> Turn:
    """Grade one reply; never raises on a bad reply (it becomes a status).

    Args:
        task: The task the reply answers.
        reply: The agent's raw text (a fenced ```cuda block or bare source).
        previous: The episode's previous turn, or None for a first reply.
        evaluator: Runs the pipeline on its backend (see :class:`~cudaperf_env.evaluate.Evaluator`).
        reward: Preset and weights (default: the ``cudaperf`` composite).
        seed: Seed of this turn's input values.
    """
    evaluation = evaluator.evaluate(task, reply, seed=seed)
    return turn_of(task, evaluation, previous, reward)


def grade_many(
    task: Task,
    replies: Sequence[str],
    previous: Sequence[Turn | None] | None = None,
    *,
    evaluator: Evaluator,
    reward: RewardConfig | None = None,
    seed: int = 0,
) -> list[Turn]:
    """Grade several replies to one task concurrently (a GRPO group), in order.

    ``previous`` holds each reply's previous turn (None entries for first replies).
    """
    before = list(previous) if previous is not None else [None] * len(replies)
    if len(before) != len(replies):
        raise ValueError(f"previous has {len(before)} entries for {len(replies)} replies")
    evaluations = evaluator.evaluate_many(task, replies, seed=seed)
    return [turn_of(task, e, p, reward) for e, p in zip(evaluations, before, strict=True)]


def turn_of(task: Task, evaluation: Evaluation, previous: Turn | None, reward: RewardConfig | None = None) -> Turn:
    """The turn an evaluation makes after ``previous`` (pure: no evaluation runs here)."""
    config = reward or RewardConfig()
    outcome = outcome_of(evaluation, previous.reward.score if previous is not None else math.nan)
    number = previous.number + 1 if previous is not None else 1
    return Turn(task.id, number, evaluation, outcome, compute_reward(outcome, config), feedback(task, evaluation),
                config.preset)  # fmt: skip


def outcome_of(evaluation: Evaluation, previous_score: float = math.nan) -> Outcome:
    """What the reward sees of an evaluation (flagged speedups are not credited)."""
    e = evaluation
    credited = math.nan if e.timing_flags else e.speedup
    return Outcome(
        str(e.status),
        e.compiled,
        e.correct,
        credited,
        structural_score=e.structure.score if e.structure is not None else math.nan,
        ranker_score=e.ranker_score,
        previous_score=previous_score,
        speedup_vs_best=math.nan if e.timing_flags else e.speedup_vs_best,
        speedup_vs_compile=math.nan if e.timing_flags else e.speedup_vs_compile,
    )


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
