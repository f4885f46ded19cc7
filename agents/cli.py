"""The agent's commands, added by :func:`add_agent_commands`: ``agent run``, ``evaluate``, ``train grpo``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from agents.card import share_card_with_timings
from agents.records import TurnRecord


def add_agent_commands(subparsers: Any) -> None:
    """Add ``agent run`` and ``evaluate`` to the ``cudaperf`` command's subparsers."""
    agent = subparsers.add_parser("agent", help="run the bundled LLM agent").add_subparsers(title="agent commands")
    p = agent.add_parser("run", help="roll the agent out on a task or a split; JSONL records and a summary")
    _task_args(p)
    _policy_args(p)
    p.add_argument("--out", default="trajectories.jsonl", help="JSONL file of turn records (default: %(default)s)")
    p.add_argument("--show", action=argparse.BooleanOptionalAction, default=None,
                   help="print every reply and its feedback (default: on for one task)")  # fmt: skip
    p.set_defaults(run=_run)

    p = subparsers.add_parser("evaluate", help="the evaluation harness: pass@k, fast_p, per-turn tables, plots")
    _task_args(p, required=False)
    _policy_args(p)
    p.add_argument("--trajectories", help="report on an existing JSONL trajectory file instead of running a policy")
    p.add_argument("--out-dir", default="eval", help="where report.json, the plots and trajectories.jsonl go")
    p.add_argument("--no-plots", action="store_true", help="write report.json only")
    p.set_defaults(run=_evaluate)

    train = subparsers.add_parser("train", help="train the agent's model").add_subparsers(title="train commands")
    p = train.add_parser("grpo", help="multi-turn GRPO with the env's reward (docs/grpo.md)")
    _grpo_args(p)
    p.set_defaults(run=_train_grpo)


def _grpo_args(p: argparse.ArgumentParser) -> None:
    from agents.grpo.config import add_config_args

    add_config_args(p)


def _train_grpo(args: argparse.Namespace) -> int:
    from agents.grpo.trainer import run_cli

    return run_cli(args)


def _task_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    group = p.add_mutually_exclusive_group(required=required)
    group.add_argument("--task", action="append", help="task id or task file (repeatable)")
    group.add_argument("--split", action="append", choices=["train", "validation", "test"],
                       help="a split of the shipped dataset (repeatable: the splits are rolled out together, "
                            "each reported apart)")  # fmt: skip
    group.add_argument("--task-dir", help="every task in a directory of task files")
    p.add_argument("--limit", type=int, help="only the first N tasks (of each split)")
    p.add_argument("--spread", action="store_true",
                   help="with --limit: N tasks round-robin over the families instead of the first N")  # fmt: skip


def _policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", default="transformers", choices=["transformers", "vllm", "openai"])
    p.add_argument("--model", help="local model directory or .gguf file (default: the embedded SmolLM2-135M); "
                                   "for --policy openai, the served model's name")  # fmt: skip
    p.add_argument("--adapter", help="LoRA adapter directory (transformers, vllm); default with the embedded "
                                     "model: the shipped SFT adapter; 'none': the base model")  # fmt: skip
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1", help="OpenAI-compatible server (openai)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable with the API key")
    p.add_argument("--device", default="auto", help="transformers: cpu, cuda or auto")
    p.add_argument("--static-cache", action="store_true",
                   help="transformers: a static KV cache, compiled on a GPU (faster per token after a compile)")
    p.add_argument("--turns", type=int, default=3, help="replies per trajectory (default: %(default)s)")
    p.add_argument("--group", type=int, default=1, help="trajectories per task, G (default: %(default)s)")
    p.add_argument("--batch-tasks", type=int, default=8,
                   help="tasks rolled out together: one generation call per turn (default: %(default)s)")  # fmt: skip
    p.add_argument("--max-tokens", type=int, default=512, help="new tokens per reply (default: %(default)s)")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--repetition-penalty", type=float, default=1.1,
                   help="1.0 turns it off; small models loop without it (default: %(default)s)")  # fmt: skip
    p.add_argument("--source-tokens-only", action=argparse.BooleanOptionalAction, default=True,
                   help="sample only tokens of printable ASCII, tabs and newlines, as a CUDA source is written "
                        "(transformers, vllm; default: on)")  # fmt: skip
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.add_argument("--ray", metavar="ADDRESS",
                   help="grade on a Ray evaluator pool: a cluster address, 'auto', or 'local' (start one here)")
    p.add_argument("--seed", type=int, default=0, help="seed of sampling and of the graded inputs")


def _tasks(args: argparse.Namespace) -> list[Any]:
    from cudaperf_env.dataset import find_task  # starter tasks, task files and the dataset's ids
    from cudaperf_env.tasks import load_tasks

    if args.split:
        from cudaperf_env.dataset import load_dataset

        return [t for split in dict.fromkeys(args.split)
                for t in _limited(list(load_dataset(split, labels=False).values()), args)]  # fmt: skip
    if args.task:
        return _limited([find_task(t) for t in args.task], args)
    return _limited(list(load_tasks(args.task_dir).values()), args)


def _limited(tasks: list[Any], args: argparse.Namespace) -> list[Any]:
    """``--limit`` tasks: the first ones, or with ``--spread`` round-robin over the families."""
    if args.limit and getattr(args, "spread", False):
        from agents.evaluate import spread_over_families

        return spread_over_families(tasks, args.limit)
    return tasks[: args.limit] if args.limit else tasks


def _policy(args: argparse.Namespace) -> Any:
    from agents.policies import make_policy

    if args.policy == "openai":
        return make_policy("openai", args.model, base_url=args.base_url, api_key_env=args.api_key_env)
    kwargs: dict[str, Any] = {"adapter": args.adapter}
    if args.policy == "transformers":
        kwargs.update(device=args.device, static_cache=args.static_cache)
    return make_policy(args.policy, args.model, **kwargs)


def _config(args: argparse.Namespace) -> Any:
    from agents.policies.base import Sampling
    from agents.rollout import RolloutConfig

    sampling = Sampling(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                        repetition_penalty=args.repetition_penalty,
                        source_tokens_only=args.source_tokens_only)  # fmt: skip
    return RolloutConfig(turns=args.turns, group=args.group, sampling=sampling, seed=args.seed)


def _evaluator(backend: str, ray: str | None) -> Any:
    """The local evaluator, or a Ray pool of them (one actor per GPU, or per core for the CPU backend)."""
    if not ray:
        from cudaperf_env.backends import make_backend
        from cudaperf_env.evaluate import Evaluator

        return Evaluator(make_backend(backend))
    from cudaperf_env.integrations.ray import EvaluatorPool

    return EvaluatorPool(backend, address=None if ray == "local" else ray)


def _roll(args: argparse.Namespace, out: Path, show: bool, console: Console) -> list[TurnRecord]:
    from agents.evaluate import evaluate_policy

    tasks = _tasks(args)
    config = _config(args)
    with console.status(f"loading the {args.policy} policy ..."):
        policy = _policy(args)
    evaluator = _evaluator(args.backend, args.ray)
    share_card_with_timings(policy, evaluator)  # a local model on the grading card: timings still alone
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("turns", total=len(tasks) * config.turns)

        def on_turn(task: Any, number: int, records: list[TurnRecord]) -> None:
            progress.update(bar, description=f"{task.id} turn {number}", advance=1)
            if show:
                for r in records:
                    _show(console, r)

        try:
            records = evaluate_policy(policy, tasks, evaluator, config, out, on_turn, batch_tasks=args.batch_tasks)
        finally:
            if hasattr(evaluator, "close"):  # a Ray pool: its actors
                evaluator.close()
        progress.update(bar, completed=len(tasks) * config.turns)
    return records


def _run(args: argparse.Namespace) -> int:
    console = Console()
    start = time.perf_counter()
    show = args.show if args.show is not None else bool(args.task) and len(args.task) == 1
    records = _roll(args, Path(args.out), show, console)
    console.print(_summary(records))
    console.print(f"{len(records)} turn records in {args.out} ({time.perf_counter() - start:.1f} s)")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from agents.evaluate import write_report
    from agents.records import read_records

    console = Console()
    out_dir = Path(args.out_dir)
    if args.trajectories:
        records = read_records(args.trajectories)
    elif args.task or args.split or args.task_dir:
        records = _roll(args, out_dir / "trajectories.jsonl", False, console)
    else:
        console.print("[red]error:[/red] give --task, --split, --task-dir or --trajectories FILE")
        return 2
    report = write_report(records, out_dir, plots=not args.no_plots, splits=_splits(args))
    console.print(_report_table(report))
    console.print(f"report: {out_dir / 'report.json'}")
    return 0


def _splits(args: argparse.Namespace) -> dict[str, list[str]] | None:
    """Each requested split's task ids, where more than one split was asked for (rolled out or in a file)."""
    names = list(dict.fromkeys(args.split or ()))
    if len(names) < 2:
        return None
    from cudaperf_env.dataset import load_splits

    ids = load_splits()
    return {name: ids[name] for name in names}


def _show(console: Console, r: TurnRecord) -> None:
    title = f"{r.task_id} trajectory {r.trajectory} turn {r.turn}: {r.status} (reward {r.reward:+.2f})"
    # Text(), not a str: a reply's "[...]" must not be read as rich markup
    console.print(Panel(Text(r.reply or "(empty reply)"), title=title, title_align="left"))
    console.print(Panel(Text(r.feedback), title="feedback", title_align="left", style="dim"))


def _summary(records: list[TurnRecord]) -> Table:
    table = Table(title="turns")
    for column in ("task", "traj", "turn", "status", "correct", "reward", "return", "tokens", "gen s", "grade s"):
        table.add_column(column)
    for r in records:
        table.add_row(r.task_id, str(r.trajectory), str(r.turn), r.status, "yes" if r.correct else "no",
                      f"{r.reward:+.3f}", f"{r.returns:+.3f}", str(r.completion_tokens),
                      f"{r.generate_seconds:.1f}", f"{r.grade_seconds:.1f}")  # fmt: skip
    return table


def _report_table(report: dict[str, Any]) -> Table:
    """The headline metrics; a column per split besides the whole where several splits were rolled out."""
    columns = {"value" if "per_split" not in report else "all": report, **report.get("per_split", {})}
    table = Table(title=f"{report['tasks']} tasks, {report['trajectories']} trajectories, {report['turns']} turns")
    table.add_column("metric")
    for name in columns:
        table.add_column(name)
    rows = {name: _rows(r) for name, r in columns.items()}
    for label in rows[next(iter(columns))]:
        absent = 0.0 if label.startswith("status ") else None  # a status a split never met: none of its replies
        table.add_row(label, *(_fmt(rows[name].get(label, absent)) for name in columns))
    return table


def _rows(report: dict[str, Any]) -> dict[str, Any]:
    """One report's headline metrics by row label, in the table's order."""
    rows = {f"pass@{k}": v for k, v in report["pass_at_k"].items()}
    rows.update({f"fast_{p}": v for p, v in report["fast_p"].items()})
    rows["geomean speedup (correct)"] = report["geomean_speedup"]
    rows.update({f"correct by turn {row['turn']}": row["correct_by_turn"] for row in report["per_turn"]})
    rows.update({f"status {status}": share for status, share in report["status"].items()})
    rows["replies cut off at the token limit"] = report.get("cut_off_rate")
    return rows


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"
