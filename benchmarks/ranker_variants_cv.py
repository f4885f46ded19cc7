"""Do the knob variants teach the ranker anything that carries to new families? Leave-families-out CV.

The train split's families are dealt into 5 folds (seeded, as in ``ranker_family_cv.py``);
each fold's perf pairs of the dataset's own implementations (no variant in the pair) are
scored by models trained on the other folds' pairs (all configuration kinds):

- ``dataset only``: pairs of the dataset's implementations (what the shipped model trains on);
- ``with variants``: every pair, variants included, each task's pairs weighing 1 in all;
- ``variants as extra weight``: every pair; a task's dataset pairs weigh 1 and its
  variant pairs another 1 (so the variants add to the dataset pairs, not dilute them);
- ``three groups``: dataset-dataset, dataset-variant and variant-variant pairs each weigh 1
  per task;
- ``no variant-variant pairs``: as ``variants as extra weight`` without the pairs of two variants.

The held-out families' variants are never seen, in training or in scoring.

Run: ``python benchmarks/ranker_variants_cv.py [--features FILE] [--out result.json]``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cudaperf_env.dataset.variants import load_variant_tasks
from cudaperf_env.ranker.evaluation import family_cv
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.pairs import Pair, dataset_pairs
from cudaperf_env.ranker.train import TrainConfig, task_weights

FOLDS = 5


def variants_in(pair: Pair) -> int:
    """0: two dataset implementations, 1: one variant, 2: two variants."""
    return ("~" in pair.faster) + ("~" in pair.slower)


def has_variant(pair: Pair) -> bool:
    return variants_in(pair) > 0


def weights_by(group: Callable[[Pair], object]) -> Callable[[Sequence[Pair]], np.ndarray]:
    """Pair weights ``1 / (pairs of the same task and group)``: each group weighs 1 per task."""
    def weigh(pairs: Sequence[Pair]) -> np.ndarray:
        counts = Counter((p.task, group(p)) for p in pairs)
        return np.array([1.0 / counts[(p.task, group(p))] for p in pairs])

    return weigh


grouped_weights = weights_by(has_variant)  # dataset pairs and variant pairs each weigh 1 per task
three_group_weights = weights_by(variants_in)  # the three kinds of pair each weigh 1 per task


ARMS: dict[str, tuple[Callable[[Pair], bool], Callable[[Sequence[Pair]], np.ndarray]]] = {
    "dataset only": (lambda p: not has_variant(p), task_weights),
    "with variants": (lambda p: True, task_weights),
    "variants as extra weight": (lambda p: True, grouped_weights),
    "three groups": (lambda p: True, three_group_weights),
    "no variant-variant pairs": (lambda p: variants_in(p) < 2, grouped_weights),
}
"""Each arm: which pairs train, and how they weigh."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), help="only these arms (default: all)")
    args = parser.parse_args()
    config = TrainConfig()
    train = load_variant_tasks("train")
    records = records_for(train.values(), args.features)
    pairs = dataset_pairs(train.values(), config.pair_kinds, config.deadband)
    result: dict[str, object] = {
        "pairs": len(pairs), "variant_pairs": sum(map(has_variant, pairs)),
        "tasks_with_variant_labels": len({p.task for p in pairs if has_variant(p)}),
    }  # fmt: skip
    print(result, flush=True)
    for name, (fit_pair, weigh) in ARMS.items():
        if args.arms and name not in args.arms:
            continue
        scores = family_cv(train, pairs, records, config, FOLDS, fit_pair=fit_pair,
                           test_pair=lambda p: not has_variant(p), weigh=weigh)
        result[name] = {"mean": float(np.mean(scores)), "folds": scores}
        print(name, round(float(np.mean(scores)), 3), [round(s, 3) for s in scores], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
