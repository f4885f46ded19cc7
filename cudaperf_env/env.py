"""The CudaPerf Gymnasium environment: submit CUDA source, get execution feedback and a reward."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from cudaperf_env.backends.base import Backend
from cudaperf_env.dataset import data_file, load_dataset
from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.kinds import check_mode
from cudaperf_env.prompt import task_prompt, turn_prompt
from cudaperf_env.tasks import Task, load_tasks
from cudaperf_env.text import charset, sanitize, truncate
from cudaperf_env.turn import EvalOptions, Grader, RewardConfig, Turn

MAX_OBSERVATION_CHARS = 32768
_KEEP = object()  # reset() without a task_id option: keep the pinned task (vector-env autoresets)


class CudaPerfEnv(gym.Env[str, str]):
    """Write a fast, correct CUDA kernel for a task, refining it over several turns.

    ## Description
    Each episode is one task (a C function, or with ``kind="torch2cuda"`` a PyTorch
    ``Model``, to port to CUDA). The agent submits CUDA C++ source; the environment
    compiles it with nvcc, runs it on every configuration in a sandboxed process,
    compares with the reference and (on a GPU) times it against the task's baseline
    implementation; a PyTorch task's speedup is over its reference run eagerly, with
    ``speedup_vs_compile`` over ``torch.compile`` beside it (``docs/torch2cuda.md``).

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
    compiling, for correctness, for log2 speedup (GPU only) and, for correct code,
    for the structural score and the learned ranker's score. Over turns the reward
    is potential-based: a turn earns its score minus the previous turn's (term
    ``previous``), so an episode returns its last turn's score and detours never
    pay. Every term of the preset appears in ``info`` as ``reward/<name>`` (0.0
    when it did not apply); ``info["score"]`` is the level the turn reached.

    ## Episode End
    ``stop_on_correct`` decides: when True the episode terminates at the first
    correct submission (with ``target_speedup`` and a timing backend, at the first
    one at least that fast); when False it runs to ``max_turns`` so a correct
    kernel can be refined for speed (terminated early only on ``target_speedup``).
    Default (None): False where the backend measures time (GPU), True where it
    cannot (CPU: nothing would reward further turns). Truncated after ``max_turns``.

    ## Arguments
    - ``task_dir``: directory of task files (default: the bundled tasks).
    - ``kind``: ``c2cuda`` or ``torch2cuda``; ``task_ids``: restrict to these ids.
    - ``split``: ``train``, ``validation`` or ``test`` of the kind's generated dataset
      (``docs/dataset-card.md``; torch2cuda: ``docs/torch2cuda.md``) instead of the hand-written
      starter tasks (``gym.make("CudaPerf-Torch2CUDA-v0", split="train")``).
    - ``backend``: ``cpu``, ``cuda`` or ``auto``, or a backend object.
    - ``max_turns``: refinement turns per episode.
    - ``reward``: a :class:`~cudaperf_env.reward.RewardConfig`.
    - ``target_speedup``: speedup that ends the episode when measured (ignored where
      nothing is timed: there a correct submission ends it).
    - ``stop_on_correct``: see Episode End (None: decided by the backend).
    - ``mode``: ``native`` (CUDA C++ defining the task's ``extern "C"`` entry) or, for ``torch2cuda``,
      ``kernelbench``: Python defining ``ModelNew`` that compiles its kernels with ``load_inline``,
      run in a confined torch worker on a GPU (``docs/torch2cuda.md``). ``backend="cpu"`` cannot run it
      (a ``ValueError`` here); ``auto`` without a GPU answers each reply with a status saying so.
    - ``max_action_chars``: longest accepted reply.
    - ``render_mode``: ``None`` or ``"ansi"``.

    ``reset(options={"task_id": ID})`` pins the task: later resets without options
    (vector-env autoresets included) keep it; ``options={"task_id": None}`` unpins.

    ## Version History
    - ``CudaPerf-Torch2CUDA-v0`` with ``mode="kernelbench"``: the KernelBench-compatible submission form
      (same tasks, reward and episode rules; GPU only).
    - v1: runs to ``max_turns`` where timing exists (refining a correct kernel for speed);
      potential-based multi-turn reward; structure and ranker credited to correct code only.
    - v0: ends at the first correct submission (``stop_on_correct=True``); same reward as v1
      (the earlier reward paid detours and was withdrawn).
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
        stop_on_correct: bool | None = None,
        max_action_chars: int = 65536,
        eval_options: EvalOptions | None = None,
        render_mode: str | None = None,
        mode: str = "native",
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        check_mode(mode, kind)
        self.mode = mode
        self.tasks: dict[str, Task] = _select(task_dir, kind, task_ids, split)
        self._task_order = sorted(self.tasks)
        options = replace(eval_options or EvalOptions(max_code_chars=max_action_chars), mode=mode)
        self.grader = Grader.on(backend, options, reward)
        self.max_turns = max_turns
        self.target_speedup = target_speedup
        self.stop_on_correct = not self.grader.measures_time if stop_on_correct is None else stop_on_correct
        self.render_mode = render_mode
        self.action_space = spaces.Text(max_length=max_action_chars, charset=charset())
        self.observation_space = spaces.Text(max_length=MAX_OBSERVATION_CHARS, charset=charset())
        self.task: Task | None = None
        self.turn = 0
        self.last_turn: Turn | None = None
        self._pinned: str | None = None
        self._episode_seed = 0
        self._last_text = ""

    @property
    def backend(self) -> Backend:
        """Where submissions run."""
        return self.grader.evaluator.backend

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the pinned ``task_id`` option or a task drawn from ``np_random``."""
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id", _KEEP)
        if task_id is not _KEEP:
            if task_id is not None and task_id not in self.tasks:
                raise TaskNotFoundError(f"unknown task_id {task_id!r}; `cudaperf tasks list` shows the ids")
            self._pinned = task_id
        chosen = self._pinned or self._task_order[int(self.np_random.integers(len(self._task_order)))]
        self.task = self.tasks[chosen]
        self.turn = 0
        self.last_turn = None
        self._episode_seed = int(self.np_random.integers(2**31 - 1))
        if self.grader.measures_time:  # a timing's inputs take seconds to make: made while the agent writes
            self.grader.evaluator.prepare([(self.task, self._episode_seed + 1)])
        self._last_text = self._observation(task_prompt(self.task, self.mode))
        return self._last_text, {"task_id": chosen, "turn": 0, "backend": self.grader.backend_name}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Grade one submission (``cudaperf_env.turn.grade``); never raises on a bad action."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self.turn >= self.max_turns:
            raise gym.error.ResetNeeded(f"the episode ended after {self.max_turns} turns; call reset()")
        self.turn += 1
        turn = self.grader.grade(self.task, action, self.last_turn, seed=self._episode_seed + self.turn)
        self.last_turn = turn
        terminated = self._ends(turn)
        truncated = not terminated and self.turn >= self.max_turns
        self._last_text = self._observation(turn_prompt(self.task, turn.feedback, self.turn, self.max_turns,
                                                        self.mode))  # fmt: skip
        return self._last_text, float(turn.reward.total), terminated, truncated, turn.info()

    def _ends(self, turn: Turn) -> bool:
        if not turn.correct:
            return False
        timed = self.grader.measures_time
        fast_enough = self.target_speedup is not None and timed and turn.evaluation.speedup >= self.target_speedup
        if self.stop_on_correct:
            return fast_enough or self.target_speedup is None or not timed
        return fast_enough

    def render(self) -> str | None:
        """The last observation (``render_mode="ansi"``)."""
        return self._last_text if self.render_mode == "ansi" else None

    def _observation(self, text: str) -> str:
        return truncate(sanitize(text), MAX_OBSERVATION_CHARS - 64)


def _select(task_dir: str | Path | None, kind: str, task_ids: list[str] | None, split: str | None) -> dict[str, Task]:
    if split is not None and task_dir is not None:
        raise ValueError("pass either split (the shipped dataset of the kind) or task_dir (your task files), not both")
    if split is not None:
        tasks = load_dataset(split=split, path=data_file(kind), labels=True)
    else:
        tasks = load_tasks(task_dir, kind)
    if task_ids is not None:
        missing = [t for t in task_ids if t not in tasks]
        if missing:
            raise TaskNotFoundError(f"unknown task ids {missing}; `cudaperf tasks list` shows the ids")
        tasks = {t: tasks[t] for t in task_ids}
    if not tasks:
        raise TaskNotFoundError(f"no tasks of kind {kind!r} in {task_dir or 'the bundled set'}")
    return tasks
