"""Training the pairwise model from the GPU labels: pairs -> feature differences -> boosted trees or logistic.

Every pair is used in both orientations (``x_a - x_b`` labelled 1 and
``x_b - x_a`` labelled 0), so the model learns no side preference; each pair is
weighted ``1 / (pairs of its task)`` so that tasks with many timed configurations
do not dominate. Deterministic for a seed (LightGBM runs with ``deterministic``
and a fixed thread count).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cudaperf_env.dataset.gpu_labels import DEADBAND
from cudaperf_env.ranker.features import CONTEXT, FEATURES, HAND_WRITTEN, SOURCES, context, vector
from cudaperf_env.ranker.model import KINDS, PairwiseModel, from_lightgbm
from cudaperf_env.ranker.pairs import Pair

Records = Mapping[tuple[str, str], Mapping[str, Any]]
Progress = Callable[[int, int], None]
"""Called with ``(done, total)`` boosting rounds (or solver steps)."""


@dataclass(frozen=True)
class TrainConfig:
    """How the shipped model is trained.

    Attributes:
        kind: ``trees`` (gradient-boosted, needs ``lightgbm``: the ``ranker`` extra) or ``logistic`` (numpy only).
        sources: Feature sources used: any of ``static``, ``compiler``, ``parallelism``.
        pair_kinds: Configuration kinds whose pairs train the model (``shown``, ``hidden``, ``perf``).
        deadband: Relative time difference below which two timings are never a pair.
        seed: Seed of the trees' bagging and feature sampling.
        rounds: Boosting rounds.
        leaves: Leaves per tree.
        learning_rate: Shrinkage per round.
        min_leaf: Minimum (weighted) pairs per leaf.
        l2: L2 penalty (logistic: on standardized coefficients; trees: on leaf values).
        threads: Threads LightGBM may use.
        exclude: Feature names (``source/name``) left out of the chosen sources. By default the
            hand-written-kernel features (:data:`~cudaperf_env.ranker.features.HAND_WRITTEN`): tried for
            issue 13 and not adopted (leave-families-out CV: no gain; docs/structural-analysis.md).
        extra: Further LightGBM parameters, overriding the defaults.
    """

    kind: str = "trees"
    sources: tuple[str, ...] = ("static", "parallelism")
    pair_kinds: tuple[str, ...] = ("shown", "hidden", "perf")
    deadband: float = DEADBAND
    seed: int = 0
    rounds: int = 300
    leaves: int = 63
    learning_rate: float = 0.05
    min_leaf: int = 20
    l2: float = 1.0
    threads: int = 1
    exclude: tuple[str, ...] = HAND_WRITTEN
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        unknown = set(self.sources) - set(SOURCES)
        if not self.sources or unknown:
            raise ValueError(f"sources must be a non-empty subset of {', '.join(SOURCES)}, got {self.sources}")
        if not set(self.pair_kinds) <= {"shown", "hidden", "perf"} or not self.pair_kinds:
            raise ValueError(f"pair_kinds must be a non-empty subset of shown, hidden, perf, got {self.pair_kinds}")
        unknown_names = set(self.exclude) - {name for name, _ in FEATURES}
        if unknown_names:
            raise ValueError(f"exclude names unknown features {sorted(unknown_names)}; names look like "
                             f"'parallelism/log2_threads' (see ranker.features.FEATURES)")  # fmt: skip
        if self.rounds < 1 or self.leaves < 2 or not 0 < self.learning_rate <= 1 or self.threads < 1:
            raise ValueError("rounds >= 1, leaves >= 2, 0 < learning_rate <= 1 and threads >= 1 are required")

    @property
    def features(self) -> tuple[str, ...]:
        """The feature names this configuration trains on."""
        return tuple(name for name, source in FEATURES if source in self.sources and name not in self.exclude)


def pair_rows(pairs: Sequence[Pair], records: Records, names: Sequence[str]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:  # fmt: skip
    """``(faster (N, F), slower (N, F), context (N, C), kept)``: the pairs whose two records exist."""
    faster, slower, ctx, kept = [], [], [], []
    for i, pair in enumerate(pairs):
        a, b = records.get((pair.task, pair.faster)), records.get((pair.task, pair.slower))
        if a is None or b is None:
            continue
        faster.append(vector(a, pair.config, names))
        slower.append(vector(b, pair.config, names))
        ctx.append(context(a, pair.config, pair.kind))
        kept.append(i)
    width = len(names)
    if not kept:
        return np.zeros((0, width)), np.zeros((0, width)), np.zeros((0, len(CONTEXT))), kept
    return np.array(faster), np.array(slower), np.array(ctx), kept


def task_weights(pairs: Sequence[Pair]) -> np.ndarray:
    """``1 / (pairs of the same task)`` per pair."""
    counts = Counter(p.task for p in pairs)
    return np.array([1.0 / counts[p.task] for p in pairs])


def fit(config: TrainConfig, faster: np.ndarray, slower: np.ndarray, ctx: np.ndarray, weights: np.ndarray,
        progress: Progress | None = None) -> PairwiseModel:  # fmt: skip
    """Fits the model of ``config.kind`` on pair rows (the faster side first)."""
    if faster.shape[0] == 0:
        raise ValueError("no training pairs: are the labels loaded (load_dataset(labels=True)) and the features "
                         "extracted for the training tasks?")  # fmt: skip
    meta = {"train_pairs": int(faster.shape[0]), "config": _config_table(config)}
    if config.kind == "logistic":
        return _fit_logistic(config, faster - slower, weights, meta, progress)
    return _fit_trees(config, faster, slower, ctx, weights, meta, progress)


def _fit_trees(config: TrainConfig, faster: np.ndarray, slower: np.ndarray, ctx: np.ndarray, weights: np.ndarray,
               meta: dict[str, Any], progress: Progress | None) -> PairwiseModel:  # fmt: skip
    try:
        import lightgbm as lgb
    except ImportError as exc:
        raise ImportError("training the trees model needs LightGBM: pip install 'cudaperf-env[ranker]' "
                          "(or train with kind='logistic', numpy only)") from exc  # fmt: skip
    diff = faster - slower
    x = np.concatenate([np.concatenate([diff, ctx], 1), np.concatenate([-diff, ctx], 1)])  # (2N, F + C)
    y = np.concatenate([np.ones(len(diff)), np.zeros(len(diff))])
    w = np.concatenate([weights, weights])
    params = {"objective": "binary", "num_leaves": config.leaves, "learning_rate": config.learning_rate,
              "min_sum_hessian_in_leaf": 1e-3, "min_data_in_leaf": config.min_leaf, "lambda_l2": config.l2,
              "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "seed": config.seed,
              "deterministic": True, "force_row_wise": True, "num_threads": config.threads, "verbose": -1,
              "boost_from_average": False, **config.extra}  # fmt: skip
    callbacks = [] if progress is None else [lambda env: progress(env.iteration + 1, config.rounds)]
    booster = lgb.train(params, lgb.Dataset(x, y, weight=w), num_boost_round=config.rounds, callbacks=callbacks)
    model = from_lightgbm(booster.dump_model(), config.features, CONTEXT, meta)
    check = x[:: max(1, len(x) // 500)]
    if not np.allclose(model.raw(check[:, : len(config.features)], check[:, len(config.features):]),
                       booster.predict(check, raw_score=True), atol=1e-6):  # fmt: skip
        raise RuntimeError("the numpy tree evaluator disagrees with LightGBM on the training rows")
    return model


def _fit_logistic(config: TrainConfig, diff: np.ndarray, weights: np.ndarray, meta: dict[str, Any],
                  progress: Progress | None, names: Sequence[str] | None = None) -> PairwiseModel:  # fmt: skip
    """Newton's method on the L2-penalized weighted log-loss of ``sigmoid(w . z)``, both orientations folded in."""
    diff = np.where(np.isnan(diff), 0.0, diff)
    scale = np.sqrt(np.average(diff**2, axis=0, weights=weights))
    z = diff / np.where(scale > 0, scale, 1.0)  # (N, F); the flipped rows are -z with label 0: same loss
    w = np.zeros(z.shape[1])
    steps = min(config.rounds, 50)
    total = float(weights.sum())
    for step in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -60, 60)))
        grad = z.T @ (weights * (p - 1.0)) / total + config.l2 * w / len(z)
        hess = (z * (weights * p * (1 - p))[:, None]).T @ z / total + np.eye(len(w)) * (config.l2 / len(z) + 1e-9)
        delta = np.linalg.solve(hess, grad)
        w -= delta
        if progress is not None:
            progress(step + 1, steps)
        if float(np.abs(delta).max()) < 1e-8:
            break
    return PairwiseModel("logistic", tuple(names or config.features), (), (), 0.0, w, scale, meta)


def _config_table(config: TrainConfig) -> dict[str, Any]:
    return {"kind": config.kind, "sources": list(config.sources), "pair_kinds": list(config.pair_kinds),
            "deadband": config.deadband, "seed": config.seed, "rounds": config.rounds, "leaves": config.leaves,
            "learning_rate": config.learning_rate, "min_leaf": config.min_leaf, "l2": config.l2,
            **({"exclude": list(config.exclude)} if config.exclude != HAND_WRITTEN else {}),
            **({"extra": dict(config.extra)} if config.extra else {})}  # fmt: skip

