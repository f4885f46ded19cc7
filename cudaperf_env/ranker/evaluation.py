"""The ranker against the structural score and a coin, on the same measured pairs of held-out tasks.

Three scorers, one set of pairs:

- ``ranker``: the model's P(faster side faster) from both records at the pair's configuration;
  per implementation, its mean P(faster than the baseline) over the perf configurations;
- ``structural``: the hand-weighted structural score (configuration-blind): the
  higher-scored side is predicted faster, equal scores are a tie;
- ``random``: a seeded random score per implementation, used the same way.

``vs_structural`` says whether the ranker's lead (or deficit) over the structural score on
those pairs is more than chance (:func:`~cudaperf_env.ranker.metrics.paired_difference`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from cudaperf_env.ranker.features import context, vector
from cudaperf_env.ranker.metrics import accuracy, paired_difference, summary
from cudaperf_env.ranker.model import PairwiseModel
from cudaperf_env.ranker.pairs import Pair, config_key
from cudaperf_env.ranker.train import Records, fit, pair_rows, task_weights
from cudaperf_env.tasks.schema import Task


def model_pair_probabilities(model: PairwiseModel, pairs: Sequence[Pair], records: Records) -> np.ndarray:
    """P(the faster side is faster) per pair (NaN where a record is missing)."""
    faster, slower, ctx, kept = pair_rows(pairs, records, model.features)
    out = np.full(len(pairs), math.nan)
    if kept:
        out[kept] = model.probability(faster, slower, ctx)
    return out


def model_baseline_scores(model: PairwiseModel, tasks: Mapping[str, Task], records: Records,
                          kind: str = "perf") -> dict[tuple[str, str], float]:  # fmt: skip
    """Per non-baseline implementation: mean P(faster than the baseline) over the task's ``kind`` configurations.

    All rows go through the model in one batch (the trees are evaluated level by level over every row).
    """
    owners: list[tuple[str, str]] = []
    a, b, ctx = [], [], []
    for task in tasks.values():
        base = records.get((task.id, task.baseline))
        configs = task.perf_configs if kind == "perf" else task.configs
        if base is None:
            continue
        for impl in task.implementations:
            mine = records.get((task.id, impl.name))
            if impl.name == task.baseline or mine is None:
                continue
            for key in (config_key(c) for c in configs):
                owners.append((task.id, impl.name))
                a.append(vector(mine, key, model.features))
                b.append(vector(base, key, model.features))
                ctx.append(context(mine, key, kind))
    if not owners:
        return {}
    p = model.probability(np.array(a), np.array(b), np.array(ctx))
    sums: dict[tuple[str, str], list[float]] = {}
    for owner, value in zip(owners, p, strict=True):
        sums.setdefault(owner, []).append(float(value))
    return {owner: float(np.mean(values)) for owner, values in sums.items()}


def static_pair_probabilities(scores: Mapping[tuple[str, str], float], pairs: Sequence[Pair]) -> np.ndarray:
    """1 / 0.5 / 0 where the faster side's score is above / equal to / below the slower side's (NaN: unscored)."""
    out = []
    for pair in pairs:
        a, b = scores.get((pair.task, pair.faster), math.nan), scores.get((pair.task, pair.slower), math.nan)
        out.append(math.nan if math.isnan(a) or math.isnan(b) else 1.0 if a > b else 0.5 if a == b else 0.0)
    return np.array(out, float)


def structural_scores(records: Records) -> dict[tuple[str, str], float]:
    """The structural score of every record."""
    return {key: float(r["static"].get("structural_score", math.nan)) for key, r in records.items()}


def random_scores(records: Records, seed: int = 0) -> dict[tuple[str, str], float]:
    """A seeded uniform random score per record (in sorted key order, so it does not depend on file order)."""
    rng = random.Random(seed)
    return {key: rng.random() for key in sorted(records)}


def compare(model: PairwiseModel, pairs: Sequence[Pair], records: Records, tasks: Mapping[str, Task],
            seed: int = 0, seen_families: Collection[str] = ()) -> dict[str, Any]:  # fmt: skip
    """The ranker's figures with ``structural`` and ``random`` objects of the same keys, on the same pairs.

    ``seen_families``: the families of the training split (see :func:`~cudaperf_env.ranker.metrics.summary`).
    """
    records = {key: r for key, r in records.items() if key[0] in tasks}
    ranked = model_pair_probabilities(model, pairs, records)
    result = summary(pairs, ranked, model_baseline_scores(model, tasks, records), tasks, seen_families)
    for name, scores in (("structural", structural_scores(records)), ("random", random_scores(records, seed))):
        own = {k: v for k, v in scores.items() if k[1] != tasks[k[0]].baseline}
        static = static_pair_probabilities(scores, pairs)
        result[name] = summary(pairs, static, _against_baseline(own, scores, tasks), tasks, seen_families)
        if name == "structural":
            result["vs_structural"] = paired_difference(ranked, static, [pair.task for pair in pairs], seed=seed)
    return result


def _against_baseline(own: Mapping[tuple[str, str], float], scores: Mapping[tuple[str, str], float],
                      tasks: Mapping[str, Task]) -> dict[tuple[str, str], float]:  # fmt: skip
    """A one-implementation score as a score against the baseline: its difference from the baseline's."""
    out = {}
    for (task_id, name), value in own.items():
        base = scores.get((task_id, tasks[task_id].baseline), math.nan)
        out[(task_id, name)] = 0.5 + 0.5 * (value - base) if math.isfinite(base) else math.nan
    return out


def family_cv(tasks: Mapping[str, Task], pairs: Sequence[Pair], records: Records, config: Any, folds: int = 5,
              fit_pair: Callable[[Pair], bool] = lambda p: True, test_pair: Callable[[Pair], bool] = lambda p: True,
              weigh: Callable[[Sequence[Pair]], np.ndarray] | None = None) -> list[float]:  # fmt: skip
    """Leave-families-out accuracy per fold: the tasks' families dealt into ``folds`` (seed 0); each fold's
    perf pairs (those ``test_pair`` keeps) scored by a model fitted (``config``) on the other folds' pairs
    (those ``fit_pair`` keeps), weighted by ``weigh`` (default: each task's pairs weigh 1 in all)."""
    weigh = weigh or task_weights
    order = np.random.default_rng(0).permutation(sorted({t.family for t in tasks.values()}))
    scores = []
    for held in (set(order[i::folds]) for i in range(folds)):
        fit_pairs = [p for p in pairs if tasks[p.task].family not in held and fit_pair(p)]
        test_pairs = [p for p in pairs if tasks[p.task].family in held and p.kind == "perf" and test_pair(p)]
        faster, slower, ctx, kept = pair_rows(fit_pairs, records, config.features)
        model = fit(config, faster, slower, ctx, weigh([fit_pairs[i] for i in kept]))
        a, b, c, _ = pair_rows(test_pairs, records, config.features)
        scores.append(accuracy(model.probability(a, b, c)))
    return scores
