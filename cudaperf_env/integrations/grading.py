"""Grading a trainer's batch: completions for several tasks, each task's group judged together.

LLM trainers hand a reward function a flat batch (prompts x generations) whose
dataset columns name each row's task. :class:`BatchGrader` groups the rows by
task, sends each group to ``evaluate_many`` (compiles and correctness runs
overlap; GPU timing stays serialized) on an in-process evaluator or an
:class:`~cudaperf_env.integrations.ray.EvaluatorPool`, and returns one
:class:`~cudaperf_env.turn.Turn` per row, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Protocol

from cudaperf_env.evaluate import Evaluation
from cudaperf_env.tasks.schema import Task
from cudaperf_env.turn import Grader, RewardConfig, Turn, turn_of


class GroupEvaluator(Protocol):
    """Anything that judges several replies to one task: an ``Evaluator`` or an ``EvaluatorPool``."""

    def evaluate_many(self, task: Task, actions: Sequence[str], seed: int = 0) -> list[Evaluation]: ...


@lru_cache(maxsize=8192)
def resolve_task(task_id: str) -> Task:
    """A task by id: a starter task or one of the dataset's (``c2cuda/...``), parsed once per process.

    Raises:
        TaskNotFoundError: no task has that id (``cudaperf tasks list`` shows starter ids).
    """
    from cudaperf_env.dataset import find_task

    return find_task(task_id)


def completion_text(completion: Any) -> str:
    """The text of one completion as trainers pass it.

    Plain strings stay as they are; a conversational completion (a list of
    ``{"role", "content"}`` messages, TRL's format) gives its assistant messages
    joined, so the last fenced block is the final answer. Anything else becomes
    ``""`` (graded as a format error, never an exception).
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        content = completion.get("content")
        return content if isinstance(content, str) else ""
    if isinstance(completion, Sequence):
        parts = [completion_text(m) for m in completion
                 if not isinstance(m, Mapping) or m.get("role", "assistant") == "assistant"]  # fmt: skip
        return "\n".join(p for p in parts if p)
    return ""


class BatchGrader:
    """Grades a flat batch of ``(task id, completion)`` rows, one group per task.

    Args:
        grader: The in-process evaluator and reward (default: ``Grader.on(backend)``).
        backend: Used when ``grader`` is not given (``auto``: the GPU when there is one).
        pool: Where evaluations run instead of in-process (an ``EvaluatorPool``); ``grader``
            still supplies the reward configuration.
        reward: Reward preset and weights when ``grader`` is not given.
    """

    def __init__(self, grader: Grader | None = None, backend: str = "auto", pool: GroupEvaluator | None = None,
                 reward: RewardConfig | None = None) -> None:  # fmt: skip
        self._grader = grader
        self._backend = backend
        self._reward = reward
        self.pool = pool

    @property
    def grader(self) -> Grader:
        """The in-process grader (built on first use, so an import costs nothing)."""
        if self._grader is None:
            self._grader = Grader.on(self._backend, reward=self._reward)
        return self._grader

    @property
    def reward(self) -> RewardConfig:
        """The reward configuration every turn is scored with."""
        if self._grader is not None:
            return self._grader.reward
        return self._reward or RewardConfig()

    def evaluator(self) -> GroupEvaluator:
        """The pool when one is set, else the in-process evaluator."""
        return self.pool if self.pool is not None else self.grader.evaluator

    def grade(self, task_ids: Sequence[str | None], completions: Sequence[Any], seed: int = 0) -> list[Turn | None]:
        """One turn per row (None for rows whose task id is None), in order.

        Groups of different tasks are judged concurrently; each group through
        ``evaluate_many``.

        Raises:
            ValueError: ``task_ids`` and ``completions`` differ in length.
            TaskNotFoundError: a task id names no task.
        """
        if len(task_ids) != len(completions):
            raise ValueError(f"{len(task_ids)} task ids for {len(completions)} completions; pass one task_id per row")
        groups: dict[str, list[int]] = {}
        for i, tid in enumerate(task_ids):
            if tid is not None:
                groups.setdefault(str(tid), []).append(i)
        tasks = {tid: resolve_task(tid) for tid in groups}
        texts = [completion_text(c) for c in completions]
        evaluator = self.evaluator()
        reward = self.reward

        def judge(tid: str) -> list[Turn]:
            evaluations = evaluator.evaluate_many(tasks[tid], [texts[i] for i in groups[tid]], seed=seed)
            return [turn_of(tasks[tid], e, None, reward) for e in evaluations]

        out: list[Turn | None] = [None] * len(completions)
        with ThreadPoolExecutor(max_workers=max(1, min(len(groups), 4))) as threads:
            for tid, turns in zip(groups, threads.map(judge, groups), strict=True):
                for i, turn in zip(groups[tid], turns, strict=True):
                    out[i] = turn
        return out
