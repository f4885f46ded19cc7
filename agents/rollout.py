"""Reflective multi-turn rollouts: G trajectories per task, each turn's replies graded concurrently.

A trajectory is a conversation: system prompt, task prompt, reply, feedback,
reply, ... At turn 1 every trajectory of a group shares the prompt, so the
policy samples the G replies in one call (a GRPO group); later turns each
continue their own conversation (one batched call). Each turn's G replies are
graded concurrently, each as soon as it is written where the policy tells of
replies as they end (the short ones while the long ones are still generated).
:func:`rollouts` does the same for several tasks at once (one generation call
per turn over all their trajectories). A trajectory ends when its reply is
correct (as the environment terminates) unless ``RolloutConfig.stop_when_correct``
is off, or after ``turns`` turns.

Rewards are the turn function's (potential-based: a turn earns its score minus
the previous turn's, so a trajectory's rewards sum to its last score); each
turn's return is the discounted sum of the scores from it on
(:func:`cudaperf_env.reward.discounted_returns`, Kevin's credit).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from agents.context import SYSTEM_PROMPT, Exchange, conversation
from agents.policies.base import Generation, Message, OnReply, Policy, Sampling, streams_replies
from agents.records import TurnRecord
from cudaperf_env.evaluate import Evaluation, Evaluator
from cudaperf_env.prompt import task_prompt, turn_prompt
from cudaperf_env.reward import RewardConfig, discounted_returns
from cudaperf_env.tasks.schema import Task
from cudaperf_env.turn import Turn, turn_of


@dataclass(frozen=True)
class RolloutConfig:
    """How to roll out a policy on a task.

    Attributes:
        turns: Most replies per trajectory (the first plus ``turns - 1`` refinements).
        group: Trajectories per task (G of a GRPO group).
        sampling: Sampling of every generation; its seed is the base of each call's seed.
        gamma: Discount of the per-turn returns.
        seed: Seed of the rollout: generation seeds and the graded input values derive from it.
        stop_when_correct: End a trajectory at its first correct reply (the environment's termination).
        system_prompt: The system message of every conversation.
        reward: The reward preset and weights.
        grade_while_generating: Grade each reply as soon as the policy tells of it (policies that
            ``streams_replies``: a batch's short replies are graded while its long ones are still
            written), not after the turn's generation call; the replies and their grades are the same.
    """

    turns: int = 3
    group: int = 1
    sampling: Sampling = field(default_factory=Sampling)
    gamma: float = 0.4
    seed: int = 0
    stop_when_correct: bool = True
    system_prompt: str = SYSTEM_PROMPT
    reward: RewardConfig = field(default_factory=RewardConfig)
    grade_while_generating: bool = True

    def __post_init__(self) -> None:
        if self.turns < 1 or self.group < 1:
            raise ValueError(f"turns and group must be >= 1, got turns={self.turns}, group={self.group}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")


@dataclass
class _Trajectory:
    """One conversation's state during a rollout."""

    history: list[Exchange] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # per turn: prompt, dropped, tokens, timings
    done: bool = False


OnTurn = Callable[[Task, int, list[TurnRecord]], None]
"""Called after each graded turn with the task, the turn number and its (provisional) records."""


def turn_seed(seed: int, turn: int) -> int:
    """The generation seed of a turn: distinct per turn, fixed by the rollout's seed."""
    return seed * 1_000 + turn


def rollout(policy: Policy, task: Task, evaluator: Evaluator, config: RolloutConfig,
            on_turn: OnTurn | None = None) -> list[TurnRecord]:  # fmt: skip
    """Roll ``config.group`` trajectories of ``policy`` on ``task``; one record per graded turn.

    Records come ordered by trajectory, then turn; ``returns`` are final (computed
    once each trajectory ended), the records passed to ``on_turn`` carry the
    score as a provisional return.
    """
    return rollouts(policy, [task], evaluator, config, on_turn)


def rollouts(policy: Policy, tasks: Sequence[Task], evaluator: Evaluator, config: RolloutConfig,
             on_turn: OnTurn | None = None) -> list[TurnRecord]:  # fmt: skip
    """:func:`rollout` on several tasks at once: each turn is one batched generation and one concurrent grading.

    Every active trajectory of every task is generated in the same policy call (at
    turn 1 each task's prompt sampled ``group`` times), and the turn's replies are
    graded concurrently over the machine's cores, each as soon as the policy has
    finished it where the policy says so (``grade_while_generating``), the others
    once the call returns; the turn ends with its last verdict. What grading needs whatever the
    replies say (expected outputs, timing inputs) is made while turn 1 generates
    (:meth:`Evaluator.prepare`). The records are those :func:`rollout` gives for each
    task, in task order.
    """
    evaluator.prepare([(task, config.seed) for task in tasks])  # made while the first replies are written
    trajs = {task.id: [_Trajectory() for _ in range(config.group)] for task in tasks}
    prompts = {task.id: task_prompt(task) for task in tasks}
    budget = policy.context_window - config.sampling.max_tokens
    for number in range(1, config.turns + 1):
        active = [(task, t) for task in tasks for t in trajs[task.id] if not t.done]
        if not active:
            break
        sampling = config.sampling.with_seed(turn_seed(config.seed, number))
        convs = [conversation(config.system_prompt, prompts[task.id], t.history, budget, policy.count_tokens)
                 for task, t in active]  # fmt: skip
        grading = _Grading(evaluator, [task for task, _ in active], config.seed)
        stream = config.grade_while_generating and streams_replies(policy) and grading.submits
        try:
            gens, gen_s = _generate(policy, [c[0] for c in convs], sampling, config.group if number == 1 else 1,
                                    grading.submit if stream else None)  # fmt: skip
            evaluations, grade_s = grading.finish([g.text for g in gens])
        except BaseException:
            grading.cancel()  # the policy or the evaluator failed: nobody will read the queued verdicts
            raise
        graded = [turn_of(task, e, traj.turns[-1] if traj.turns else None, config.reward)
                  for (task, traj), e in zip(active, evaluations, strict=True)]  # fmt: skip
        for (task, traj), (messages, dropped), gen, turn in zip(active, convs, gens, graded, strict=True):
            traj.turns.append(turn)
            traj.pending.append(dict(prompt=messages, dropped=dropped, gen=gen, gen_s=gen_s, grade_s=grade_s))
            traj.history.append(Exchange(gen.text, turn_prompt(task, turn.feedback, number, config.turns), turn.status))
            traj.done = (turn.correct and config.stop_when_correct) or number == config.turns
        if on_turn is not None:
            for task in tasks:
                records = [_record(task, i, t, len(t.turns) - 1, policy.name, config, None)
                           for i, t in enumerate(trajs[task.id]) if len(t.turns) == number]  # fmt: skip
                if records:
                    on_turn(task, number, records)
    return [r for task in tasks for i, t in enumerate(trajs[task.id])
            for r in _records(task, i, t, policy.name, config)]  # fmt: skip


class _Grading:
    """One turn's replies graded as they come: each submitted to the evaluator once its text is final.

    Where the evaluator has no ``submit`` (a user's own), the replies are graded together at the end
    (``evaluate_batch``). A reply told of early whose final text differs is graded again.
    """

    def __init__(self, evaluator: Evaluator, tasks: Sequence[Task], seed: int) -> None:
        self.evaluator, self.tasks, self.seed = evaluator, tasks, seed
        self.submits = callable(getattr(evaluator, "submit", None))
        self.submitted: dict[int, tuple[str, Future[Evaluation]]] = {}
        self.started = math.inf  # the first submission
        self._lock = threading.Lock()  # a policy may tell of replies from several threads

    def submit(self, index: int, text: str) -> None:
        """Grade reply ``index`` in the background (an :data:`~agents.policies.base.OnReply`); a reply told of
        again with other text is graded again (its earlier grading dropped where it has not started)."""
        with self._lock:
            early = self.submitted.get(index)
        if early is not None and early[0] == text:
            return
        future = self.evaluator.submit(self.tasks[index], text, self.seed)
        with self._lock:
            self.started = min(self.started, time.perf_counter())
            self.submitted[index] = (text, future)
        if early is not None:
            early[1].cancel()

    def finish(self, texts: Sequence[str]) -> tuple[list[Evaluation], float]:
        """Every reply's evaluation, in order, and the wall time from the first submission to the last verdict."""
        if not self.submits:
            start = time.perf_counter()
            jobs = [(task, text, self.seed) for task, text in zip(self.tasks, texts, strict=True)]
            evaluations = self.evaluator.evaluate_batch(jobs)
            return evaluations, time.perf_counter() - start
        for i, text in enumerate(texts):
            self.submit(i, text)  # replies not told of yet, and those whose final text differs
        evaluations = [self.submitted[i][1].result() for i in range(len(texts))]
        return evaluations, time.perf_counter() - self.started if texts else 0.0

    def cancel(self) -> None:
        """Drop every grading not started yet."""
        with self._lock:
            for _, future in self.submitted.values():
                future.cancel()


def _generate(policy: Policy, messages: list[list[Message]], sampling: Sampling, per_prompt: int,
              on_reply: OnReply | None = None) -> tuple[list[Generation], float]:  # fmt: skip
    """One generation per conversation; ``per_prompt`` > 1: runs of that many equal conversations sampled at once.

    ``on_reply`` (a policy that ``streams_replies``) is told of each reply by its index in ``messages``.
    """
    start = time.perf_counter()
    firsts = messages[::per_prompt]
    if on_reply is None:
        rows = policy.generate(firsts, per_prompt, sampling)
    else:
        rows = policy.generate(firsts, per_prompt, sampling, on_reply=on_reply)  # type: ignore[call-arg]
    return [g for row in rows for g in row], time.perf_counter() - start


def _records(task: Task, index: int, traj: _Trajectory, model: str, config: RolloutConfig) -> list[TurnRecord]:
    returns = discounted_returns([t.reward.score for t in traj.turns], config.gamma)
    return [_record(task, index, traj, k, model, config, returns[k]) for k in range(len(traj.turns))]


def _record(task: Task, index: int, traj: _Trajectory, k: int, model: str, config: RolloutConfig,
            ret: float | None) -> TurnRecord:  # fmt: skip
    turn, extra = traj.turns[k], traj.pending[k]
    gen: Generation = extra["gen"]
    info = turn.as_json()
    speedup = info.get("speedup")
    return TurnRecord(
        task_id=task.id, family=task.family, trajectory=index, turn=turn.number, reply=gen.text,
        status=turn.status, correct=turn.correct, compiled=bool(info.get("compiled")), speedup=speedup,
        reward=turn.reward.total, score=turn.reward.score, returns=turn.reward.score if ret is None else ret,
        reward_terms=dict(turn.reward.terms), model=model, seed=config.seed, prompt=extra["prompt"],
        feedback=turn.feedback, dropped_turns=extra["dropped"], prompt_tokens=gen.prompt_tokens,
        completion_tokens=gen.completion_tokens, finish_reason=gen.finish_reason, generate_seconds=extra["gen_s"],
        grade_seconds=extra["grade_s"],
        info={**{k: v for k, v in info.items() if not isinstance(v, dict | list) and k != "feedback"},
              **{f"seconds/{stage}": s for stage, s in info["seconds"].items()}},  # where grading time went
    )  # fmt: skip
