"""The ``cudaperf`` command: list and show tasks, evaluate a submission, run the demo."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cudaperf_env.datagen.cli import add_dataset_commands
from cudaperf_env.errors import CudaPerfError


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (0 whatever the verdict; 2 for usage errors)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except (CudaPerfError, OSError) as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}", highlight=False)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cudaperf", description=__doc__)
    sub = parser.add_subparsers(title="commands")
    add_dataset_commands(sub)

    tasks = sub.add_parser("tasks", help="list or show tasks").add_subparsers(title="tasks commands")
    p = tasks.add_parser("list", help="list the tasks")
    p.add_argument("--task-dir", help="directory of task files (default: bundled tasks)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=_tasks_list)
    p = tasks.add_parser("show", help="show one task's prompt and implementations")
    p.add_argument("id", help="task id or task file")
    p.add_argument("--task-dir")
    p.set_defaults(run=_tasks_show)

    p = sub.add_parser("eval", help="evaluate a submission on a task")
    p.add_argument("--task", required=True, help="task id or path of a task file")
    p.add_argument("--submission", required=True, help="file with the CUDA source (or an agent reply)")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.add_argument("--task-dir")
    p.add_argument("--seed", type=int, default=0, help="seed of the input values")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_eval)

    p = sub.add_parser("demo", help="play a scripted agent through one episode and show the rewards")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.set_defaults(run=_demo)
    return parser


def _tasks_list(args: argparse.Namespace) -> None:
    from cudaperf_env.tasks import load_tasks

    tasks = load_tasks(args.task_dir)
    rows: list[dict[str, Any]] = [
        {"id": t.id, "kind": t.kind, "family": t.family, "configs": len(t.configs),
         "implementations": [i.name for i in t.implementations]}  # fmt: skip
        for t in tasks.values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} tasks")
    for column in ("id", "family", "configs", "implementations"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["id"], r["family"], str(r["configs"]), ", ".join(r["implementations"]))
    Console().print(table)


def _tasks_show(args: argparse.Namespace) -> None:
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import find_task

    task = find_task(args.id, args.task_dir)
    print(task_prompt(task))
    print(f"\nImplementations (baseline: {task.baseline}):")
    for impl in task.implementations:
        print(f"- {impl.name}: {', '.join(impl.strategies)}")


def _eval(args: argparse.Namespace) -> None:
    from cudaperf_env.backends import make_backend
    from cudaperf_env.env import outcome_of
    from cudaperf_env.evaluate import Evaluator
    from cudaperf_env.feedback import feedback
    from cudaperf_env.reward import compute_reward
    from cudaperf_env.tasks import find_task

    task = find_task(args.task, args.task_dir)
    action = Path(args.submission).read_bytes().decode("utf-8", "replace")
    evaluation = Evaluator(make_backend(args.backend)).evaluate(task, action, seed=args.seed)
    reward = compute_reward(outcome_of(evaluation))
    result: dict[str, Any] = {
        "task_id": task.id,
        "status": evaluation.status,
        "compiled": evaluation.compiled,
        "correct": evaluation.correct,
        "speedup": _json_number(evaluation.speedup),
        "speedup_lcb": _json_number(evaluation.speedup_lcb),
        "timing_flags": list(evaluation.timing_flags),
        "device": dict(evaluation.device),
        "runtime_ms": _json_number(evaluation.runtime_ms),
        "baseline_ms": _json_number(evaluation.baseline_ms),
        "speedup_vs_c": _json_number(evaluation.speedup_vs_c),
        "backend": evaluation.backend,
        "reward": reward.total,
        "reward_terms": reward.terms,
        "feedback": feedback(task, evaluation),
        "seconds": dict(evaluation.seconds),
        "structural_score": None,
        "features": {},
    }
    if evaluation.structure is not None:
        structure = evaluation.structure.as_dict()
        result.update(structural_score=structure["structural_score"], features=structure["features"],
                      hints=structure["hints"])  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(result["feedback"])
        print(f"\nreward {reward.total:+.3f}  " + "  ".join(f"{k} {v:+.3f}" for k, v in reward.terms.items()))


def _demo(args: argparse.Namespace) -> None:
    from cudaperf_env.demo import run_demo

    run_demo(args.backend, Console())


def _json_number(x: float) -> float | None:
    return None if math.isnan(x) else x


if __name__ == "__main__":
    sys.exit(main())
