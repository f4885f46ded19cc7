"""Does a feature carry to new families? The ranker with and without it, on the same pairs.

Both arms use the shipped training settings (``TrainConfig()``, the knob variants' labels included,
as ``cudaperf ranker train --variants``); the second leaves out ``--without``'s features
(default: ``static/strided_loads`` and ``static/strided_stores``, which tell a gather's strided
loads from a scatter's strided stores). Two measures for each:

- leave-families-out CV over the train split (5 folds, seed 0, as ``ranker_variants_cv.py``'s
  ``with variants`` arm): the held-out families' perf pairs of the dataset's own implementations;
- trained on the whole train split: the test split's perf pairs (all, the held-out families,
  per family), as ``cudaperf ranker eval --split test`` reports them.

``--weights`` picks how pairs weigh (``ranker_variants_cv.py``'s arms): ``task`` (each task's pairs
weigh 1 in all, as shipped), ``grouped`` (a task's dataset pairs weigh 1 and its variant pairs
another 1) or ``grouped-no-vv`` (the same without pairs of two variants).

Run: ``python benchmarks/ranker_feature_cv.py [--without NAME ...] [--weights W] [--features FILE] [--out F]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ranker_variants_cv import grouped_weights, variants_in

from cudaperf_env.dataset import load_dataset
from cudaperf_env.dataset.variants import label_progress, load_variant_tasks
from cudaperf_env.ranker.evaluation import compare, family_cv
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.ranker.train import TrainConfig, fit, pair_rows, task_weights

FOLDS = 5
STRIDED_SPLIT = ("static/strided_loads", "static/strided_stores")
WEIGHTS = {"task": (lambda p: True, task_weights), "grouped": (lambda p: True, grouped_weights),
           "grouped-no-vv": (lambda p: variants_in(p) < 2, grouped_weights)}  # fmt: skip


def measure(config: TrainConfig, train: dict, test: dict, records: dict, weights: str = "task") -> dict:
    """The CV folds and the test split's figures of one training configuration."""
    started = time.perf_counter()
    fit_pair, weigh = WEIGHTS[weights]
    pairs = dataset_pairs(train.values(), config.pair_kinds, config.deadband)
    folds = family_cv(train, pairs, records, config, FOLDS, fit_pair=fit_pair,
                      test_pair=lambda p: "~" not in p.faster + p.slower, weigh=weigh)  # fmt: skip
    pairs = [p for p in pairs if fit_pair(p)]
    faster, slower, ctx, kept = pair_rows(pairs, records, config.features)
    model = fit(config, faster, slower, ctx, weigh([pairs[i] for i in kept]))
    seen = {t.family for t in train.values()}
    figures = compare(model, dataset_pairs(test.values(), ("perf",), config.deadband), records, test,
                      seen_families=seen)  # fmt: skip
    return {"cv_mean": float(np.mean(folds)), "cv_folds": folds, "train_pairs": len(kept),
            "test_accuracy": figures["pairwise_accuracy"], "test_pairs": figures["pairs"],
            "test_unseen_families": figures["unseen_families"]["pairwise_accuracy"],
            "test_spearman": figures["spearman"], "per_family": figures["per_family"],
            "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip


def run_arms(arms: dict[str, Callable[[], dict]], result: dict, out: str | None) -> None:
    """Measures each arm into ``result`` (a line each as it ends), then the per-family table; writes ``out``."""
    for name, run in arms.items():
        result[name] = run()
        print_arm(name, result[name])
    print_families(result, tuple(arms))
    if out:
        Path(out).write_text(json.dumps(result, indent=2) + "\n")


def print_arm(name: str, row: dict) -> None:
    """One arm's line: CV mean and folds, the test split's figures, seconds."""
    print(f"{name:8s} CV {row['cv_mean']:.3f} {[round(f, 3) for f in row['cv_folds']]}  test "
          f"{row['test_accuracy']:.3f} (held-out families {row['test_unseen_families']:.3f}, "
          f"Spearman {row['test_spearman']:.3f})  {row['seconds']} s", flush=True)  # fmt: skip


def print_families(result: dict, arms: tuple[str, ...]) -> None:
    """The test split's accuracy per family, one column per arm."""
    print(f"{'family':20s} " + " ".join(f"{arm:>8s}" for arm in arms))
    for family in sorted(set().union(*(result[arm]["per_family"] for arm in arms))):
        cells = [result[arm]["per_family"].get(family, {}).get("accuracy") for arm in arms]
        print(f"{family:20s} " + " ".join(f"{c:>8.3f}" if c is not None else "       -" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--without", nargs="+", default=list(STRIDED_SPLIT), help="features the second arm leaves out")
    parser.add_argument("--weights", choices=list(WEIGHTS), default="task", help="how pairs weigh (both arms)")
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    train, test = load_variant_tasks("train"), load_dataset("test")
    records = records_for([*train.values(), *test.values()], args.features)
    shipped = TrainConfig()
    arms = {"with": shipped, "without": dataclasses.replace(shipped, exclude=(*shipped.exclude, *args.without))}
    result: dict = {"without": args.without, "weights": args.weights, "labels": label_progress(train.values()),
                    "machine": f"{platform.machine()} CPU, Python {platform.python_version()}",
                    "date": datetime.date.today().isoformat()}  # fmt: skip
    run_arms({name: lambda c=config: measure(c, train, test, records, args.weights) for name, config in arms.items()},
             result, args.out)  # fmt: skip


if __name__ == "__main__":
    main()
