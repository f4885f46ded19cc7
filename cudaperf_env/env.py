"""The CudaPerf Gymnasium environment: submit CUDA source, get execution feedback and a reward."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from cudaperf_env.backends import make_backend
from cudaperf_env.backends.base import Backend
from cudaperf_env.dataset import load_dataset
from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.evaluate import EvalOptions, Evaluation, Evaluator
from cudaperf_env.feedback import feedback
from cudaperf_env.prompt import task_prompt, turn_prompt
from cudaperf_env.reward import PRESET_TERMS, Outcome, RewardConfig, compute_reward
from cudaperf_env.tasks import Task, load_tasks
from cudaperf_env.text import charset, sanitize, truncate

MAX_OBSERVATION_CHARS = 32768


def outcome_of(evaluation: Evaluation, previous_score: float = math.nan) -> Outcome:
    """What the reward sees of an evaluation (flagged speedups are not credited)."""
    structure = evaluation.structure.score if evaluation.structure is not None else math.nan
    return Outcome(
        evaluation.status,
        evaluation.compiled,
        evaluation.correct,
        evaluation.credited_speedup,
        structural_score=structure,
        previous_score=previous_score,
    )


class CudaPerfEnv(gym.Env[str, str]):
    """Write a fast, correct CUDA kernel for a task, refining it over several turns.

    ## Description
    Each episode is one task (a C function to port to CUDA). The agent submits
    CUDA C++ source; the environment compiles it with nvcc, runs it on every
    configuration in a sandboxed process, compares with the C reference and (on
    a GPU) times it against the task's baseline implementation.

    ## Action Space
    ``Text``: the agent's reply. The source is taken from its last ```cuda fenced
    block (or the whole text when there is no fence).

    ## Observation Space
    ``Text``: the task prompt after ``reset``; after each ``step``, the feedback
    (compiler errors, which configuration failed and how, resources, speedup)
    plus a reminder of the task. Printable ASCII only.

    ## Rewards
    ``cudaperf_env.reward.compute_reward`` with ``reward.preset`` (default
    ``cudaperf``): a format penalty for replies with no usable code, credit for
    compiling, for correctness, for log2 speedup (GPU only), for the structural
    score (coalescing, occupancy, reuse, synchronization) and for improvement over
    the previous turn. Every term of the preset appears in ``info`` as
    ``reward/<name>`` (0.0 when it did not apply).

    ## Episode End
    Terminated when the submission is correct (and, with ``target_speedup``, at
    least that fast); truncated after ``max_turns`` turns.

    ## Arguments
    - ``task_dir``: directory of task files (default: the bundled tasks).
    - ``kind``: ``c2cuda`` or ``torch2cuda``; ``task_ids``: restrict to these ids.
    - ``split``: ``train``, ``validation`` or ``test`` of the generated dataset
      (``docs/dataset-card.md``) instead of the hand-written starter tasks.
    - ``backend``: ``cpu``, ``cuda`` or ``auto``, or a backend object.
    - ``max_turns``: refinement turns per episode.
    - ``reward``: a :class:`~cudaperf_env.reward.RewardConfig`.
    - ``target_speedup``: speedup that ends the episode when measured.
    - ``max_action_chars``: longest accepted reply.
    - ``render_mode``: ``None`` or ``"ansi"``.

    ## Version History
    - v0: initial version (cpu and cuda backends; compile, correctness and speedup terms).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # fps: one frame per turn (gymnasium asks)

    def __init__(
        self,
        task_dir: str | Path | None = None,
        kind: str = "c2cuda",
        task_ids: list[str] | None = None,
        split: str | None = None,
        backend: str | Backend = "auto",
        max_turns: int = 4,
        reward: RewardConfig | None = None,
        target_speedup: float | None = None,
        max_action_chars: int = 65536,
        eval_options: EvalOptions | None = None,
        render_mode: str | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        tasks = load_dataset(split=split, labels=False) if split is not None else load_tasks(task_dir, kind)
        if task_ids is not None:
            missing = [t for t in task_ids if t not in tasks]
            if missing:
                raise TaskNotFoundError(f"unknown task ids {missing}; `cudaperf tasks list` shows the ids")
            tasks = {t: tasks[t] for t in task_ids}
        if not tasks:
            raise TaskNotFoundError(f"no tasks of kind {kind!r} in {task_dir or 'the bundled set'}")
        self.tasks: dict[str, Task] = tasks
        self._task_order = sorted(tasks)
        self.backend = make_backend(backend) if isinstance(backend, str) else backend
        options = eval_options or EvalOptions(max_code_chars=max_action_chars)
        self.evaluator = Evaluator(self.backend, options)
        self.max_turns = max_turns
        self.reward_config = reward or RewardConfig()
        self.target_speedup = target_speedup
        self.render_mode = render_mode
        self.action_space = spaces.Text(max_length=max_action_chars, charset=charset())
        self.observation_space = spaces.Text(max_length=MAX_OBSERVATION_CHARS, charset=charset())
        self.task: Task | None = None
        self.turn = 0
        self._episode_seed = 0
        self._previous_score = math.nan
        self._last_text = ""
        self.last_evaluation: Evaluation | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on ``options["task_id"]`` or a task drawn from ``np_random``."""
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is None:
            task_id = self._task_order[int(self.np_random.integers(len(self._task_order)))]
        elif task_id not in self.tasks:
            raise TaskNotFoundError(f"unknown task_id {task_id!r}; `cudaperf tasks list` shows the ids")
        self.task = self.tasks[task_id]
        self.turn = 0
        self._episode_seed = int(self.np_random.integers(2**31 - 1))
        self.last_evaluation = None
        self._previous_score = math.nan
        self._last_text = self._observation(task_prompt(self.task))
        return self._last_text, {"task_id": task_id, "turn": 0, "backend": self.backend.name}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Evaluate one submission; never raises on a bad action."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self.turn >= self.max_turns:
            raise gym.error.ResetNeeded(f"the episode ended after {self.max_turns} turns; call reset()")
        self.turn += 1
        evaluation = self.evaluator.evaluate(self.task, action, seed=self._episode_seed + self.turn)
        self.last_evaluation = evaluation
        reward = compute_reward(outcome_of(evaluation, self._previous_score), self.reward_config)
        self._previous_score = reward.score
        fast_enough = self.target_speedup is None or evaluation.speedup >= self.target_speedup
        terminated = evaluation.correct and fast_enough
        truncated = not terminated and self.turn >= self.max_turns
        text = feedback(self.task, evaluation)
        self._last_text = self._observation(turn_prompt(self.task, text, self.turn, self.max_turns))
        info = self._info(evaluation, reward.terms)
        return self._last_text, float(reward.total), terminated, truncated, info

    def render(self) -> str | None:
        """The last observation (``render_mode="ansi"``)."""
        return self._last_text if self.render_mode == "ansi" else None

    def _info(self, e: Evaluation, terms: dict[str, float]) -> dict[str, Any]:
        assert self.task is not None
        info: dict[str, Any] = {
            "task_id": self.task.id,
            "turn": self.turn,
            "status": e.status,
            "compiled": e.compiled,
            "correct": e.correct,
            "speedup": e.speedup,
            "speedup_lcb": e.speedup_lcb,
            "timing_flagged": bool(e.timing_flags),
            "runtime_ms": e.runtime_ms,
            "baseline_ms": e.baseline_ms,
            "speedup_vs_c": e.speedup_vs_c,
            "backend": e.backend,
            "eval_seconds": e.seconds.get("total", math.nan),
            "structural_score": e.structure.score if e.structure is not None else math.nan,
        }
        names = PRESET_TERMS[self.reward_config.preset]
        info.update({f"reward/{name}": terms.get(name, 0.0) for name in names})
        return info

    def _observation(self, text: str) -> str:
        return truncate(sanitize(text), MAX_OBSERVATION_CHARS - 64)
