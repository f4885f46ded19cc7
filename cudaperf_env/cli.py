"""The ``cudaperf`` command: list and show tasks, evaluate a submission, run the demo."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agents.cli import add_agent_commands
from cudaperf_env.datagen.cli import add_dataset_commands
from cudaperf_env.errors import CudaPerfError
from cudaperf_env.ranker.cli import add_ranker_commands

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (0 whatever the verdict; 2 for usage errors)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except (CudaPerfError, OSError, ImportError) as exc:  # ImportError: an optional extra is missing; says which
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cudaperf", description=__doc__)
    sub = parser.add_subparsers(title="commands")
    add_dataset_commands(sub)
    add_ranker_commands(sub)
    add_agent_commands(sub)

    tasks = sub.add_parser("tasks", help="list or show tasks").add_subparsers(title="tasks commands")
    p = tasks.add_parser("list", help="list the tasks")
    p.add_argument("--task-dir", help="directory of task files (default: bundled tasks)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--kind", choices=["c2cuda", "torch2cuda"], help="only tasks of this kind")
    p.set_defaults(run=_tasks_list)
    p = tasks.add_parser("show", help="show one task's prompt and implementations")
    p.add_argument("id", help="task id (starter or dataset) or task file")
    p.add_argument("--task-dir")
    p.add_argument("--mode", default="native", choices=["native", "kernelbench"],
                   help="the prompt of this submission mode (kernelbench: torch2cuda tasks)")
    p.set_defaults(run=_tasks_show)
    p = tasks.add_parser("new", help="scaffold a task file from a C function (review the '# check:' lines)")
    p.add_argument("name", help="task name: lowercase letters, digits and '_' (the id becomes c2cuda/NAME)")
    p.add_argument("--from", dest="source", required=True, help="C file defining the function")
    p.add_argument("--entry", help="the function, when the file defines several (default: the last)")
    p.add_argument("--out", default=".", help="folder to write NAME.yaml into")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(run=_tasks_new)
    p = tasks.add_parser("import-kernelbench", help="convert KernelBench-format problem files into torch2cuda tasks")
    p.add_argument("directory", help="folder of problem files (*.py, searched recursively)")
    p.add_argument("--out", required=True, help="folder to write the task files and import-report.json into")
    p.add_argument("--no-check", action="store_true", help="skip running `tasks check` on the converted files")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=_tasks_import_kernelbench)
    p = tasks.add_parser("check", help="validate a folder of task files and run each reference (CPU)")
    p.add_argument("directory")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(run=_tasks_check)

    p = sub.add_parser("eval", help="evaluate a submission on a task")
    p.add_argument("--task", required=True, help="task id (starter or dataset) or path of a task file")
    p.add_argument("--submission", required=True,
                   help="CUDA source file (.cu: compiled as is) or an agent reply (the last ```cuda block); "
                        "with --mode kernelbench a .py defining ModelNew or a reply with a ```python block")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.add_argument("--mode", default="native", choices=["native", "kernelbench"],
                   help="submission mode: native CUDA C++, or KernelBench's Python ModelNew (GPU only)")
    p.add_argument("--task-dir")
    p.add_argument("--seed", type=int, default=0, help="seed of the input values")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_eval)

    p = sub.add_parser("demo", help="play a scripted agent through one episode and show the rewards")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.add_argument("--kind", default="c2cuda", choices=["c2cuda", "torch2cuda"], help="which env family to play")
    p.set_defaults(run=_demo)
    return parser


def _tasks_list(args: argparse.Namespace) -> None:
    from cudaperf_env.tasks import load_tasks

    tasks = load_tasks(args.task_dir, args.kind)
    rows: list[dict[str, Any]] = [
        {"id": t.id, "kind": t.kind, "family": t.family, "configs": len(t.correctness_configs),
         "shown_configs": len(t.configs), "implementations": [i.name for i in t.implementations]}  # fmt: skip
        for t in tasks.values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} tasks (`cudaperf dataset stats` describes the generated dataset)")
    table.add_column("id", no_wrap=True, overflow="ignore")
    table.add_column("family")
    table.add_column("configs", justify="right")
    table.add_column("implementations")
    for r in rows:
        table.add_row(escape(r["id"]), escape(r["family"]), str(r["configs"]), escape(", ".join(r["implementations"])))
    Console().print(table)


def _tasks_show(args: argparse.Namespace) -> None:
    from cudaperf_env.dataset import find_task
    from cudaperf_env.prompt import task_prompt

    task = find_task(args.id, args.task_dir)
    print(task_prompt(task, args.mode))
    if task.implementations:
        print(f"\nImplementations (baseline: {task.baseline or 'none'}):")
        for impl in task.implementations:
            print(f"- {impl.name}: {', '.join(impl.strategies)}")


def _tasks_new(args: argparse.Namespace) -> None:
    from cudaperf_env.tasks.scaffold import scaffold

    text = scaffold(args.name, Path(args.source).read_text(), args.entry)
    out = Path(args.out) / f"{args.name}.yaml"
    if out.exists() and not args.force:
        raise FileExistsError(f"{out} exists; pass --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}: review the lines marked '# check:', then run `cudaperf tasks check {out.parent}`")


def _tasks_import_kernelbench(args: argparse.Namespace) -> int:
    from cudaperf_env.datagen.kernelbench_write import import_kernelbench

    report = import_kernelbench(args.directory, args.out, check=not args.no_check)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for row in report["converted"]:
            print(f"converted {row['file']} -> {row['path']}")
        for row in report["not_converted"]:
            print(f"NOT converted {row['file']}: {row['reason']}")
        print(f"{len(report['converted'])} of {report['files']} files converted; "
              f"report in {args.out}/import-report.json")
    return 0 if report["converted"] or not report["files"] else 1


def _tasks_check(args: argparse.Namespace) -> int:
    from rich.progress import track

    from cudaperf_env.datagen.check import check_folder, task_files

    total = len(task_files(args.directory))
    if not total:
        raise FileNotFoundError(f"no *.yaml task files under {args.directory}")
    results = list(track(check_folder(args.directory), total=total, description="checking tasks",
                         console=Console(stderr=True), disable=args.json))  # fmt: skip
    if args.json:
        print(json.dumps([{"path": r.path, "id": r.task_id, "ok": r.ok, "errors": list(r.errors),
                           "warnings": list(r.warnings)} for r in results], indent=2))  # fmt: skip
    else:
        console = Console()
        for r in results:
            mark = "[green]ok[/green]" if r.ok else "[red]FAIL[/red]"
            console.print(f"{mark} {escape(r.task_id or r.path)}", highlight=False)
            for line in r.errors:
                console.print(f"  [red]error:[/red] {escape(line)}", highlight=False)
            for line in r.warnings:
                console.print(f"  [yellow]warning:[/yellow] {escape(line)}", highlight=False)
        console.print(f"{sum(r.ok for r in results)} of {len(results)} task files ok")
    return 0 if all(r.ok for r in results) else 1


def _eval(args: argparse.Namespace) -> int:
    from cudaperf_env.dataset import find_task
    from cudaperf_env.evaluate import EvalOptions
    from cudaperf_env.kinds import check_mode
    from cudaperf_env.turn import Grader

    task = find_task(args.task, args.task_dir)
    action = _as_reply(Path(args.submission))
    try:
        check_mode(args.mode, task.kind)
        grader = Grader.on(args.backend, EvalOptions(mode=args.mode))
    except ValueError as exc:  # a mode this task or backend does not take: a usage error
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return 2
    turn = grader.grade(task, action, seed=args.seed)
    if args.json:
        print(json.dumps(turn.as_json(), indent=2))
        return 0
    print(turn.feedback)
    terms = "  ".join(f"{k} {v:+.3f}" for k, v in turn.reward.terms.items())
    print(f"\nreward {turn.reward.total:+.3f}  {terms}")
    return 0


def _as_reply(path: Path) -> str:
    """The file's text as an agent reply: a source file (``.cu``, ...) without a fence is its own code block."""
    text = path.read_bytes().decode("utf-8", "replace")
    if path.suffix in SOURCE_SUFFIXES and "```" not in text:
        return f"```cuda\n{text}\n```"
    return text


def _demo(args: argparse.Namespace) -> None:
    from cudaperf_env.demo import run_demo

    run_demo(args.backend, Console(), args.kind)


if __name__ == "__main__":
    sys.exit(main())
