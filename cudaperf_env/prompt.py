"""The text an agent reads: the first turn's prompt and each later turn's observation."""

from __future__ import annotations

from cudaperf_env.kinds import kind_of
from cudaperf_env.tasks.schema import Task


def task_prompt(task: Task, mode: str = "native") -> str:
    """The full prompt for ``task``: problem, ABI, reference, sizes, answer format (worded by its kind and mode)."""
    return kind_of(task, mode).prompt(task)


def turn_prompt(task: Task, feedback_text: str, turn: int, max_turns: int, mode: str = "native") -> str:
    """The observation after a turn: feedback plus a short reminder of the task."""
    return f"Turn {turn}/{max_turns} feedback:\n{feedback_text}\n\n{kind_of(task, mode).reminder(task)}"
