"""Cost of the CPU backend's fidelity checks: one evaluation with them on against one with them off.

On: device memory closed to the entry's host code, two extra runs of the smallest configuration
under seeded block and thread orders, and one under the shadow-memory race detector (its own
instrumented build). Off: none of the three. Each sample evaluates a task's baseline
implementation with a fresh comment appended (so nvcc, g++ and the race-check build all run: the
case of a policy's new submission), and once more unchanged (every build cached). Settings
alternate sample by sample so that other load on the machine falls on both alike; medians and
the ratio on / off are reported.

Run::

    python benchmarks/cpu_fidelity_cost.py --rounds 5 --json > benchmarks/results/cpu_fidelity_cost.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf_env.backends.cpu.backend import CpuBackend  # noqa: E402
from cudaperf_env.evaluate import EvalOptions, Evaluator  # noqa: E402
from cudaperf_env.tasks import load_task  # noqa: E402

TASKS = ("saxpy_f32", "sum_f32", "softmax_rows_f32", "matmul_f32", "histogram256_u8", "exclusive_scan_f32")
DATA = Path(__file__).resolve().parents[1] / "cudaperf_env" / "tasks" / "data" / "c2cuda"
GOAL_RATIO = 2.0


def evaluators() -> dict[str, Evaluator]:
    """The two settings compared."""
    return {
        "on": Evaluator(CpuBackend(), EvalOptions(schedules=2, racecheck=True)),
        "off": Evaluator(CpuBackend(separate_memory=False), EvalOptions(schedules=0, racecheck=False)),
    }


def sample(evaluator: Evaluator, task_id: str, stamp: str) -> dict[str, Any]:
    """Seconds of one evaluation with a new source, then of the same source again, and their stages."""
    task = load_task(DATA / f"{task_id}.yaml")
    code = task.implementation(task.baseline).source + f"\n// {stamp}\n"
    out: dict[str, Any] = {}
    for kind in ("new_source", "cached_source"):
        start = time.perf_counter()
        e = evaluator.evaluate(task, code, seed=1)
        out[kind] = time.perf_counter() - start
        if not e.correct:
            raise SystemExit(f"{task_id}: {e.status}: {e.message}")
        out[f"{kind}_stages"] = {k: round(v, 3) for k, v in e.seconds.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="samples per task and setting")
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), help="starter task names")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    settings = evaluators()
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {s: {t: [] for t in args.tasks} for s in settings}
    for task_id in args.tasks:  # warm-up: reference outputs, runtime object and both precompiled headers
        for name, ev in settings.items():
            sample(ev, task_id, f"warm-up {name}")
    for r in range(args.rounds):
        for task_id in args.tasks:
            order = list(settings) if r % 2 == 0 else list(reversed(settings))
            for name in order:
                samples[name][task_id].append(sample(settings[name], task_id, f"{name} {r} {time.time_ns()}"))
    per_task = {}
    for task_id in args.tasks:
        row: dict[str, Any] = {}
        for kind in ("new_source", "cached_source"):
            on = statistics.median(s[kind] for s in samples["on"][task_id])
            off = statistics.median(s[kind] for s in samples["off"][task_id])
            row[kind] = {"on_s": round(on, 3), "off_s": round(off, 3), "ratio": round(on / off, 2)}
        row["on_stages_last"] = samples["on"][task_id][-1]["new_source_stages"]
        per_task[task_id] = row
    overall = {
        kind: round(statistics.median(per_task[t][kind]["ratio"] for t in args.tasks), 2)
        for kind in ("new_source", "cached_source")
    }
    result = {
        "benchmark": "cpu_fidelity_cost",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "goal_ratio": GOAL_RATIO,
        "median_ratio": overall,
        "tasks": per_task,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for task_id, row in per_task.items():
            print(f"{task_id:22s} new {row['new_source']} cached {row['cached_source']}")
        print(f"median ratio on/off: {overall} (goal < {GOAL_RATIO})")


if __name__ == "__main__":
    main()
