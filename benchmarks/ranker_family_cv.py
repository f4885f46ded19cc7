"""Leave-families-out cross-validation of ranker settings on the train split: how they do on families never seen.

The validation split holds only new tasks of the training families, so it cannot
tell which settings generalize to new families. Here the train split's families are
dealt into 5 folds (seeded); each fold's perf pairs are scored by a model trained
on the other folds' pairs (all configuration kinds), for each variant.

Run: ``python benchmarks/ranker_family_cv.py --features FILE [--out result.json]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from cudaperf_env.dataset import load_dataset
from cudaperf_env.ranker.evaluation import family_cv
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.ranker.train import TrainConfig

VARIANTS = {
    "shipped": TrainConfig(),
    "15 leaves, min 100 per leaf": TrainConfig(leaves=15, min_leaf=100),
    "100 rounds": TrainConfig(rounds=100),
    "feature fraction 0.5": TrainConfig(extra={"feature_fraction": 0.5}),
}
FOLDS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    train = load_dataset("train")
    records = records_for(train.values(), args.features)
    pairs = dataset_pairs(train.values(), ("shown", "hidden", "perf"))
    result = {}
    for name, config in VARIANTS.items():
        scores = family_cv(train, pairs, records, config, FOLDS)
        result[name] = {"mean": float(np.mean(scores)), "folds": scores}
        print(name, round(float(np.mean(scores)), 3), [round(s, 3) for s in scores], flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
