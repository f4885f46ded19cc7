"""``cudaperf dataset build|card|stats|variants``: the dataset commands, added to the project CLI's subparsers.

Also runnable alone: ``python -m cudaperf_env.datagen.cli build ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from cudaperf_env.datagen.build import DATA_FILES, BuildConfig, build
from cudaperf_env.datagen.registry import family_names
from cudaperf_env.datagen.verify import Verdict
from cudaperf_env.dataset.load import load_records, load_splits
from cudaperf_env.dataset.stats import dataset_stats


def add_dataset_commands(subparsers: Any) -> None:
    """Add ``dataset build``, ``card`` and ``stats`` to ``subparsers`` (from ``add_subparsers``)."""
    dataset = subparsers.add_parser("dataset", help="build or describe the C-to-CUDA dataset")
    sub = dataset.add_subparsers(title="dataset commands")
    p = sub.add_parser("build", help="generate, dedupe, verify (CPU backend) and write the dataset")
    p.add_argument("--families", nargs="+", default=[], metavar="FAMILY",
                   help=f"families to build (default: all): {', '.join(family_names())}")
    p.add_argument("--kind", choices=sorted(DATA_FILES), default="c2cuda", help="which families (c2cuda or torch2cuda)")
    p.add_argument("--per-family", type=int, default=12, help="candidates generated per family")
    p.add_argument("--seed", type=int, default=0, help="seed of the generators and the splits")
    p.add_argument("--workers", type=int, default=0, help="verification processes (default: one per core)")
    p.add_argument("--out", type=Path, default=None, help="data file (splits and report go next to it; default: "
                   "the shipped file of the kind)")
    p.add_argument("--card", type=Path, default=None, help="dataset card to write (default: docs/dataset-card.md "
                   "for the shipped file, none otherwise)")
    p.add_argument("--no-verify", action="store_true", help="skip verification (generator checks only)")
    p.add_argument("--verdicts", type=Path, default=None,
                   help="verdict log (JSONL, appended): a rerun verifies only what it lacks (resume)")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="start no verification after this many seconds (needs --verdicts; rerun to go on)")
    p.set_defaults(run=_build)
    p = sub.add_parser("card", help="re-render the dataset card (after new GPU labels, without a rebuild)")
    p.add_argument("--kind", choices=sorted(DATA_FILES), default="c2cuda", help="the shipped file of this kind")
    p.add_argument("--path", type=Path, default=None, help="data file (default: the shipped file of --kind)")
    p.add_argument("--out", type=Path, default=None,
                   help="card to write (default: docs/dataset-card.md, docs/dataset-card-torch2cuda.md)")
    p.set_defaults(run=_card)
    p = sub.add_parser("stats", help="statistics of the shipped dataset")
    p.add_argument("--kind", choices=sorted(DATA_FILES), default="c2cuda", help="the shipped file of this kind")
    p.add_argument("--path", type=Path, default=None, help="data file (default: the shipped file of --kind)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_stats)
    _add_variants_command(sub)


def _add_variants_command(sub: Any) -> None:
    from cudaperf_env.datagen.variant_verify import DONE_FILE, RESULTS_FILE, VARIANTS_FILE

    p = sub.add_parser("variants", help="knob variants of the dataset's implementations, verified on the CPU backend")
    p.add_argument("--split", choices=("train", "validation", "test"), default="train", help="tasks of this split")
    p.add_argument("--limit", type=int, default=None, help="at most this many tasks (in the labeller's hashed order)")
    p.add_argument("--per-impl", type=int, default=4, help="variants chosen per implementation")
    p.add_argument("--seed", type=int, default=0, help="seed of the choice")
    p.add_argument("--workers", type=int, default=1, help="verification processes")
    p.add_argument("--done", type=Path, default=DONE_FILE, help="log of verified records (resume; appended to)")
    p.add_argument("--out", type=Path, default=VARIANTS_FILE, help="variant data file (verified-correct only)")
    p.add_argument("--results", type=Path, default=RESULTS_FILE, help="results JSON (failures by knob, seconds)")
    p.add_argument("--deadline-s", type=float, default=None, help="stop starting variants after this many seconds")
    p.set_defaults(run=_variants)


def _build(args: argparse.Namespace) -> int:
    from cudaperf_env.datagen.build import CARD_FILES

    args.out = args.out or DATA_FILES[args.kind]
    if args.deadline_s is not None and args.verdicts is None:
        Console(stderr=True).print("error: --deadline-s needs --verdicts FILE (where the verdicts so far are kept)")
        return 2
    card = args.card or (CARD_FILES[args.kind] if args.out.resolve() == DATA_FILES[args.kind].resolve() else None)
    config = BuildConfig(families=tuple(args.families), per_family=args.per_family, seed=args.seed,
                         workers=args.workers, out=args.out, card=card, verify=not args.no_verify,
                         kind=args.kind, verdicts=args.verdicts, deadline_s=args.deadline_s)  # fmt: skip
    columns = (TextColumn("verifying"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[kept]} kept"),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=Console(stderr=True)) as progress:
        bar = progress.add_task("verify", total=None, kept=0)
        kept = 0

        def on_event(phase: str, total: int, verdict: Verdict | None) -> None:
            nonlocal kept
            if phase == "verify":
                progress.update(bar, total=total)
            elif verdict is not None:
                kept += verdict.ok
                progress.update(bar, advance=1, kept=kept)

        report = build(config, on_event)
    console = Console()
    if not report.get("complete", True):
        console.print(f"{report['verified']} of {report['unique']} candidates verified ({report['verified_now']} now, "
                      f"{report['build_seconds']} s); nothing written but {args.verdicts}: run the same command "
                      "again to go on")  # fmt: skip
        return 0
    console.print(f"{report['kept']} tasks kept of {report['candidates']} candidates "
                  f"({report['duplicates']} duplicates, drops {report['drops'] or 'none'}) "
                  f"in {report['build_seconds']} s -> {args.out}")  # fmt: skip
    return 0


def _card(args: argparse.Namespace) -> int:
    from cudaperf_env.datagen.build import CARD_FILES, write_card

    path = args.path or DATA_FILES[args.kind]
    out = args.out or CARD_FILES[args.kind]
    write_card(path, out, args.kind)
    Console().print(f"card written to {out}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    args.path = args.path or DATA_FILES[args.kind]
    stats = dataset_stats(load_records(args.path), load_splits(args.path))
    if args.json:
        print(json.dumps(stats, indent=1, sort_keys=True))
        return 0
    table = Table(title=f"dataset {args.path.name}")
    table.add_column("figure")
    table.add_column("value")
    for key, value in stats.items():
        table.add_row(key, json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    Console().print(table)
    return 0


def _variants(args: argparse.Namespace) -> int:
    import time

    from cudaperf_env.datagen.label import label_order
    from cudaperf_env.datagen.variant_verify import (
        VariantRunConfig,
        compact_log,
        read_log,
        run,
        summarize,
        write_variants,
    )
    from cudaperf_env.dataset.load import load_dataset

    config = VariantRunConfig(split=args.split, limit=args.limit, per_impl=args.per_impl, seed=args.seed,
                              workers=args.workers, done=args.done, out=args.out, results=args.results)  # fmt: skip
    tasks = label_order(load_dataset(args.split, labels=False).values())[: args.limit]
    deadline = time.time() + args.deadline_s if args.deadline_s else float("inf")
    columns = (TextColumn("verifying variants"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[ok]} ok"),
               TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=Console(stderr=True)) as progress:
        bar = progress.add_task("variants", total=None, ok=0)
        ok = 0

        def on_record(record: dict[str, Any], total: int) -> None:
            nonlocal ok
            ok += record["verdict"] == "ok"
            progress.update(bar, advance=1, total=total, ok=ok)

        records = run(config, tasks, on_record, deadline)
    log = read_log(args.done)
    compact_log(args.done, log)
    kept = write_variants(log, args.out)
    if args.results:
        given = sys.argv[sys.argv.index("variants") + 1 :] if "variants" in sys.argv else []
        command = "cudaperf dataset variants " + " ".join(given)
        args.results.write_text(json.dumps(summarize(log, command), indent=1) + "\n", encoding="utf-8")
    Console().print(f"{sum(r['verdict'] == 'ok' for r in records)} of {len(records)} variants verified now; "
                    f"{kept} verified-correct in all -> {args.out}")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the dataset commands alone (``python -m cudaperf_env.datagen.cli``)."""
    parser = argparse.ArgumentParser(prog="cudaperf")
    add_dataset_commands(parser.add_subparsers(title="commands"))
    args = parser.parse_args(["dataset", *(argv if argv is not None else sys.argv[1:])])
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
