"""Ranker variants on the same splits: which features, model kind, pair kinds and tree size the shipped one beats.

Each variant is a :class:`~cudaperf_env.ranker.train.TrainConfig` trained on the
train split's pairs, then measured on the validation and test splits' perf pairs
(pairwise accuracy, Spearman against speedup) and on the test split's shown
pairs (the configurations ``Ranker.score`` averages over).

Run: ``python benchmarks/ranker_ablations.py --features FILE [--out result.json]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cudaperf_env.dataset import load_dataset
from cudaperf_env.ranker.evaluation import compare, model_pair_probabilities
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.metrics import accuracy
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.ranker.train import TrainConfig, fit, pair_rows, task_weights

VARIANTS = {
    "shipped": TrainConfig(),
    "static features only": TrainConfig(sources=("static",)),
    "logistic": TrainConfig(kind="logistic"),
    "perf pairs only": TrainConfig(pair_kinds=("perf",)),
    "31 leaves, min 40 per leaf": TrainConfig(leaves=31, min_leaf=40),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file (missing records are computed)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    splits = {s: load_dataset(s) for s in ("train", "validation", "test")}
    records = records_for([t for tasks in splits.values() for t in tasks.values()], args.features)
    result = {}
    for name, config in VARIANTS.items():
        start = time.perf_counter()
        pairs = dataset_pairs(splits["train"].values(), config.pair_kinds, config.deadband)
        faster, slower, ctx, kept = pair_rows(pairs, records, config.features)
        model = fit(config, faster, slower, ctx, task_weights([pairs[i] for i in kept]))
        row: dict[str, float] = {"fit_s": time.perf_counter() - start}
        for split in ("validation", "test"):
            figures = compare(model, dataset_pairs(splits[split].values(), ("perf",)), records, splits[split])
            row[f"{split}_accuracy"] = figures["pairwise_accuracy"]
            row[f"{split}_spearman"] = figures["spearman"]
        shown = dataset_pairs(splits["test"].values(), ("shown",))
        row["test_shown_accuracy"] = accuracy(model_pair_probabilities(model, shown, records))
        result[name] = row
        print(name, {k: round(v, 3) for k, v in row.items()}, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
