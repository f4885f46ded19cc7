"""How well the structural score alone orders the starter implementations by measured time.

Scores every implementation of every bundled C-to-CUDA task (static analysis
plus the nvcc compile check, no GPU needed). With ``--times``, a JSON file of
medians measured on a GPU::

    {"card": "NVIDIA H200", "driver": "580.159.04", "date": "2026-12-01",
     "tasks": {"c2cuda/matmul_f32": {"naive": 12.3, "smem_tiled_32": 4.1}}}

it also reports the pairwise agreement (share of same-task pairs the score
orders like the times; faster should score higher, ties in score count half)
and Spearman correlations: pooled over all implementations of score against
speedup over the task's baseline, and the mean of per-task correlations of
score against 1/time. This is the baseline a learned ranker must beat.

With ``--dataset``, the generated dataset's tasks are scored instead and the times
are its GPU labels (geometric mean over the perf configurations); ``--sample N``
takes every k-th labelled task. Agreement is then also reported over the pairs
more than 3% apart (beyond the labels' noise deadband) and per family.

Run: ``python benchmarks/structure_vs_speed.py [--times times.json | --dataset [--sample N]] [--out result.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cudaperf_env.analysis import ScoreWeights, analyze
from cudaperf_env.analysis.agreement import pairwise_agreement, spearman
from cudaperf_env.analysis.score import weights_table
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import Task, load_tasks
from cudaperf_env.text import json_safe
from cudaperf_env.toolchain.compile_check import DEFAULT_ARCH, compile_check


def load_times(path: str) -> dict[str, Any]:
    """The measured-times file, checked; exits with a message that says what is wrong."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        sys.exit(f"--times {path}: cannot read it as JSON ({exc})")
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict) or not all(isinstance(v, dict) for v in tasks.values()):
        sys.exit(f"--times {path}: expected {{'card', 'driver', 'date', 'tasks': {{task_id: {{impl: median_ms}}}}}}")
    return data


def times_from_labels(tasks: dict[str, Task]) -> dict[str, Any]:
    """Measured times from the tasks' GPU labels: per implementation, the geometric mean over perf configs."""
    out: dict[str, dict[str, float]] = {}
    where: set[tuple[str, str, str]] = set()
    for task in tasks.values():
        perf = {i.name: [label.median_ms for label in i.labels if label.kind == "perf"] for i in task.implementations}
        if all(perf.values()):
            out[task.id] = {name: math.exp(statistics.fmean(math.log(ms) for ms in values))
                            for name, values in perf.items()}  # fmt: skip
            where |= {(label.card, label.driver, label.date) for i in task.implementations for label in i.labels}
    card, driver, date = (", ".join(sorted({w[k] for w in where})) for k in range(3))
    return {"card": card, "driver": driver, "date": date, "tasks": out}


def dataset_tasks(sample: int | None) -> dict[str, Task]:
    """The generated dataset's labelled tasks, or every k-th of them (``sample`` in all, spread over the file)."""
    from cudaperf_env.dataset import load_dataset

    labelled = [t for t in load_dataset().values() if all(i.labels for i in t.implementations)]
    step = max(1, len(labelled) // sample) if sample else 1
    return {t.id: t for t in labelled[::step]}


def score_all(tasks: dict[str, Task], arch: str, static_only: bool) -> list[dict[str, Any]]:
    """Structural score, components and hints of every implementation."""
    rows = []
    for task in tasks.values():
        for impl in task.implementations:
            report = None if static_only else compile_check(wrap(task, impl.source), arch)
            result = analyze(impl.source, report)
            rows.append({
                "task": task.id, "impl": impl.name, "baseline": impl.name == task.baseline,
                "compiled": report is None or report.ok, "score": result.score,
                "components": dict(result.components), "hints": list(result.hints),
            })
    return rows


def attach_times(rows: list[dict[str, Any]], tasks: dict[str, Task], times: dict[str, Any]) -> None:
    """Adds ``time_ms`` and ``speedup`` (baseline time / time) to the rows that were measured."""
    for row in rows:
        measured = times["tasks"].get(row["task"], {})
        t = measured.get(row["impl"])
        base = measured.get(tasks[row["task"]].baseline)
        row["time_ms"] = float(t) if isinstance(t, int | float) and t > 0 else math.nan
        ok = isinstance(base, int | float) and base > 0 and math.isfinite(row["time_ms"])
        row["speedup"] = float(base) / row["time_ms"] if ok else math.nan


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Pairwise agreement and Spearman correlations over the timed rows."""
    groups: dict[str, dict[str, tuple[float, float]]] = {}
    for row in rows:
        groups.setdefault(row["task"], {})[row["impl"]] = (row["score"], row.get("time_ms", math.nan))
    result = pairwise_agreement(groups)
    apart = pairwise_agreement(groups, min_ratio=1.03)
    pooled = [(r["score"], r["speedup"]) for r in rows if math.isfinite(r.get("speedup", math.nan))]
    per_task = []
    for members in groups.values():
        timed = [(s, 1.0 / t) for s, t in members.values() if math.isfinite(t) and t > 0]
        if len(timed) >= 3:
            rho = spearman([s for s, _ in timed], [v for _, v in timed])
            if math.isfinite(rho):
                per_task.append(rho)
    return {
        "pairwise_agreement": result.agreement,
        "pairs": result.pairs,
        "pairwise_agreement_beyond_noise": apart.agreement,
        "pairs_beyond_noise": apart.pairs,
        "spearman_pooled_vs_speedup": spearman([s for s, _ in pooled], [v for _, v in pooled]) if pooled else math.nan,
        "spearman_mean_per_task": statistics.fmean(per_task) if per_task else math.nan,
        "tasks_with_3_or_more_timed": len(per_task),
    }


def per_component(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """For each score component: how often, among same-task pairs more than 3% apart in time whose values of
    the component differ, the higher value is the faster implementation."""
    out = {}
    for name in sorted({k for r in rows for k in r["components"]}):
        groups: dict[str, dict[str, tuple[float, float]]] = {}
        for r in rows:
            value = r["components"].get(name)
            groups.setdefault(r["task"], {})[r["impl"]] = (math.nan if value is None else value, r["time_ms"])
        result = pairwise_agreement(groups, min_ratio=1.03, skip_score_ties=True)
        out[name] = {"agreement_where_it_differs": result.agreement, "pairs": result.pairs}
    return out


def per_family(rows: list[dict[str, Any]], tasks: dict[str, Task]) -> dict[str, dict[str, Any]]:
    """Agreement beyond noise per task family."""
    families: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    for row in rows:
        family = families.setdefault(tasks[row["task"]].family, {})
        family.setdefault(row["task"], {})[row["impl"]] = (row["score"], row.get("time_ms", math.nan))
    out = {}
    for name, groups in sorted(families.items()):
        result = pairwise_agreement(groups, min_ratio=1.03)
        out[name] = {"agreement": result.agreement, "pairs": result.pairs}
    return out


def show(rows: list[dict[str, Any]], summary: dict[str, Any] | None, times: dict[str, Any] | None,
         families: dict[str, dict[str, Any]] | None = None) -> None:  # fmt: skip
    if families is not None:
        show_families(families, times or {})
    else:
        show_rows(rows, times)
    if summary and summary.get("components"):
        table = Table(title="Each component alone, on pairs > 3% apart where its values differ")
        for column in ("component", "higher value is faster", "pairs"):
            table.add_column(column, justify="left" if column == "component" else "right")
        for name, figures in summary["components"].items():
            table.add_row(name, f"{figures['agreement_where_it_differs']:.2f}", str(figures["pairs"]))
        Console().print(table)
    if summary:
        Console().print(
            f"pairwise agreement {summary['pairwise_agreement']:.3f} over {summary['pairs']} same-task pairs "
            f"({summary['pairwise_agreement_beyond_noise']:.3f} over the {summary['pairs_beyond_noise']} more than "
            f"3% apart); Spearman (pooled, vs speedup) {summary['spearman_pooled_vs_speedup']:.3f}; "
            f"mean per-task Spearman {summary['spearman_mean_per_task']:.3f} "
            f"({summary['tasks_with_3_or_more_timed']} tasks with 3+ timed implementations)"
        )


def show_families(families: dict[str, dict[str, Any]], times: dict[str, Any]) -> None:
    table = Table(title=f"Structural score vs. GPU labels per family ({times.get('card', '?')}), pairs > 3% apart")
    table.add_column("family")
    table.add_column("agreement", justify="right")
    table.add_column("pairs", justify="right")
    for name, figures in sorted(families.items(), key=lambda kv: -kv[1]["pairs"]):
        table.add_row(name, f"{figures['agreement']:.2f}", str(figures["pairs"]))
    Console().print(table)


def show_rows(rows: list[dict[str, Any]], times: dict[str, Any] | None) -> None:
    title = "Structural score of the starter implementations"
    if times:
        title += f" vs. time on {times.get('card', '?')} (driver {times.get('driver', '?')}, {times.get('date', '?')})"
    table = Table(title=title)
    for column in ("task", "implementation", "score", "weakest components", *(("ms", "speedup") if times else ())):
        table.add_column(column, justify="right" if column in ("score", "ms", "speedup") else "left")
    for row in rows:
        weakest = sorted(row["components"].items(), key=lambda kv: kv[1])[:2]
        cells = [row["task"].split("/")[-1], row["impl"] + (" *" if row["baseline"] else ""), f"{row['score']:.3f}",
                 ", ".join(f"{k} {v:.2f}" for k, v in weakest)]
        if times:
            cells += [f"{row['time_ms']:.3f}", f"{row['speedup']:.2f}"]
        table.add_row(*cells)
    Console().print(table)


def compact(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """``[task, impl, score, time_ms]`` per implementation (the dataset's rows, without components and hints)."""
    return [[r["task"], r["impl"], round(r["score"], 4), r.get("time_ms", math.nan)] for r in rows]



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--times", help="JSON of measured median times (without it: scores only)")
    parser.add_argument("--out", help="write the scores (and the agreement figures) as JSON here")
    parser.add_argument("--arch", default=DEFAULT_ARCH, help="target architecture of the compile check")
    parser.add_argument("--static-only", action="store_true", help="skip nvcc: source features only")
    parser.add_argument("--task-dir", help="a directory of task files instead of the bundled tasks")
    parser.add_argument("--dataset", action="store_true", help="the generated dataset, timed by its GPU labels")
    parser.add_argument("--sample", type=int, help="with --dataset: about this many tasks, spread over the file")
    args = parser.parse_args()

    if args.dataset:
        tasks = dataset_tasks(args.sample)
        times: dict[str, Any] | None = times_from_labels(tasks)
    else:
        tasks = load_tasks(args.task_dir, kind="c2cuda")
        times = load_times(args.times) if args.times else None
    rows = score_all(tasks, args.arch, args.static_only)
    summary = families = None
    if times:
        attach_times(rows, tasks, times)
        summary = summarize(rows)
        families = per_family(rows, tasks) if args.dataset else None
        summary["components"] = per_component(rows)
    show(rows, summary, times, families)
    if args.out:
        meta = {k: times.get(k) for k in ("card", "driver", "date")} if times else {}
        payload = {**meta, "arch": args.arch, "static_only": args.static_only, "source": "dataset" if args.dataset
                   else "starter", "weights": weights_table(ScoreWeights()), **(summary or {}),
                   "families": families, "implementations": compact(rows) if args.dataset else rows}  # fmt: skip
        Path(args.out).write_text(json.dumps(json_safe(payload), indent=2))


if __name__ == "__main__":
    main()
