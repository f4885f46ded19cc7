"""The hand-weighted structural score revisited with the ranker's data: component weights fitted, parallelism added.

On the training split's perf pairs, fits a logistic model (numpy, L2) on the
differences of (a) the structural score's seven components and (b) the components
plus five configuration-aware parallelism terms, then reports the pairwise accuracy
of each on the test split's perf pairs (all, and the whole held-out families), next
to the hand-weighted score's on the same pairs. The fitted weights are printed per
unit of each input (comparable with ``ScoreWeights`` up to a common scale).

Run: ``python benchmarks/ranker_structural_fit.py --features FILE [--out result.json]``
(``FILE`` from ``python -m cudaperf_env.ranker.features``; missing records are computed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from cudaperf_env.analysis.score import COMPONENTS
from cudaperf_env.dataset import load_dataset
from cudaperf_env.ranker.evaluation import static_pair_probabilities, structural_scores
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.metrics import accuracy
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.ranker.train import TrainConfig, _fit_logistic, pair_rows, task_weights

COMPONENT_FEATURES = [f"static/score_{c}" for c in COMPONENTS]
PARALLELISM_TERMS = ["parallelism/sm_fill", "parallelism/thread_fill", "parallelism/log2_iterations_per_thread",
                     "parallelism/log2_serial_chain", "parallelism/log2_traffic_over_minimum"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature records file")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    train, test = load_dataset("train"), load_dataset("test")
    records = records_for([*train.values(), *test.values()], args.features)
    seen = {t.family for t in train.values()}
    train_pairs, test_pairs = dataset_pairs(train.values(), ("perf",)), dataset_pairs(test.values(), ("perf",))
    unseen = np.array([test[p.task].family not in seen for p in test_pairs])
    result: dict[str, dict[str, object]] = {}
    for name, names in (("fitted components", COMPONENT_FEATURES),
                        ("fitted components + parallelism", COMPONENT_FEATURES + PARALLELISM_TERMS)):  # fmt: skip
        faster, slower, _, kept = pair_rows(train_pairs, records, names)
        model = _fit_logistic(TrainConfig(kind="logistic"), faster - slower,
                              task_weights([train_pairs[i] for i in kept]), {}, None, names)  # fmt: skip
        a, b, ctx, _ = pair_rows(test_pairs, records, names)
        p = model.probability(a, b, ctx)
        per_unit = model.weights / np.where(model.scale > 0, model.scale, 1.0)
        result[name] = {"test": accuracy(p), "unseen_families": accuracy(p[unseen]),
                        "weights": dict(zip(names, np.round(per_unit, 3).tolist(), strict=True))}  # fmt: skip
    p = static_pair_probabilities(structural_scores(records), test_pairs)
    result["hand-weighted"] = {"test": accuracy(p), "unseen_families": accuracy(p[unseen])}
    result["pairs"] = {"test": len(test_pairs), "unseen_families": int(unseen.sum()), "train": len(train_pairs)}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
