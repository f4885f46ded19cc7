"""PyTorch baselines on the GPU: eager and torch.compile of every torch2cuda starter, and each implementation's
speedup over both.

Run on a GPU machine with a CUDA build of torch:
``python benchmarks/torch_baselines.py --out benchmarks/results/torch_baselines_h200.json``.
Per task it records eager's and the compiled model's median time per call (ms) on the perf
configuration, the first evaluation's wall time (it builds the compiled model and times both
baselines) against a later one's (the baselines kept), whether the compile fell back to eager,
and for every implementation the speedup over eager, over torch.compile and over the task's
baseline implementation. The card, driver and date come from the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from pathlib import Path

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks


def _value(x: float) -> float | None:
    return round(x, 5) if math.isfinite(x) else None


def measure(task_ids: list[str]) -> dict:
    """Every implementation of each task graded on a fresh backend, the first one paying the baselines."""
    tasks = load_tasks(kind="torch2cuda")
    evaluator = Evaluator(CudaBackend())
    rows, device = [], {}
    for task_id in task_ids or sorted(tasks):
        task = tasks[task_id]
        row: dict = {"task": task_id, "implementations": {}}
        for n, implementation in enumerate(task.implementations):
            started = time.perf_counter()
            e = evaluator.evaluate(task, implementation.source, seed=1)
            seconds = time.perf_counter() - started
            device = device or dict(e.device)
            if n == 0:
                row.update(first_step_s=round(seconds, 2), eager_ms=_value(e.baseline_ms),
                           compile_ms=_value(e.compile_ms), compile_fallback=bool(e.compile_error),
                           compile_error=e.compile_error, baseline=e.baseline)  # fmt: skip
            elif n == 1:
                row["later_step_s"] = round(seconds, 2)
            row["implementations"][implementation.name] = {
                "status": str(e.status), "runtime_ms": _value(e.runtime_ms), "speedup_vs_eager": _value(e.speedup),
                "speedup_vs_compile": _value(e.speedup_vs_compile), "speedup_vs_impl": _value(e.speedup_vs_impl),
            }  # fmt: skip
        rows.append(row)
        print(json.dumps(row))
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "tasks": rows}  # fmt: skip


def main() -> None:
    """Command line: ``--tasks`` (default every starter) and ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=[], help="torch2cuda task ids (default: every starter)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/torch_baselines.json"))
    args = parser.parse_args()
    result = measure(args.tasks)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
