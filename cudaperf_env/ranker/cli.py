"""``cudaperf ranker train|eval|score``: train the pairwise ranker from the GPU labels, evaluate it, score a file.

``cudaperf_env/cli.py`` adds these with one call, ``add_ranker_commands(subparsers)``;
each command is also a plain function (:func:`train_command`, :func:`eval_command`,
:func:`score_command`) taking the parsed arguments and returning the exit status.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import platform
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cudaperf_env.ranker.features import records_for
from cudaperf_env.ranker.pairs import dataset_pairs
from cudaperf_env.ranker.score import DATA, MODEL_FILE, load_ranker, provenance_file
from cudaperf_env.ranker.train import TrainConfig, fit, pair_rows, task_weights
from cudaperf_env.tasks.schema import Task
from cudaperf_env.text import json_safe

SHIPPED = Path(str(DATA / MODEL_FILE))


def add_ranker_commands(subparsers: Any) -> None:
    """Adds ``ranker`` with its ``train``, ``eval`` and ``score`` subcommands to a ``cudaperf`` parser."""
    ranker = subparsers.add_parser("ranker", help="the learned pairwise ranker: train, evaluate, score")
    sub = ranker.add_subparsers(dest="ranker_command", required=True)

    train = sub.add_parser("train", help="train the pairwise model from the dataset's GPU labels")
    _data_args(train)
    train.add_argument("--variants", nargs="?", const="shipped", default=None, metavar="PATH",
                       help="also train on the GPU-labelled knob variants of the train tasks (a variant file, "
                            "default: the shipped one; its label streams sit next to it)")
    train.add_argument("--starter-labels", metavar="PATH",
                       help="also train on the hand-written starter tasks timed in this labeller stream (e.g. "
                            "benchmarks/results/starter_labels_h200.jsonl.gz); their figures must then come from "
                            "benchmarks/ranker_arms_heldout.py --starter-cv, never from the trained model")
    train.add_argument("--out", default=str(SHIPPED), help="model file to write (its provenance goes next to it)")
    train.add_argument("--kind", default="trees", choices=("trees", "logistic"), help="model kind")
    train.add_argument("--sources", default="static,parallelism", help="feature sources, comma-separated")
    train.add_argument("--seed", type=int, default=0, help="seed of the trees' sampling")
    train.add_argument("--rounds", type=int, default=300, help="boosting rounds")
    train.add_argument("--threads", type=int, default=1,
                       help="LightGBM threads (default 1: OpenMP spinning costs more than it saves on a shared box)")
    train.set_defaults(run=train_command)

    evaluate = sub.add_parser("eval", help="pairwise accuracy and Spearman on a split, against the structural score")
    _data_args(evaluate)
    evaluate.add_argument("--split", default="test", choices=("train", "validation", "test"), help="split")
    evaluate.add_argument("--model", help="model file (default: the shipped one)")
    evaluate.add_argument("--json", action="store_true", help="print the figures as JSON")
    evaluate.set_defaults(run=eval_command)

    score = sub.add_parser("score", help="P(a submission is faster than the task's baseline)")
    score.add_argument("--task", required=True, help="a task id (bundled or dataset) or a task file")
    score.add_argument("--submission", required=True, help="the submission's CUDA source file")
    score.add_argument("--model", help="model file (default: the shipped one)")
    score.add_argument("--json", action="store_true", help="print the result as JSON")
    score.set_defaults(run=score_command)


def _data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", help="dataset file (default: the shipped c2cuda.jsonl.gz, with its labels)")
    parser.add_argument("--features", help="feature records from `python -m cudaperf_env.ranker.features` "
                        "(missing ones are computed)")  # fmt: skip


def _tasks(args: argparse.Namespace, split: str) -> dict[str, Task]:
    from cudaperf_env.dataset import load_dataset

    return load_dataset(split, args.dataset) if args.dataset else load_dataset(split)


def _train_tasks(args: argparse.Namespace) -> dict[str, Task]:
    """The train split, with its labelled knob variants as extra implementations when ``--variants`` asks."""
    if getattr(args, "variants", None) is None:
        return _tasks(args, "train")
    from cudaperf_env.dataset.load import DATA_FILE
    from cudaperf_env.dataset.variants import VARIANTS_FILE, load_variant_tasks

    path = VARIANTS_FILE if args.variants == "shipped" else Path(args.variants)
    return load_variant_tasks("train", variants=path, dataset=args.dataset or DATA_FILE)


def _records(tasks: Mapping[str, Task], args: argparse.Namespace, title: str) -> dict[tuple[str, str], Any]:
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        bar = progress.add_task(title, total=None)
        return records_for(tasks.values(), args.features, lambda n, total: progress.update(bar, completed=n,
                                                                                            total=total))  # fmt: skip


def dataset_digest(path: str | Path | None = None) -> str:
    """sha256 (first 16 hex digits) of the dataset file and the label streams next to it."""
    from cudaperf_env.dataset.load import DATA_FILE

    data = Path(path) if path else DATA_FILE
    h = hashlib.sha256()
    for file in [data, *sorted(data.parent.glob("labels-*.jsonl.gz"))]:
        h.update(file.name.encode())
        h.update(file.read_bytes())
    return h.hexdigest()[:16]


def label_origin(tasks: Mapping[str, Task]) -> dict[str, str]:
    """Card, driver and date of the labels (each distinct value, comma-separated)."""
    seen: dict[str, set[str]] = {"card": set(), "driver": set(), "date": set()}
    for task in tasks.values():
        for impl in task.implementations:
            for label in impl.labels[:1]:
                for key in seen:
                    seen[key].add(getattr(label, key))
    return {k: ", ".join(sorted(v)) for k, v in seen.items()}


def train_command(args: argparse.Namespace) -> int:
    """Trains on the train split, evaluates on validation and test, writes the model and its provenance."""
    from rich.progress import Progress

    from cudaperf_env.ranker.evaluation import compare

    config = TrainConfig(kind=args.kind, sources=tuple(s.strip() for s in args.sources.split(",") if s.strip()),
                         seed=args.seed, rounds=args.rounds, threads=args.threads)  # fmt: skip
    started = time.perf_counter()
    dataset_train = _train_tasks(args)
    train_tasks = {**dataset_train, **_starter_tasks(args)}
    records = _records(train_tasks, args, "features of the training tasks")
    pairs = dataset_pairs(train_tasks.values(), config.pair_kinds, config.deadband)
    faster, slower, ctx, kept = pair_rows(pairs, records, config.features)
    weights = task_weights([pairs[i] for i in kept])
    with Progress() as progress:
        bar = progress.add_task(f"training on {len(kept)} pairs", total=config.rounds)
        model = fit(config, faster, slower, ctx, weights, lambda n, total: progress.update(bar, completed=n,
                                                                                         total=total))  # fmt: skip
    seconds = time.perf_counter() - started
    figures = {}
    for split in ("validation", "test"):
        tasks = _tasks(args, split)
        split_pairs = dataset_pairs(tasks.values(), ("perf",), config.deadband)
        split_records = _records(tasks, args, f"features of {split}")
        seen = {t.family for t in dataset_train.values()}  # the starter tasks' families are not the dataset's
        figures[split] = _headline(compare(model, split_pairs, split_records, tasks, seen_families=seen))
    provenance = {"model": Path(args.out).name, "dataset_digest": dataset_digest(args.dataset),
                  "labels": label_origin(train_tasks), "trained": datetime.date.today().isoformat(),
                  "machine": f"{platform.machine()} CPU, Python {platform.python_version()}",
                  "train_seconds": round(seconds, 1),
                  "features": f"from {Path(args.features).name}" if args.features else "extracted in the run",
                  "train_pairs": len(kept), "config": model.meta["config"], **_variant_provenance(args),
                  **_starter_provenance(args, len(train_tasks) - len(dataset_train)),
                  "metrics": figures, "command": "cudaperf ranker train " + " ".join(sys.argv[3:])}  # fmt: skip
    model = replace(model, meta={**model.meta, "dataset_digest": provenance["dataset_digest"]})
    model.save(args.out)
    provenance_file(args.out).write_text(json.dumps(json_safe(provenance), indent=2) + "\n", encoding="utf-8")
    print(json.dumps(json_safe({"out": args.out, **provenance}), indent=2))
    return 0


def _starter_tasks(args: argparse.Namespace) -> dict[str, Task]:
    """The labelled hand-written starter tasks when ``--starter-labels`` asks (their ids are not the dataset's)."""
    if getattr(args, "starter_labels", None) is None:
        return {}
    from cudaperf_env.ranker.starter import labelled_starter_tasks

    return labelled_starter_tasks(args.starter_labels)


def _starter_provenance(args: argparse.Namespace, tasks: int) -> dict[str, Any]:
    if getattr(args, "starter_labels", None) is None:
        return {}
    path = Path(args.starter_labels)
    return {"starter_labels": {"file": path.name, "digest": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
                               "tasks": tasks}}  # fmt: skip


def _variant_provenance(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "variants", None) is None:
        return {}
    from cudaperf_env.dataset.variants import VARIANTS_FILE, label_streams

    path = VARIANTS_FILE if args.variants == "shipped" else Path(args.variants)
    h = hashlib.sha256()
    for file in [path, *label_streams(path)]:
        h.update(file.name.encode())
        h.update(file.read_bytes())
    return {"variants": {"file": path.name, "digest": h.hexdigest()[:16]}}


def _headline(result: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("pairwise_accuracy", "pairs", "unseen_families", "spearman", "spearman_mean_per_task")
    return {**{k: result[k] for k in keys}, "structural": {k: result["structural"][k] for k in keys}}


def eval_command(args: argparse.Namespace) -> int:
    """Prints the ranker's figures on a split next to the structural score's and a coin's, on the same pairs."""
    from cudaperf_env.ranker.evaluation import compare

    ranker = load_ranker(args.model)
    tasks = _tasks(args, args.split)
    pairs = dataset_pairs(tasks.values(), ("perf",), float(ranker.model.meta.get("config", {}).get("deadband", 0.03)))
    seen = {t.family for t in _tasks(args, "train").values()}
    result = compare(ranker.model, pairs, _records(tasks, args, f"features of {args.split}"), tasks, seen_families=seen)
    result = {"split": args.split, "tasks": len(tasks), **result}
    if args.json:
        print(json.dumps(json_safe(result), indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Ranker on the {args.split} split ({len(tasks)} tasks, {result['pairs']} perf pairs)")
    for column in ("scorer", "pairwise accuracy", "unseen families", "Spearman vs speedup", "mean per-task Spearman"):
        table.add_column(column, justify="left" if column == "scorer" else "right")
    for name, figures in (("ranker", result), ("structural", result["structural"]), ("random", result["random"])):
        table.add_row(name, _fmt(figures["pairwise_accuracy"]), _fmt(figures["unseen_families"]["pairwise_accuracy"]),
                      _fmt(figures["spearman"]),
                      _fmt(figures["spearman_mean_per_task"]))  # fmt: skip
    table.caption = paired_line(result["vs_structural"])
    Console().print(table)
    return 0


def paired_line(paired: Mapping[str, Any]) -> str:
    """The ranker's accuracy minus the structural score's, with its interval and sign test, in one line."""
    lo, hi = paired["ci95"]
    return (f"ranker - structural: {paired['difference']:+.3f} (95% CI over tasks {lo:+.3f} .. {hi:+.3f}; "
            f"{paired['wins']:g} pairs won, {paired['losses']:g} lost, sign test p = {paired['p_value']:.2g})")


def score_command(args: argparse.Namespace) -> int:
    """Prints ``ranker_score`` of one submission file against a task's baseline."""
    from cudaperf_env.errors import TaskNotFoundError

    try:
        task = resolve_task(args.task)
    except TaskNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        code = Path(args.submission).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"error: cannot read --submission {args.submission}: {exc}", file=sys.stderr)
        return 2
    value = load_ranker(args.model).score(task, code, None, None)
    if args.json:
        print(json.dumps({"task": task.id, "ranker_score": value if math.isfinite(value) else None}))
    else:
        print(f"ranker_score {value:.4f}" if math.isfinite(value) else "ranker_score nan (could not score)")
    return 0


def resolve_task(spec: str) -> Task:
    """A task from a task file path, a bundled task id or a dataset task id."""
    from cudaperf_env.errors import TaskNotFoundError
    from cudaperf_env.tasks import load_task, load_tasks

    if Path(spec).is_file():
        return load_task(spec)
    bundled = load_tasks()
    if spec in bundled:
        return bundled[spec]
    from cudaperf_env.dataset import load_dataset

    dataset = load_dataset(labels=False)
    if spec in dataset:
        return dataset[spec]
    raise TaskNotFoundError(f"no task {spec!r}: not a file, a bundled task or a dataset task (e.g. "
                            f"c2cuda/saxpy_f32 or c2cuda/col_reduce_0001)")  # fmt: skip


def _fmt(value: float) -> str:
    return f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else "-"


