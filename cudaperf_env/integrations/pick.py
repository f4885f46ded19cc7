"""``CudaPerf-C2CUDA-Pick-v0``: choose the fastest of a task's candidate implementations (discrete actions).

For classic RL libraries (Stable-Baselines3, RLlib), which need array
observations and discrete actions. An episode is one task of the dataset and
one decision: the observation holds structural features of up to
``max_candidates`` implementations of the task (shuffled each episode, so a
policy must read the features, not learn a position); the action picks one.
The reward comes from the GPU timing labels shipped with the dataset
(``cudaperf_env/dataset/gpu_labels.py``), so it runs anywhere, no GPU needed:
``log2(baseline time / chosen time)``, the geometric mean over the task's perf
configurations. Choosing an empty slot earns ``invalid_penalty``;
:meth:`CudaPerfPickEnv.action_masks` gives the valid slots (``MaskablePPO``).

Observation (``Box``, float32, ``[-OBS_BOUND, OBS_BOUND]``): the problem size
(:data:`CONTEXT`), then per slot a presence flag and each feature of
:data:`FEATURES` minus its mean over the task's candidates, every value passed
through ``sign(x) * log1p(|x|)``. Features: the source analysis and structural
score components (``cudaperf_env.ranker.features.STATIC``) and the launch and
work-per-thread features at the first perf configuration (``PARALLELISM``).

``info`` after the step: ``speedup`` (chosen over baseline), ``best_speedup``,
``picked_fastest``, ``regret`` (log2 of the fastest time over the chosen one's),
``invalid``, ``task_id``, ``choice`` (the implementation's name).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.tasks.schema import Implementation, Task

__all__ = ["CONTEXT", "FEATURES", "CudaPerfPickEnv", "Candidate", "candidates_of"]

CONTEXT = ("log2_min_bytes", "log2_outputs")
OBS_BOUND = 32.0


def _feature_names() -> tuple[str, ...]:
    from cudaperf_env.ranker.features import PARALLELISM, STATIC

    return (*(f"static/{n}" for n in STATIC), *(f"parallelism/{n}" for n in PARALLELISM if n not in CONTEXT))


FEATURES: tuple[str, ...] = _feature_names()


@dataclass(frozen=True)
class Candidate:
    """One implementation of a task with its features and its labelled time.

    Attributes:
        name: The implementation's name in the dataset.
        features: Raw values in the order of :data:`FEATURES` (NaN: missing).
        time_ms: Geometric mean over perf configurations of the labelled median time.
    """

    name: str
    features: np.ndarray
    time_ms: float


def labelled_time(impl: Implementation, card: str | None = None) -> float:
    """Geometric mean of an implementation's perf-label medians (on ``card``, or the first card labelled)."""
    perf = [label for label in impl.labels if label.kind == "perf" and label.median_ms > 0]
    if card is None and perf:
        card = perf[0].card
    times = [label.median_ms for label in perf if label.card == card]
    return float(np.exp(np.mean(np.log(times)))) if times else math.nan


def candidates_of(task: Task, card: str | None = None) -> tuple[list[Candidate], np.ndarray]:
    """Every implementation with a labelled time, with features, and the task's :data:`CONTEXT` values."""
    from cudaperf_env.analysis import analyze
    from cudaperf_env.analysis.parallelism import config_features
    from cudaperf_env.ranker.features import structure_values

    config = task.perf_configs[0] if task.perf_configs else task.configs[0]
    out = []
    context = np.full(len(CONTEXT), math.nan)
    for impl in task.implementations:
        time_ms = labelled_time(impl, card)
        if not math.isfinite(time_ms):
            continue
        static, _ = structure_values(analyze(impl.source, None))
        parallel = config_features(task, impl.source, config)
        tables = {"static": static, "parallelism": parallel}
        values = [tables[source].get(name, math.nan) for source, _, name in (f.partition("/") for f in FEATURES)]
        out.append(Candidate(impl.name, np.array(values, dtype=float), time_ms))
        context = np.array([float(parallel.get(n, math.nan)) for n in CONTEXT])
    return out, context


def _squash(x: np.ndarray) -> np.ndarray:
    x = np.nan_to_num(x.astype(float), nan=0.0, posinf=0.0, neginf=0.0)
    return np.clip(np.sign(x) * np.log1p(np.abs(x)), -OBS_BOUND, OBS_BOUND)


class CudaPerfPickEnv(gym.Env[np.ndarray, np.int64]):
    """Pick the fastest candidate implementation of a task; reward from the shipped GPU labels.

    Args:
        split: Dataset split to draw tasks from (``train``, ``validation``, ``test``).
        task_ids: Only these tasks.
        limit: At most this many tasks (the first in id order), to keep start-up short:
            features take about 15 ms per implementation, computed on first use of a task.
        max_candidates: Slots in the observation; tasks with more labelled implementations
            keep a random subset each episode.
        card: Use labels measured on this GPU (default: the first card each task has).
        invalid_penalty: Reward for choosing an empty slot.
        render_mode: ``None`` or ``"ansi"``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, split: str = "train", task_ids: Sequence[str] | None = None, limit: int | None = None,
                 max_candidates: int = 4, card: str | None = None, invalid_penalty: float = -1.0,
                 render_mode: str | None = None) -> None:  # fmt: skip
        from cudaperf_env.dataset import load_dataset

        if max_candidates < 2:
            raise ValueError(f"max_candidates must be >= 2, got {max_candidates}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        tasks = load_dataset(split=split if task_ids is None else None, labels=True)
        if task_ids is not None:
            missing = [t for t in task_ids if t not in tasks]
            if missing:
                raise TaskNotFoundError(f"unknown task ids {missing}; they must be dataset ids (c2cuda/...)")
            tasks = {t: tasks[t] for t in task_ids}
        order = [t for t in sorted(tasks) if _labelled_count(tasks[t], card) >= 2]
        if limit is not None:
            order = order[:limit]
        if not order:
            raise TaskNotFoundError("no task with at least two GPU-labelled implementations in the selection")
        self.tasks: Mapping[str, Task] = {t: tasks[t] for t in order}
        self._order = order
        self.card = card
        self.max_candidates = max_candidates
        self.invalid_penalty = invalid_penalty
        self.render_mode = render_mode
        width = len(CONTEXT) + max_candidates * (1 + len(FEATURES))
        self.observation_space = spaces.Box(-OBS_BOUND, OBS_BOUND, shape=(width,), dtype=np.float32)
        self.action_space = spaces.Discrete(max_candidates)
        self._cache: dict[str, tuple[list[Candidate], np.ndarray]] = {}
        self.task: Task | None = None
        self.slots: list[Candidate] = []
        self._pinned: str | None = None
        self._last = ""

    def candidates(self, task_id: str) -> tuple[list[Candidate], np.ndarray]:
        """The task's candidates and context (computed once per task)."""
        if task_id not in self._cache:
            self._cache[task_id] = candidates_of(self.tasks[task_id], self.card)
        return self._cache[task_id]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Draw a task (or the ``task_id`` option, pinned for later resets) and shuffle its candidates."""
        super().reset(seed=seed)
        if options and "task_id" in options:
            task_id = options["task_id"]
            if task_id is not None and task_id not in self.tasks:
                raise TaskNotFoundError(f"unknown task_id {task_id!r} for this environment's selection")
            self._pinned = task_id
        chosen = self._pinned or self._order[int(self.np_random.integers(len(self._order)))]
        self.task = self.tasks[chosen]
        candidates, context = self.candidates(chosen)
        picked = self.np_random.permutation(len(candidates))[: self.max_candidates]
        self.slots = [candidates[int(i)] for i in picked]
        observation = self._observation(context)
        self._last = f"{chosen}: " + ", ".join(f"[{i}] {c.name}" for i, c in enumerate(self.slots))
        return observation, {"task_id": chosen, "candidates": len(self.slots), "action_mask": self.action_masks()}

    def _observation(self, context: np.ndarray) -> np.ndarray:
        features = np.nan_to_num(np.stack([c.features for c in self.slots]), nan=0.0, posinf=0.0, neginf=0.0)
        centred = features - features.mean(axis=0, keepdims=True)
        rows = np.zeros((self.max_candidates, 1 + len(FEATURES)))
        rows[: len(self.slots), 0] = 1.0
        rows[: len(self.slots), 1:] = _squash(centred)
        return np.concatenate([_squash(context), rows.ravel()]).astype(np.float32)

    def action_masks(self) -> np.ndarray:
        """Which slots hold a candidate (``sb3_contrib.MaskablePPO`` reads this)."""
        mask = np.zeros(self.max_candidates, dtype=bool)
        mask[: len(self.slots)] = True
        return mask

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Choose a slot; the episode ends. Never raises on an out-of-range action (it is invalid)."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        try:
            slot = int(np.asarray(action).reshape(-1)[0])
        except (TypeError, ValueError, IndexError):
            slot = -1
        baseline = next((c for c in self.candidates(self.task.id)[0] if c.name == self.task.baseline), None)
        reference_ms = baseline.time_ms if baseline is not None else max(c.time_ms for c in self.slots)
        fastest_ms = min(c.time_ms for c in self.slots)
        info: dict[str, Any] = {"task_id": self.task.id, "best_speedup": reference_ms / fastest_ms}
        if 0 <= slot < len(self.slots):
            chosen = self.slots[slot]
            reward = math.log2(reference_ms / chosen.time_ms)
            info.update(choice=chosen.name, invalid=False, speedup=reference_ms / chosen.time_ms,
                        picked_fastest=chosen.time_ms <= fastest_ms,
                        regret=math.log2(chosen.time_ms / fastest_ms))  # fmt: skip
        else:
            reward = self.invalid_penalty
            info.update(choice="", invalid=True, speedup=math.nan, picked_fastest=False, regret=math.nan)
        self._last += f" -> {info['choice'] or 'invalid'} (reward {reward:+.3f})"
        observation = np.zeros(self.observation_space.shape or (), dtype=np.float32)
        self.task = None
        return observation, float(reward), True, False, info

    def render(self) -> str | None:
        """The task, its shuffled candidates and the last choice (``render_mode="ansi"``)."""
        return self._last if self.render_mode == "ansi" else None


def _labelled_count(task: Task, card: str | None) -> int:
    return sum(math.isfinite(labelled_time(i, card)) for i in task.implementations)
