"""The ranker against the structural score on hand-written kernels: the starter tasks' implementation pairs.

No generator wrote the starter tasks' implementations, and the ranker never trained on
them. A GPU labeller stream of them (``benchmarks/results/starter_labels_h200.jsonl.gz``:
34 tasks on an H200; ``starter_labels_h100.jsonl.gz``: 55 tasks on an H100) is folded
into the tasks as labels; pairs are the
implementation pairs told apart beyond noise on each perf configuration (as for
the dataset), and on the shown configurations separately.

Run: ``python benchmarks/ranker_starter.py [--model M.json] [--labels STREAM] [--out FILE.json]`` (committed:
``benchmarks/results/ranker_starter_h200.json`` and ``ranker_starter_h100.json``; a stream of another card comes from
``python -m cudaperf_env.datagen.label --source starter --out STREAM`` run on it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cudaperf_env.ranker import load_ranker, starter
from cudaperf_env.ranker.cli import paired_line
from cudaperf_env.ranker.evaluation import compare
from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.tasks import Task
from cudaperf_env.text import json_safe

LABELS = Path(__file__).parent / "results" / "starter_labels_h200.jsonl.gz"


def labelled_starter_tasks(path: Path = LABELS) -> dict[str, Task]:
    """The bundled C-to-CUDA tasks with the committed H200 labels (:mod:`cudaperf_env.ranker.starter`)."""
    return starter.labelled_starter_tasks(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--model", help="model file (default: the shipped one)")
    parser.add_argument("--labels", type=Path, default=LABELS, help="starter label stream (default: %(default)s)")
    args = parser.parse_args()
    tasks = labelled_starter_tasks(args.labels)
    records = records_for(tasks.values())
    model = load_ranker(args.model).model
    cards = {label.card for t in tasks.values() for i in t.implementations for label in i.labels[:1]}
    result = {"card": ", ".join(sorted(cards)), "source": args.labels.name, "tasks": len(tasks)}
    for kind in ("perf", "shown"):
        pairs = dataset_pairs(tasks.values(), (kind,))
        figures = compare(model, pairs, records, tasks)
        figures.pop("per_family")
        for name in ("structural", "random"):
            figures[name].pop("per_family")
        result[kind] = figures
        structural, coin = figures["structural"], figures["random"]
        print(f"{kind}: {len(pairs)} pairs; ranker {figures['pairwise_accuracy']:.3f}, structural "
              f"{structural['pairwise_accuracy']:.3f}, random {coin['pairwise_accuracy']:.3f}; Spearman vs speedup "
              f"ranker {figures['spearman']:.3f}, structural {structural['spearman']:.3f}")
        print(f"  {paired_line(figures['vs_structural'])}")
    meta = {label.driver for t in tasks.values() for i in t.implementations for label in i.labels[:1]}
    dates = {label.date for t in tasks.values() for i in t.implementations for label in i.labels[:1]}
    result.update({"driver": ", ".join(sorted(meta)), "date": ", ".join(sorted(dates))})
    if args.out:
        Path(args.out).write_text(json.dumps(json_safe(result), indent=2) + "\n")


if __name__ == "__main__":
    main()
