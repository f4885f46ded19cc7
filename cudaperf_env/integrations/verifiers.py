"""verifiers (v1 API): a multi-turn kernel environment whose rubric has every reward term as a weighted reward.

::

    from cudaperf_env.integrations.verifiers import load_environment
    env = load_environment(split="validation", max_turns=4)      # a verifiers.v1 Env

or from verifiers' own loader and CLI, by taskset id (this module)::

    vf.load_environment(CudaPerfEnvConfig(taskset={"id": "cudaperf-c2cuda", "split": "validation"}))

Each rollout is one task: the model replies with CUDA source, the environment
grades it (:mod:`cudaperf_env.turn`) and answers with the feedback as the next
user turn, up to ``max_turns`` replies or the first correct one where nothing is
timed (the CPU backend). The last graded turn is kept in ``trace.info["cudaperf"]``
and scored by the task's rewards, one per term of the ``cudaperf`` preset, each
returning the term's unweighted value with the preset's weight
(``RewardConfig``), so the weighted sum is the final turn's score.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

from cudaperf_env.integrations.grading import BatchGrader, GroupEvaluator, resolve_task
from cudaperf_env.prompt import task_prompt, turn_prompt
from cudaperf_env.reward import RewardConfig
from cudaperf_env.turn import Grader, Turn

__all__ = ["CudaPerfData", "CudaPerfEnv", "CudaPerfEnvConfig", "CudaPerfTask", "CudaPerfTaskset",
           "CudaPerfTasksetConfig", "configure", "load_environment"]  # fmt: skip

TASKSET_ID = "cudaperf-c2cuda"
"""verifiers finds the taskset by this id in the top-level ``cudaperf_c2cuda`` package."""
_DEFAULT = BatchGrader()
_WEIGHTS = RewardConfig()


def configure(backend: str = "auto", pool: GroupEvaluator | None = None, reward: RewardConfig | None = None,
              grader: Grader | None = None) -> None:  # fmt: skip
    """Set where rollouts are graded (default: ``auto``, in-process; a Ray pool for many GPUs)."""
    global _DEFAULT
    _DEFAULT = BatchGrader(grader=grader, backend=backend, pool=pool, reward=reward)


class CudaPerfTasksetConfig(vf.TasksetConfig):
    """Which tasks: a dataset split (``train``, ``validation``, ``test``) or ``starter``; optional ids and limit."""

    split: str = "starter"
    task_ids: list[str] | None = None
    limit: int | None = None


class CudaPerfData(vf.TaskData):
    """One kernel task: its id (the prompt is the task's full prompt)."""

    task_id: str


def _terms(trace: Any) -> dict[str, float]:
    record = (trace.info or {}).get("cudaperf") or {}
    return dict(record.get("reward_terms") or {})


def _unweighted(trace: Any, name: str, weight: float) -> float:
    value = _terms(trace).get(name, 0.0)
    return float(value) / weight if weight and math.isfinite(value) else 0.0


class CudaPerfTask(vf.Task[CudaPerfData, vf.State, vf.TaskConfig]):
    """A task whose rewards are the terms of the final graded turn (``trace.info["cudaperf"]``)."""

    @vf.reward(weight=_WEIGHTS.format_penalty)
    async def format(self, trace: Any) -> float:
        """1 when the final reply had no usable code or was rejected (weight: the format penalty)."""
        return _unweighted(trace, "format", _WEIGHTS.format_penalty)

    @vf.reward(weight=_WEIGHTS.compile_weight)
    async def compile(self, trace: Any) -> float:
        """1 when the final reply compiled."""
        return _unweighted(trace, "compile", _WEIGHTS.compile_weight)

    @vf.reward(weight=_WEIGHTS.correct_weight)
    async def correct(self, trace: Any) -> float:
        """1 when the final reply was correct on every configuration."""
        return _unweighted(trace, "correct", _WEIGHTS.correct_weight)

    @vf.reward(weight=_WEIGHTS.speedup_weight)
    async def speedup(self, trace: Any) -> float:
        """log2 speedup over the baseline (clipped, deadbanded; 0 where nothing is timed)."""
        return _unweighted(trace, "speedup", _WEIGHTS.speedup_weight)

    @vf.reward(weight=_WEIGHTS.structure_weight)
    async def structure(self, trace: Any) -> float:
        """The structural score of correct code."""
        return _unweighted(trace, "structure", _WEIGHTS.structure_weight)

    @vf.reward(weight=_WEIGHTS.ranker_weight)
    async def ranker(self, trace: Any) -> float:
        """The learned ranker's score of correct code."""
        return _unweighted(trace, "ranker", _WEIGHTS.ranker_weight)

    @vf.metric
    async def turns(self, trace: Any) -> float:
        """Graded replies in the rollout."""
        return float(((trace.info or {}).get("cudaperf") or {}).get("turn") or 0)


class CudaPerfTaskset(vf.Taskset[CudaPerfTask, CudaPerfTasksetConfig]):
    """The kernel tasks of a split, each prompt the task's full prompt."""

    def load(self) -> Iterator[CudaPerfTask]:
        """One task per kernel task of the selection, in id order."""
        from cudaperf_env.integrations.trl import _split_tasks

        tasks = _split_tasks(self.config.split, self.config.task_ids)
        for task in tasks[: self.config.limit]:
            yield CudaPerfTask(CudaPerfData(id=task.id, name=task.id, task_id=task.id, prompt=task_prompt(task)),
                               self.config.task)  # fmt: skip


class CudaPerfEnvConfig(vf.EnvConfig):
    """One ``agent`` seat writing kernels; ``max_turns`` graded replies per rollout."""

    agent: vf.AgentConfig = vf.AgentConfig()
    max_turns: int = 4
    stop_on_correct: bool | None = None
    """End at the first correct reply (None: where nothing is timed, as ``CudaPerfEnv``)."""


class CudaPerfEnv(vf.Env[CudaPerfEnvConfig]):
    """Multi-turn: each reply graded, its feedback the next user turn."""

    async def run(self, task: CudaPerfTask, agents: Any) -> None:
        """Play one task: reply, feedback, reply ... up to ``max_turns`` replies."""
        kernel = resolve_task(task.data.task_id)
        pool = _DEFAULT.pool
        grader = _DEFAULT.grader if pool is None else pool.grader(_DEFAULT.reward)  # type: ignore[attr-defined]
        stop = self.config.stop_on_correct
        stop = not grader.measures_time if stop is None else stop
        last: Turn | None = None
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            for number in range(1, self.config.max_turns + 1):
                if segment.terminated:
                    break
                graded = await asyncio.to_thread(grader.grade, kernel, segment.last_reply, last, number)
                last = graded
                if (stop and graded.correct) or number == self.config.max_turns:
                    break
                segment = await interaction.turn(turn_prompt(kernel, graded.feedback, number, self.config.max_turns))
        trace = interaction.trace
        trace.info["cudaperf"] = _level(last) if last is not None else None


def _level(turn: Turn) -> dict[str, Any]:
    """The final turn as JSON, its terms without the potential-shaping ``previous`` (the episode's level)."""
    record = turn.as_json()
    record["reward_terms"] = {k: v for k, v in turn.reward.terms.items() if k != "previous"}
    return record


def load_environment(split: str = "starter", task_ids: list[str] | None = None, limit: int | None = None,
                     max_turns: int = 4, **env_config: Any) -> CudaPerfEnv:  # fmt: skip
    """The environment through verifiers' own loader (``verifiers.v1.load_environment``).

    Args:
        split: ``starter`` (hand-written tasks) or a dataset split.
        task_ids: Only these tasks.
        limit: At most this many tasks.
        max_turns: Graded replies per rollout.
        **env_config: Other :class:`CudaPerfEnvConfig` fields (``agent``, ``stop_on_correct`` ...).
    """
    taskset = {"id": TASKSET_ID, "split": split, "task_ids": task_ids, "limit": limit}
    config = CudaPerfEnvConfig(taskset=taskset, max_turns=max_turns, **env_config)
    env = vf.load_environment(config)
    assert isinstance(env, CudaPerfEnv)
    return env
