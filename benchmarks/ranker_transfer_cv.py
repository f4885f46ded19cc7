"""Which ranker settings carry to families never seen? Leave-families-out CV of regularization, features, weighting.

The choice of the shipped model's settings for kernels no generator wrote (issue 13)
is made here, on the train split only: its families are dealt into 5 folds (seeded,
as in ``ranker_family_cv.py``); each fold's perf pairs of the dataset's own
implementations (no knob variant in the pair) are scored by a model trained on the
other folds' pairs, knob variants included (all configuration kinds), as the shipped
model is trained. Each arm is one :class:`TrainConfig` and pair weighting; the
structural score's accuracy on the same pairs is given for scale.

The arms are fixed below; results are appended arm by arm to ``--out`` (a rerun
skips the arms already there), since one arm costs 5 fits (1-4 min on one core).

Run: ``python benchmarks/ranker_transfer_cv.py --features FILE --out benchmarks/results/ranker_transfer_cv.json
[--arms NAME,NAME]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cudaperf_env.dataset.variants import load_variant_tasks
from cudaperf_env.ranker.evaluation import family_cv, static_pair_probabilities, structural_scores
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.metrics import accuracy
from cudaperf_env.ranker.pairs import Pair, dataset_pairs
from cudaperf_env.ranker.train import TrainConfig, task_weights

FOLDS = 5
Weigh = Callable[[Sequence[Pair]], np.ndarray]


def has_variant(pair: Pair) -> bool:
    """A pair with a knob variant on either side (variant names carry ``~``)."""
    return "~" in pair.faster or "~" in pair.slower


def dataset_heavy_weights(pairs: Sequence[Pair], share: float = 0.5) -> np.ndarray:
    """Each task weighs 1; its dataset pairs share ``share`` of it and its variant pairs the rest (pure).

    A task without variant pairs gives its dataset pairs the whole weight.
    """
    counts = Counter((p.task, has_variant(p)) for p in pairs)
    mixed = {t for t, v in counts if v} & {t for t, v in counts if not v}
    out = []
    for p in pairs:
        part = (1 - share if has_variant(p) else share) if p.task in mixed else 1.0
        out.append(part / counts[(p.task, has_variant(p))])
    return np.array(out)


OLD = TrainConfig()  # the shipped model's features and settings (the hand-written-kernel features left out)
NEW: tuple[str, ...] = ()  # exclude nothing: the hand-written-kernel features in
ARMS: dict[str, tuple[TrainConfig, Weigh]] = {
    "shipped settings": (OLD, task_weights),
    "15 leaves, min 100 per leaf": (TrainConfig(leaves=15, min_leaf=100), task_weights),
    "7 leaves, min 200 per leaf": (TrainConfig(leaves=7, min_leaf=200), task_weights),
    "100 rounds": (TrainConfig(rounds=100), task_weights),
    "feature fraction 0.5": (TrainConfig(extra={"feature_fraction": 0.5}), task_weights),
    "dataset pairs half of each task's weight": (OLD, dataset_heavy_weights),
    "hand-written features": (TrainConfig(exclude=NEW), task_weights),
    "hand-written features, 15 leaves, min 100": (TrainConfig(leaves=15, min_leaf=100, exclude=NEW), task_weights),
    "hand-written features, feature fraction 0.5": (TrainConfig(exclude=NEW, extra={"feature_fraction": 0.5}),
                                                    task_weights),
    "127 leaves": (TrainConfig(leaves=127), task_weights),
    "600 rounds": (TrainConfig(rounds=600), task_weights),
    "hand-written features, 127 leaves": (TrainConfig(leaves=127, exclude=NEW), task_weights),
}


def arm_parser(description: str | None) -> argparse.ArgumentParser:
    """The options every arm benchmark takes: --features, --out, --arms."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", required=True, help="JSON file the figures are appended to, arm by arm")
    parser.add_argument("--arms", help="only these arms (comma-separated names; default: all)")
    return parser


def chosen_arms(parser: argparse.ArgumentParser, arms: str | None) -> list[str]:
    """The arms named by --arms (all when None); an unknown name is a usage error."""
    chosen = [a.strip() for a in arms.split(",")] if arms else list(ARMS)
    unknown = set(chosen) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
    return chosen


def main() -> None:
    parser = arm_parser(__doc__)
    args = parser.parse_args()
    chosen = chosen_arms(parser, args.arms)
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.is_file() else {}
    train = load_variant_tasks("train")
    records = records_for(train.values(), args.features)
    pairs = dataset_pairs(train.values(), ("shown", "hidden", "perf"))
    if "structural" not in result:
        scores = structural_scores(records)
        held = [p for p in pairs if p.kind == "perf" and not has_variant(p)]
        result["pairs"] = {"all": len(pairs), "variant": sum(map(has_variant, pairs)), "scored": len(held)}
        result["structural"] = accuracy(static_pair_probabilities(scores, held))
    for name in chosen:
        if name in result:
            continue
        config, weigh = ARMS[name]
        started = time.perf_counter()
        folds = family_cv(train, pairs, records, config, FOLDS, test_pair=lambda p: not has_variant(p), weigh=weigh)
        result[name] = {"mean": float(np.mean(folds)), "folds": folds, "seconds": round(time.perf_counter() - started)}
        print(name, round(float(np.mean(folds)), 4), [round(s, 3) for s in folds], flush=True)
        out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
