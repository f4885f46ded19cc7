"""The evaluation report: metrics over turn records (a live evaluation's or a training run's trajectory files).

A trajectory's outcome is its best turn so far (a correct reply first, then the
largest speedup, then the largest score): an agent that reaches a correct
kernel at turn 2 is credited with it, as Kevin and KernelBench's multi-turn
runs report. Per-turn tables use the outcome reached *by* each turn, so they
show what refinement adds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agents.metrics import breakdown, fast_p, geomean_speedup, mean_pass_at_k
from agents.records import TurnRecord
from cudaperf_env.text import json_safe

FAST_P = (0.0, 1.0, 1.5, 2.0)
CURVE_P = tuple(round(0.1 * i, 1) for i in range(0, 31))
PASS_K = (1, 4, 8)

Outcome = tuple[bool, float | None]


Key = tuple[str, int, int]
"""A trajectory: ``(task_id, seed, trajectory)`` (runs of several seeds may be reported together)."""


def trajectories(records: Sequence[TurnRecord]) -> dict[Key, list[TurnRecord]]:
    """Records grouped by ``(task_id, seed, trajectory)``, each list in turn order."""
    groups: dict[Key, list[TurnRecord]] = defaultdict(list)
    for r in records:
        groups[(r.task_id, r.seed, r.trajectory)].append(r)
    return {key: sorted(turns, key=lambda r: r.turn) for key, turns in groups.items()}


def by_split(records: Sequence[TurnRecord], splits: Mapping[str, Collection[str]]) -> dict[str, list[TurnRecord]]:
    """The records of each split (a split's name -> its task ids) that has any, in ``splits``' order."""
    members = {name: set(ids) for name, ids in splits.items()}
    parts = {name: [r for r in records if r.task_id in ids] for name, ids in members.items()}
    return {name: rs for name, rs in parts.items() if rs}


def best_by_turn(turns: Sequence[TurnRecord], turn: int) -> Outcome:
    """The best ``(correct, speedup)`` among turns up to ``turn`` (a trajectory that ended keeps its last best)."""
    seen = [r for r in turns if r.turn <= turn] or list(turns[:1])
    best = max(seen, key=lambda r: (r.correct, _finite(r.speedup), r.score))
    return best.correct, best.speedup


def cut_off_rate(records: Sequence[TurnRecord]) -> float:
    """Share of replies cut off by the token limit (the policy said so, or the code block was never closed)."""
    cut = sum(r.finish_reason == "length" or bool(r.info.get("cut_off")) for r in records)
    return cut / len(records) if records else 0.0


def build_report(records: Sequence[TurnRecord], ks: Sequence[int] = PASS_K) -> dict[str, Any]:
    """Every metric of the harness as a JSON-safe mapping (NaN written as None)."""
    trajs = trajectories(records)
    max_turn = max((r.turn for r in records), default=0)
    final = _per_task({key: best_by_turn(t, max_turn) for key, t in trajs.items()})
    families = {r.task_id: r.family for r in records}
    report: dict[str, Any] = {
        "models": sorted({r.model for r in records}),
        "tasks": len(final),
        "trajectories": len(trajs),
        "turns": max_turn,
        "records": len(records),
        **_headline(final, ks),
        "fast_p_curve": {str(p): fast_p(list(final.values()), p) for p in CURVE_P},
        "per_family": {
            fam: {"tasks": len(sub), **_headline(sub, ks[:1])} for fam, sub in _by_family(final, families).items()
        },  # fmt: skip
        "per_turn": [_turn_row(trajs, t, records) for t in range(1, max_turn + 1)],
        "status": breakdown(r.status for r in records),
        "first_turn_status": breakdown(r.status for r in records if r.turn == 1),
        "compile_error_rate": breakdown(r.status for r in records).get("compile_error", 0.0),
        "cut_off_rate": cut_off_rate(records),
        "tokens": {
            "completion": sum(r.completion_tokens for r in records),
            "generate_seconds": _generate_seconds(records),
        },  # fmt: skip
    }
    return json_safe(report)


def _headline(per_task: dict[str, list[Outcome]], ks: Sequence[int]) -> dict[str, Any]:
    counts = [(len(s), sum(c for c, _ in s)) for s in per_task.values()]
    flat = [o for s in per_task.values() for o in s]
    return {
        "pass_at_k": {str(k): mean_pass_at_k(counts, k) for k in ks if counts and min(n for n, _ in counts) >= k},
        "fast_p": {str(p): fast_p(list(per_task.values()), p) for p in FAST_P},
        "geomean_speedup": geomean_speedup(flat),
        "correct_with_speedup": sum(1 for c, s in flat if c and s is not None),
    }


def _turn_row(
    trajs: dict[Key, list[TurnRecord]], turn: int, records: Sequence[TurnRecord]
) -> dict[str, Any]:
    per_task = _per_task({key: best_by_turn(t, turn) for key, t in trajs.items()})
    at_turn = [r for r in records if r.turn == turn]
    return {
        "turn": turn,
        "replies": len(at_turn),
        "correct_by_turn": fast_p(list(per_task.values()), 0.0),
        "fast_1_by_turn": fast_p(list(per_task.values()), 1.0),
        "correct_at_turn": sum(r.correct for r in at_turn) / len(at_turn) if at_turn else math.nan,
        "mean_score": sum(r.score for r in at_turn) / len(at_turn) if at_turn else math.nan,
        "mean_reward": sum(r.reward for r in at_turn) / len(at_turn) if at_turn else math.nan,
        "status": breakdown(r.status for r in at_turn),
    }


def _per_task(outcomes: dict[Key, Outcome]) -> dict[str, list[Outcome]]:
    per_task: dict[str, list[Outcome]] = defaultdict(list)
    for (task_id, _, _), outcome in sorted(outcomes.items()):
        per_task[task_id].append(outcome)
    return dict(per_task)


def _by_family(per_task: dict[str, list[Outcome]], families: dict[str, str]) -> dict[str, dict[str, list[Outcome]]]:
    out: dict[str, dict[str, list[Outcome]]] = defaultdict(dict)
    for task_id, samples in per_task.items():
        out[families[task_id]][task_id] = samples
    return dict(sorted(out.items()))


def _generate_seconds(records: Sequence[TurnRecord]) -> float:
    """Generation wall time, each batch counted once (records of one call share its time)."""
    calls = {(r.task_id, r.seed, r.turn, r.generate_seconds) for r in records}
    return sum(c[-1] for c in calls)


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else -math.inf

