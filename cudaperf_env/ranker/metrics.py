"""How well a scorer orders measured pairs: pairwise accuracy (overall, per family) and Spearman against speedup.

A scorer gives, for each pair, the probability that its ``faster`` side is the
faster one; a pair counts as right above 0.5, half at exactly 0.5 (a tie in
score), wrong below. For the Spearman figures a scorer also gives each
non-baseline implementation a score against its task's baseline, correlated with
its measured speedup (baseline time / its time, geometric mean over the perf
configurations): pooled over all held-out implementations, and the mean of the
per-task correlations (tasks with 3+ implementations, baseline included at score 0.5).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from cudaperf_env import comparison
from cudaperf_env.analysis.agreement import spearman
from cudaperf_env.ranker.pairs import Pair
from cudaperf_env.tasks.schema import Task


def correct(p: np.ndarray) -> np.ndarray:
    """1 where ``p > 0.5``, 0.5 where ``p == 0.5`` (or NaN: the scorer could not tell), 0 below."""
    p = np.asarray(p, float)
    return np.where(np.isnan(p) | (p == 0.5), 0.5, (p > 0.5).astype(float))


def accuracy(p: np.ndarray) -> float:
    """Share of pairs ordered right (NaN for no pairs)."""
    return float(correct(p).mean()) if len(p) else math.nan


def paired_difference(p_a: np.ndarray, p_b: np.ndarray, groups: Sequence[str], resamples: int = 2000,
                      seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Scorer a against scorer b on the same pairs: is a's accuracy really higher?

    Each pair's credit (1 right, 0.5 a tie in score, 0 wrong) compared by
    :func:`cudaperf_env.comparison.paired_difference`: ``difference`` (a's accuracy minus b's),
    ``wins`` / ``losses`` with their exact sign test ``p_value``, and ``ci95`` from resampling whole
    ``groups`` (tasks: one task's pairs share implementations, so they are not independent).
    """
    return comparison.paired_difference(correct(p_a), correct(p_b), groups, resamples, seed)


def per_family(pairs: Sequence[Pair], p: np.ndarray, tasks: Mapping[str, Task]) -> dict[str, dict[str, Any]]:
    """``{family: {"accuracy", "pairs"}}`` over the pairs of each family's tasks."""
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(tasks[pair.task].family, []).append(i)
    hits = correct(p)
    return {f: {"accuracy": float(hits[idx].mean()), "pairs": len(idx)} for f, idx in sorted(groups.items())}


def perf_speedups(task: Task) -> dict[str, float]:
    """Measured speedup of every implementation over the baseline (geometric mean over perf configurations)."""
    base = {json_key(label.config): label.median_ms for label in task.implementation(task.baseline).labels
            if label.kind == "perf"}  # fmt: skip
    out = {}
    for impl in task.implementations:
        ratios = [base[json_key(label.config)] / label.median_ms for label in impl.labels
                  if label.kind == "perf" and json_key(label.config) in base and label.median_ms > 0]  # fmt: skip
        if ratios:
            out[impl.name] = float(np.exp(np.mean(np.log(ratios))))
    return out


def json_key(config: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(config.items()))


def speedup_correlation(scores: Mapping[tuple[str, str], float], tasks: Mapping[str, Task]) -> dict[str, float]:
    """``spearman`` (pooled over non-baseline implementations) and ``spearman_mean_per_task``.

    Args:
        scores: ``{(task, implementation): score against the baseline}`` (baselines may be absent).
        tasks: The tasks (their labels give the speedups).
    """
    pooled_s, pooled_v, per_task = [], [], []
    for task_id in sorted({t for t, _ in scores}):
        task = tasks[task_id]
        speed = perf_speedups(task)
        here = [(n, scores.get((task_id, n), 0.5 if n == task.baseline else math.nan), v) for n, v in speed.items()]
        here = [(n, s, v) for n, s, v in here if math.isfinite(s)]
        pooled_s += [s for n, s, _ in here if n != task.baseline]
        pooled_v += [v for n, _, v in here if n != task.baseline]
        if len(here) >= 3:
            rho = spearman([s for _, s, _ in here], [v for _, _, v in here])
            if math.isfinite(rho):
                per_task.append(rho)
    return {"spearman": spearman(pooled_s, pooled_v) if len(pooled_s) >= 3 else math.nan,
            "spearman_mean_per_task": statistics.fmean(per_task) if per_task else math.nan,
            "spearman_tasks": len(per_task)}  # fmt: skip


def summary(pairs: Sequence[Pair], p: np.ndarray, scores: Mapping[tuple[str, str], float],
            tasks: Mapping[str, Task], seen_families: Collection[str] = ()) -> dict[str, Any]:  # fmt: skip
    """The figures ``cudaperf ranker eval`` prints for one scorer.

    ``unseen_families`` holds the accuracy over the pairs of families not in ``seen_families``
    (the families training saw), the figure that says how the scorer does on new kinds of task.
    """
    ratio = np.array([pair.ratio for pair in pairs])
    wide = ratio >= 1.5
    unseen = np.array([tasks[pair.task].family not in seen_families for pair in pairs], dtype=bool)
    return {"pairwise_accuracy": accuracy(p), "pairs": len(pairs),
            "unseen_families": {"pairwise_accuracy": accuracy(p[unseen]) if unseen.any() else math.nan,
                                "pairs": int(unseen.sum()),
                                "families": sorted({tasks[q.task].family for q, u in zip(pairs, unseen, strict=True)
                                                    if u})},
            "pairwise_accuracy_ratio_1_5": accuracy(p[wide]) if wide.any() else math.nan,
            "pairs_ratio_1_5": int(wide.sum()), **speedup_correlation(scores, tasks),
            "per_family": per_family(pairs, p, tasks)}  # fmt: skip
