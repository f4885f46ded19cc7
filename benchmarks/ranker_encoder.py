"""The learned code encoder (issue 13, model 2) against the shipped trees, on the same held-out pairs.

Trains :mod:`cudaperf_env.ranker.encoder` on the train split's pairs of every
configuration kind (with the labelled knob variants, as the shipped trees were
trained), then scores the validation and test splits' perf pairs with the encoder,
the shipped trees and the structural score: pairwise accuracy, the whole held-out
families' accuracy, and the paired comparison encoder - trees
(:func:`~cudaperf_env.ranker.metrics.paired_difference`); then the hand-written
starter tasks' perf and shown pairs (their committed H200 labels), where the
comparison is with the structural score. The encoder would ship only if it beat the
trees on the held-out families.

Run: ``python benchmarks/ranker_encoder.py --features F [--steps N] [--device cuda] [--max-minutes M]
[--save encoder.pt] --out benchmarks/results/ranker_encoder.json`` (``F``: a feature cache of
``python -m cudaperf_env.ranker.features``; missing records are computed). ``--load encoder.pt``
scores a saved encoder without training.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from cudaperf_env.dataset import load_dataset
from cudaperf_env.dataset.load import DATA_FILE
from cudaperf_env.dataset.variants import VARIANTS_FILE, load_variant_tasks
from cudaperf_env.ranker import load_ranker
from cudaperf_env.ranker.encoder import EncoderConfig, EncoderModel, fit_encoder
from cudaperf_env.ranker.evaluation import model_pair_probabilities, static_pair_probabilities, structural_scores
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.metrics import accuracy, paired_difference
from cudaperf_env.ranker.model import PairwiseModel
from cudaperf_env.ranker.pairs import Pair, dataset_pairs
from cudaperf_env.ranker.starter import labelled_starter_tasks
from cudaperf_env.tasks.schema import Task
from cudaperf_env.text import json_safe

STARTER_LABELS = Path(__file__).parent / "results" / "starter_labels_h200.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", help="feature record cache (missing records are computed)")
    parser.add_argument("--no-variants", action="store_true", help="train on the dataset's implementations only")
    parser.add_argument("--steps", type=int, default=EncoderConfig.steps)
    parser.add_argument("--width", type=int, default=EncoderConfig.width)
    parser.add_argument("--layers", type=int, default=EncoderConfig.layers)
    parser.add_argument("--max-tokens", type=int, default=EncoderConfig.max_tokens)
    parser.add_argument("--batch-pairs", type=int, default=EncoderConfig.batch_pairs)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--max-minutes", type=float, default=0.0, help="stop training after this long")
    parser.add_argument("--compiler", action="store_true",
                        help="the head also reads the compiler's features and SASS histogram (records made with "
                             "--compiler; the starter tasks' are compiled here)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="write the trained encoder here (a torch file)")
    parser.add_argument("--load", help="score this saved encoder instead of training one")
    parser.add_argument("--out", help="write the figures here (JSON)")
    args = parser.parse_args()
    config = EncoderConfig(width=args.width, layers=args.layers, max_tokens=args.max_tokens, steps=args.steps,
                           batch_pairs=args.batch_pairs, device=args.device, max_minutes=args.max_minutes,
                           seed=args.seed, compiler=args.compiler)  # fmt: skip
    train = load_dataset("train") if args.no_variants else load_variant_tasks("train", variants=VARIANTS_FILE,
                                                                              dataset=DATA_FILE)  # fmt: skip
    seen = {t.family for t in train.values()}
    result: dict = {"date": datetime.date.today().isoformat(), "machine": _machine(config.device)}
    if args.load:
        model = EncoderModel.load(args.load, device=args.device)
        result.update(loaded=Path(args.load).name, config=asdict(model.config))
    else:
        model = _train(config, train, args.features, result)
    if args.save:
        model.save(args.save)
    result.update(vocabulary=len(model.vocab), kept_names=len(model.keep))
    trees = load_ranker().model
    for split in ("validation", "test"):
        tasks = load_dataset(split)
        split_pairs = dataset_pairs(tasks.values(), ("perf",))
        scorers = _scorers(model, trees, split_pairs, tasks, records_for(tasks.values(), args.features))
        unseen = [tasks[p.task].family not in seen for p in split_pairs]
        figures = {name: {"pairwise_accuracy": accuracy(p),
                          "unseen_families": accuracy(p[unseen]) if any(unseen) else None}
                   for name, p in scorers.items()}  # fmt: skip
        paired = paired_difference(scorers["encoder"], scorers["trees"], [p.task for p in split_pairs])
        result[split] = {"pairs": len(split_pairs), "unseen_pairs": sum(unseen), **figures, "encoder_vs_trees": paired}
        print(f"{split}: {len(split_pairs)} pairs; " + ", ".join(
            f"{name} {f['pairwise_accuracy']:.3f} (unseen families {_fmt(f['unseen_families'])})"
            for name, f in figures.items()))  # fmt: skip
    starter_tasks = labelled_starter_tasks(STARTER_LABELS)
    records = records_for(starter_tasks.values(), compiler=model.config.compiler)
    for kind in ("perf", "shown"):
        pairs = dataset_pairs(starter_tasks.values(), (kind,))
        scorers = _scorers(model, trees, pairs, starter_tasks, records)
        paired = paired_difference(scorers["encoder"], scorers["structural"], [p.task for p in pairs])
        result[f"starter_{kind}"] = {"pairs": len(pairs), **{n: accuracy(p) for n, p in scorers.items()},
                                     "encoder_vs_structural": paired}  # fmt: skip
        print(f"starter {kind}: {len(pairs)} pairs; " + ", ".join(f"{n} {accuracy(p):.3f}" for n, p in scorers.items()))
    if args.out:
        Path(args.out).write_text(json.dumps(json_safe(result), indent=2) + "\n")


def _scorers(encoder: EncoderModel, trees: PairwiseModel, pairs: list[Pair], tasks: dict[str, Task],
             records: dict) -> dict[str, np.ndarray]:  # fmt: skip
    """P(the faster side is faster) per pair from the encoder, the shipped trees, the structural score and the
    mean of the encoder's and the trees' probabilities (does the encoder know what the trees do not?)."""
    scores = {"encoder": encoder.probabilities(pairs, _sources(tasks), records),
              "trees": model_pair_probabilities(trees, pairs, records),
              "structural": static_pair_probabilities(structural_scores(records), pairs)}  # fmt: skip
    scores["mean of encoder and trees"] = np.where(np.isnan(scores["encoder"]), scores["trees"],
                                                   (scores["encoder"] + scores["trees"]) / 2)  # fmt: skip
    return scores


def _sources(tasks: dict[str, Task]) -> dict[tuple[str, str], str]:
    return {(t.id, i.name): i.source for t in tasks.values() for i in t.implementations}


def _machine(device: str) -> str:
    """The CPU architecture, and the card and driver where the encoder trains on a GPU."""
    import torch

    if device == "cpu" or not torch.cuda.is_available():
        return f"{platform.machine()}, cpu"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.split()[0]  # fmt: skip
    except (OSError, IndexError, subprocess.SubprocessError):
        driver = "unknown"
    return f"{platform.machine()}, {torch.cuda.get_device_name()}, driver {driver}"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _train(config: EncoderConfig, train: dict, features: str | None, result: dict) -> EncoderModel:
    """Fits the encoder on the train tasks' pairs of every kind (a progress bar), noting size and time in ``result``."""
    from rich.progress import Progress

    records = records_for(train.values(), features)
    pairs = dataset_pairs(train.values(), ("shown", "hidden", "perf"))
    sources = _sources(train)
    started = time.perf_counter()
    with Progress() as progress:
        bar = progress.add_task(f"encoder on {len(pairs)} pairs", total=config.steps)

        done = {"steps": 0, "loss": float("nan")}

        def show(step: int, steps: int, loss: float) -> None:
            done.update(steps=step, loss=loss)
            progress.update(bar, completed=step, description=f"encoder, loss {loss:.3f}")

        model = fit_encoder(config, pairs, sources, records, {t.id: t.family for t in train.values()}, show)
    result.update(config=asdict(config), train_pairs=len(pairs), train_seconds=round(time.perf_counter() - started, 1),
                  steps_done=done["steps"], last_loss=round(done["loss"], 4))  # fmt: skip
    return model


if __name__ == "__main__":
    main()
