"""Cost of the ranker: scoring one submission once its features exist, the features themselves, and training.

Scores every implementation of the test split's first ``--tasks`` tasks against
its task's baseline with the shipped model, in three timings per submission
(medians): the whole ``Ranker.score`` with the structural report given (what the
evaluation pipeline pays: its static analysis already ran), the configuration-aware
feature extraction alone, and the model alone on ready feature vectors (the goal:
under 10 ms). With ``--train``, also times ``cudaperf ranker train``'s fitting step on
the training split's pairs from a feature file (``--features``).

Run: ``python benchmarks/ranker_score.py [--tasks 40] [--train --features FILE] [--out result.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from cudaperf_env.analysis import analyze
from cudaperf_env.dataset import load_dataset
from cudaperf_env.ranker import load_ranker
from cudaperf_env.ranker.features import context, implementation_record, task_configs, vector
from cudaperf_env.ranker.pairs import config_key


def time_scoring(n_tasks: int) -> dict[str, float]:
    """Median milliseconds per submission of the score, its feature extraction and the model alone."""
    ranker = load_ranker()
    tasks = list(load_dataset("test").values())[:n_tasks]
    whole, features, model = [], [], []
    for task in tasks:
        shown = [(k, c) for k, c in task_configs(task) if k == "shown"]
        ranker.baseline_record(task, shown)  # the pipeline scores many submissions per task: baseline cached
        for impl in task.implementations:
            structure = analyze(impl.source, None)
            start = time.perf_counter()
            ranker.score(task, impl.source, None, structure)
            whole.append(time.perf_counter() - start)
            start = time.perf_counter()
            fresh = impl.source + "\n"  # a new text: the parse cache does not serve it
            record = implementation_record(task, impl.name, fresh, None, structure, shown)
            features.append(time.perf_counter() - start)
            base = ranker.baseline_record(task, shown)
            keys = [config_key(c) for _, c in shown]
            xa = np.array([vector(record, k, ranker.model.features) for k in keys])
            xb = np.array([vector(base, k, ranker.model.features) for k in keys])
            ctx = np.array([context(record, k, kind) for (kind, _), k in zip(shown, keys, strict=True)])
            start = time.perf_counter()
            float(np.mean(ranker.model.probability(xa, xb, ctx)))
            model.append(time.perf_counter() - start)
    ms = {name: 1000 * statistics.median(v) for name, v in
          (("score_with_structure_ms", whole), ("parallelism_features_ms", features), ("model_only_ms", model))}
    return {**ms, "submissions": len(whole)}


def time_training(features: str) -> dict[str, float]:
    """Seconds to build the training pairs' rows and fit the shipped configuration (from a feature file)."""
    from cudaperf_env.ranker.features import read_records
    from cudaperf_env.ranker.pairs import dataset_pairs
    from cudaperf_env.ranker.train import TrainConfig, fit, pair_rows, task_weights

    records = read_records(features)
    config = TrainConfig()
    start = time.perf_counter()
    pairs = dataset_pairs(load_dataset("train").values(), config.pair_kinds, config.deadband)
    faster, slower, ctx, kept = pair_rows(pairs, records, config.features)
    rows = time.perf_counter() - start
    fit(config, faster, slower, ctx, task_weights([pairs[i] for i in kept]))
    return {"pairs_and_rows_s": rows, "fit_s": time.perf_counter() - start - rows, "train_pairs": len(kept)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=40, help="test-split tasks whose implementations are scored")
    parser.add_argument("--train", action="store_true", help="also time the fitting step")
    parser.add_argument("--features", help="feature file for --train (python -m cudaperf_env.ranker.features)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}",
              "date": time.strftime("%Y-%m-%d"), **time_scoring(args.tasks)}  # fmt: skip
    if args.train:
        if not args.features:
            parser.error("--train needs --features FILE")
        result.update(time_training(args.features))
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
