"""TRL's ``GRPOTrainer``: a reward function, a multi-turn tool environment, and the prompt dataset.

Single-turn (the reward function grades each completion; the ``task_id`` column
names its task)::

    from cudaperf_env.integrations.trl import build_dataset, reward_function
    trainer = GRPOTrainer(model, reward_funcs=reward_function, train_dataset=build_dataset("train"))

Multi-turn (the model calls ``submit_kernel`` and reads the feedback; the episode's
reward is read from the environment after the rollout)::

    from cudaperf_env.integrations.trl import CudaPerfToolEnv
    trainer = GRPOTrainer(model, train_dataset=build_dataset("train", tools=True),
                          environment_factory=CudaPerfToolEnv)

The trainer process may have no GPU (TRL's async trainer): pass a Ray
:class:`~cudaperf_env.integrations.ray.EvaluatorPool` with :func:`configure`
(or :func:`make_reward_function`) and evaluation runs on the pool's GPUs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cudaperf_env.integrations.grading import BatchGrader, GroupEvaluator, resolve_task
from cudaperf_env.prompt import task_prompt
from cudaperf_env.tasks.schema import Task
from cudaperf_env.turn import Grader, RewardConfig, Turn, turn_of

__all__ = ["CudaPerfToolEnv", "build_dataset", "configure", "make_reward_function", "reward_function"]

_DEFAULT = BatchGrader()
RewardFunction = Callable[..., list[float | None]]


def configure(backend: str = "auto", pool: GroupEvaluator | None = None, reward: RewardConfig | None = None,
              grader: Grader | None = None) -> None:  # fmt: skip
    """Set where :func:`reward_function` and :class:`CudaPerfToolEnv` evaluate (default: ``auto``, in-process)."""
    global _DEFAULT
    _DEFAULT = BatchGrader(grader=grader, backend=backend, pool=pool, reward=reward)


def make_reward_function(backend: str = "auto", pool: GroupEvaluator | None = None,
                         reward: RewardConfig | None = None, grader: Grader | None = None,
                         name: str = "cudaperf") -> RewardFunction:  # fmt: skip
    """A reward function with its own evaluator (or pool) and reward configuration.

    TRL logs each reward function under its ``__name__``: ``name`` sets it.
    """
    batch = BatchGrader(grader=grader, backend=backend, pool=pool, reward=reward)

    def reward_fn(prompts: Sequence[Any], completions: Sequence[Any], task_id: Sequence[str | None] | None = None,
                  **kwargs: Any) -> list[float | None]:  # fmt: skip
        return _rewards(batch, completions, task_id, kwargs.get("trainer_state"))

    reward_fn.__name__ = reward_fn.__qualname__ = name
    return reward_fn


def reward_function(prompts: Sequence[Any], completions: Sequence[Any], task_id: Sequence[str | None] | None = None,
                    **kwargs: Any) -> list[float | None]:  # fmt: skip
    """TRL's reward signature: one reward per completion (None where the row has no task id).

    Args:
        prompts: The prompts (unused: the task id says what was asked).
        completions: Strings, or lists of chat messages (conversational datasets).
        task_id: The dataset column naming each row's task.
        **kwargs: Other dataset columns and ``trainer_state``; the global step seeds the inputs,
            so every step checks on fresh values.

    Raises:
        ValueError: the dataset has no ``task_id`` column.
    """
    return _rewards(_DEFAULT, completions, task_id, kwargs.get("trainer_state"))


def _rewards(batch: BatchGrader, completions: Sequence[Any], task_id: Sequence[str | None] | None,
             trainer_state: Any) -> list[float | None]:  # fmt: skip
    if task_id is None:
        raise ValueError("the dataset needs a 'task_id' column (build_dataset adds it)")
    seed = int(getattr(trainer_state, "global_step", 0) or 0)
    turns = batch.grade(list(task_id), list(completions), seed=seed)
    return [None if t is None else float(t.reward.total) for t in turns]


def build_dataset(split: str = "train", task_ids: Sequence[str] | None = None, limit: int | None = None,
                  conversational: bool = True, tools: bool = False) -> Any:  # fmt: skip
    """The prompt dataset TRL expects: columns ``prompt`` and ``task_id`` (a ``datasets.Dataset``).

    Args:
        split: ``train``, ``validation`` or ``test`` of the generated dataset, or ``starter``
            for the hand-written tasks.
        task_ids: Only these tasks (in this order) instead of the whole split.
        limit: At most this many rows (the first ones in id order).
        conversational: Prompts as a one-message chat (``[{"role": "user", ...}]``) or plain text.
        tools: For :class:`CudaPerfToolEnv`: the prompt asks for the ``submit_kernel`` tool
            instead of a fenced answer.
    """
    import datasets

    tasks = _split_tasks(split, task_ids)
    if limit is not None:
        tasks = tasks[:limit]
    rows: dict[str, list[Any]] = {"prompt": [], "task_id": []}
    for task in tasks:
        text = task_prompt(task) + (TOOL_NOTE if tools else "")
        rows["prompt"].append([{"role": "user", "content": text}] if conversational else text)
        rows["task_id"].append(task.id)
    return datasets.Dataset.from_dict(rows)


TOOL_NOTE = ("\n\nSubmit each version of your kernel by calling the submit_kernel tool with the complete source; "
             "it returns the compiler and test feedback. You may submit again to fix or speed it up.")  # fmt: skip


def _split_tasks(split: str, task_ids: Sequence[str] | None) -> list[Task]:
    if task_ids is not None:
        return [resolve_task(t) for t in task_ids]
    if split == "starter":
        from cudaperf_env.tasks import load_tasks

        starter = load_tasks()
        return [starter[t] for t in sorted(starter)]
    from cudaperf_env.dataset import load_dataset

    chosen = load_dataset(split=split, labels=False)
    return [chosen[t] for t in sorted(chosen)]


class CudaPerfToolEnv:
    """A multi-turn kernel task for ``GRPOTrainer(environment_factory=CudaPerfToolEnv)``.

    TRL builds one instance per rollout with no arguments, calls ``reset(**row)``
    with the dataset row, exposes :meth:`submit_kernel` as a tool, and reads
    :meth:`get_reward` when the rollout ends. The reward is potential-based over
    submissions (``cudaperf_env.turn``): the episode earns its last submission's
    score, or the format penalty when it never submitted.

    Class attributes (set on a subclass to change them): ``max_submissions``.
    Evaluation goes where :func:`configure` says.
    """

    max_submissions = 4

    def __init__(self) -> None:
        self.task: Task | None = None
        self.turns: list[Turn] = []

    def reset(self, **row: Any) -> str:
        """Start an episode on the row's ``task_id``; returns a note appended to the prompt."""
        task_id = row.get("task_id")
        if not task_id:
            raise ValueError("the dataset row has no 'task_id' (build_dataset(..., tools=True) adds it)")
        self.task = resolve_task(str(task_id))
        self.turns = []
        return f"You have {self.max_submissions} submissions."

    def submit_kernel(self, source: str) -> str:
        """Compile, run and check a CUDA kernel for the current task.

        Args:
            source: The complete CUDA C++ source (kernel and launcher, as the task asks).

        Returns:
            Feedback: compiler errors, the first failing configuration and why, resources, speedup.
        """
        if self.task is None:
            return "No task: the episode has not been reset."
        if len(self.turns) >= self.max_submissions:
            return f"No submissions left (all {self.max_submissions} used); your last result stands."
        previous = self.turns[-1] if self.turns else None
        code = source if isinstance(source, str) else ""
        reply = code if "```" in code else f"```cuda\n{code}\n```"  # a fenced answer is taken as it is
        batch = _DEFAULT
        evaluation = batch.evaluator().evaluate_many(self.task, [reply], seed=len(self.turns))[0]
        turn = turn_of(self.task, evaluation, previous, batch.reward)
        self.turns.append(turn)
        left = self.max_submissions - len(self.turns)
        return f"{turn.feedback}\n(reward so far {self.get_reward():+.3f}; {left} submissions left)"

    def get_reward(self) -> float:
        """The episode's return: the sum of its submissions' rewards (the last one's score)."""
        if not self.turns:
            return float(_DEFAULT.reward.format_penalty)
        return float(sum(t.reward.total for t in self.turns))
