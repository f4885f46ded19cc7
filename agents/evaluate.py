"""The evaluation harness: roll a policy out over a set of tasks, write the trajectories, report the metrics.

:func:`evaluate_policy` streams records to a JSONL file as each task finishes
(so an interrupted run keeps what it did), then :func:`write_report` turns
records, live or read back with :func:`agents.records.read_records`, into
``report.json`` plus the fast_p and per-turn PNG plots.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.plots import plot_fast_p, plot_per_turn
from agents.policies.base import Policy
from agents.records import TurnRecord, write_records
from agents.report import build_report, by_split
from agents.rollout import OnTurn, RolloutConfig, rollouts
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks.schema import Task


def evaluate_policy(
    policy: Policy,
    tasks: Sequence[Task],
    evaluator: Evaluator,
    config: RolloutConfig,
    out: str | Path,
    on_turn: OnTurn | None = None,
    batch_tasks: int = 1,
) -> list[TurnRecord]:
    """Roll ``policy`` out on every task; records are appended to ``out`` (JSONL) as each batch finishes.

    ``batch_tasks`` tasks are rolled out together (:func:`agents.rollout.rollouts`: one
    generation call and one concurrent grading per turn), which is what keeps a GPU
    busy; the records are the same as task by task.
    """
    if batch_tasks < 1:
        raise ValueError(f"batch_tasks must be >= 1, got {batch_tasks}")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    records: list[TurnRecord] = []
    with path.open("w", encoding="utf-8") as f:
        for start in range(0, len(tasks), batch_tasks):
            done = rollouts(policy, tasks[start : start + batch_tasks], evaluator, config, on_turn)
            write_records(done, f)
            f.flush()
            records += done
    return records


def spread_over_families(tasks: Sequence[Task], n: int) -> list[Task]:
    """``n`` tasks taken round-robin over the families (in order of first appearance), each family's in order.

    Dataset splits list tasks family by family, so their first ``n`` cover few
    families; this subset covers as many as ``n`` allows, and is the same every call.
    """
    by_family: dict[str, list[Task]] = {}
    for task in tasks:
        by_family.setdefault(task.family, []).append(task)
    picked: list[Task] = []
    queues = [list(reversed(q)) for q in by_family.values()]
    while len(picked) < n and any(queues):
        for q in queues:
            if q and len(picked) < n:
                picked.append(q.pop())
    return picked


def write_report(records: Sequence[TurnRecord], out_dir: str | Path, plots: bool = True,
                 splits: Mapping[str, Collection[str]] | None = None) -> dict[str, Any]:  # fmt: skip
    """``report.json`` (and ``fast_p.png``, ``per_turn.png``) in ``out_dir``; returns the report.

    With ``splits`` (a split's name -> its task ids), the report adds ``per_split``: the same
    report over each split's records.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    report = build_report(records)
    if splits:
        report["per_split"] = {name: build_report(rs) for name, rs in by_split(records, splits).items()}
    (directory / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if plots and records:
        plot_fast_p(report, directory / "fast_p.png")
        plot_per_turn(report, directory / "per_turn.png")
    return report
