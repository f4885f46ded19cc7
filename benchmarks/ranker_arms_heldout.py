"""The held-out figures of every arm of ``ranker_transfer_cv.py``, reported once, after the choice was made there.

Each arm is fitted on the whole train split with its knob variants (as
``cudaperf ranker train --variants`` does), then scored on the test split's perf
pairs (all, the whole held-out families, Spearman against the speedup) and on the
hand-written starter tasks' pairs (perf and shown configurations; the H200 labels of
``ranker_starter.py``), next to the structural score on the same pairs. These
figures did not choose anything: the choice is the leave-families-out CV's.

``--starter-cv`` adds the leave-one-starter-family-out figure: for each family of
the starter tasks, a model of the arm is fitted on the train split, its variants and
the starter pairs of the *other* families (each starter task weighing as one dataset
task), and scores that family's perf pairs; the figure pools those held-out predictions.

Run: ``python benchmarks/ranker_arms_heldout.py --features FILE --out benchmarks/results/ranker_arms_heldout.json
[--arms NAME,NAME] [--starter-cv]``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ranker_starter import labelled_starter_tasks
from ranker_transfer_cv import ARMS, Weigh, arm_parser, chosen_arms

from cudaperf_env.dataset import load_dataset
from cudaperf_env.dataset.variants import load_variant_tasks
from cudaperf_env.ranker.evaluation import compare, model_pair_probabilities
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.metrics import accuracy
from cudaperf_env.ranker.model import PairwiseModel
from cudaperf_env.ranker.pairs import Pair, dataset_pairs
from cudaperf_env.ranker.train import Records, TrainConfig, fit, pair_rows
from cudaperf_env.tasks import Task
from cudaperf_env.text import json_safe

KINDS = ("shown", "hidden", "perf")


def fitted(config: TrainConfig, weigh: Weigh, pairs: Sequence[Pair], records: Records) -> PairwiseModel:
    """The arm's model fitted on ``pairs``."""
    faster, slower, ctx, kept = pair_rows(pairs, records, config.features)
    return fit(config, faster, slower, ctx, weigh([pairs[i] for i in kept]))


def headline(result: Mapping[str, Any]) -> dict[str, Any]:
    """Accuracy, whole-held-out-family accuracy and Spearman of one ``compare`` scorer."""
    return {"pairwise_accuracy": result["pairwise_accuracy"], "pairs": result["pairs"],
            "unseen_families": result["unseen_families"]["pairwise_accuracy"], "spearman": result["spearman"],
            "spearman_mean_per_task": result["spearman_mean_per_task"]}  # fmt: skip


def heldout(model: PairwiseModel, test: Mapping[str, Task], test_records: Records, seen: set[str],
            starter: Mapping[str, Task], starter_records: Records) -> dict[str, Any]:  # fmt: skip
    """The model's test-split and starter figures, with the structural score's on the same pairs."""
    result = compare(model, dataset_pairs(test.values(), ("perf",)), test_records, test, seen_families=seen)
    out: dict[str, Any] = {"test": {**headline(result), "per_family": {f: v["accuracy"] for f, v in
                                                                       result["per_family"].items()}},
                           "test_structural": headline(result["structural"])}  # fmt: skip
    for kind in ("perf", "shown"):
        figures = compare(model, dataset_pairs(starter.values(), (kind,)), starter_records, starter)
        out[f"starter_{kind}"] = headline(figures)
        out[f"starter_{kind}_structural"] = headline(figures["structural"])
    return out


def starter_cv(config: TrainConfig, weigh: Weigh, pairs: Sequence[Pair], records: Records,
               starter: Mapping[str, Task], starter_records: Records) -> dict[str, Any]:  # fmt: skip
    """Leave-one-starter-family-out accuracy on the starter perf pairs (see the module docstring)."""
    own = dataset_pairs(starter.values(), KINDS)
    everything = {**records, **starter_records}
    right: list[float] = []
    per_family = {}
    for family in sorted({t.family for t in starter.values()}):
        held = [p for p in own if starter[p.task].family == family and p.kind == "perf"]
        if not held:
            continue
        rest = [p for p in own if starter[p.task].family != family]
        model = fitted(config, weigh, [*pairs, *rest], everything)
        p = model_pair_probabilities(model, held, starter_records)
        per_family[family] = {"accuracy": accuracy(p), "pairs": len(held)}
        right.extend(np.where(np.isnan(p) | (p == 0.5), 0.5, (p > 0.5).astype(float)).tolist())
        print(f"  {family}: {per_family[family]['accuracy']:.3f} of {len(held)}", flush=True)
    return {"pairwise_accuracy": float(np.mean(right)) if right else math.nan, "pairs": len(right),
            "per_family": per_family}  # fmt: skip


def main() -> None:
    parser = arm_parser(__doc__)
    parser.add_argument("--starter-cv", action="store_true", help="also the leave-one-starter-family-out figure")
    args = parser.parse_args()
    chosen = chosen_arms(parser, args.arms)
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.is_file() else {}
    train, test, starter = load_variant_tasks("train"), load_dataset("test"), labelled_starter_tasks()
    records = records_for(train.values(), args.features)
    test_records = records_for(test.values(), args.features)
    starter_records = records_for(starter.values())
    pairs = dataset_pairs(train.values(), KINDS)
    seen = {t.family for t in train.values()}
    for name in chosen:
        config, weigh = ARMS[name]
        entry = result.get(name, {})
        started = time.perf_counter()
        if "test" not in entry:
            entry.update(heldout(fitted(config, weigh, pairs, records), test, test_records, seen, starter,
                                 starter_records))  # fmt: skip
        if args.starter_cv and "starter_cv" not in entry:
            entry["starter_cv"] = starter_cv(config, weigh, pairs, records, starter, starter_records)
        entry["seconds"] = round(time.perf_counter() - started)
        result[name] = entry
        print(name, {k: round(v["pairwise_accuracy"], 3) for k, v in entry.items() if isinstance(v, dict)
                     and "pairwise_accuracy" in v}, flush=True)  # fmt: skip
        out.write_text(json.dumps(json_safe(result), indent=2) + "\n")


if __name__ == "__main__":
    main()
