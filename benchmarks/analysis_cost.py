"""Median cost of analysing one submission, without the profiler (goal: under 0.2 s).

Times ``cudaperf_env.analysis.analyze`` on the starter implementations, with
their compile-check reports made beforehand (the environment has them from
the compile check already), in three settings:

- ``static``: source features only (no compile report);
- ``cold``: static + compiler features, the SASS disassembled now (nvdisasm);
- ``warm``: the same with the SASS histogram already cached for the cubin.

Run: ``python benchmarks/analysis_cost.py [--limit N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from rich.console import Console
from rich.table import Table

from cudaperf_env.analysis import analyze
from cudaperf_env.backends.compile_check import compile_check
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import load_tasks

GOAL_S = 0.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="analyse only the first N implementations")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cases = [(impl.source, compile_check(wrap(task, impl.source)))
             for task in load_tasks(kind="c2cuda").values() for impl in task.implementations]
    cases = cases[: args.limit] if args.limit else cases

    def timed(with_report: bool) -> list[float]:
        seconds = []
        for source, report in cases:
            start = time.perf_counter()
            analyze(source, report if with_report else None)
            seconds.append(time.perf_counter() - start)
        return seconds

    previous = os.environ.get("CUDAPERF_CACHE_DIR")
    with tempfile.TemporaryDirectory() as fresh:
        os.environ["CUDAPERF_CACHE_DIR"] = fresh  # an empty SASS cache; cubins stay where the reports say
        try:
            static, cold, warm = timed(False), timed(True), timed(True)
        finally:
            if previous is None:
                os.environ.pop("CUDAPERF_CACHE_DIR", None)
            else:
                os.environ["CUDAPERF_CACHE_DIR"] = previous
    result = {
        "submissions": len(cases),
        "cpu_count": os.cpu_count(),
        "static_median_s": statistics.median(static),
        "cold_median_s": statistics.median(cold),
        "warm_median_s": statistics.median(warm),
        "static_max_s": max(static),
        "warm_max_s": max(warm),
        "goal_s": GOAL_S,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"analysis cost per submission ({len(cases)} starter implementations, no profiler)")
    for column in ("setting", "median s", "max s", "goal s"):
        table.add_column(column)
    for label, runs in (("static only", static), ("+ compiler, SASS cold", cold), ("+ compiler, SASS cached", warm)):
        table.add_row(label, f"{statistics.median(runs):.4f}", f"{max(runs):.4f}", f"< {GOAL_S}")
    Console().print(table)


if __name__ == "__main__":
    main()
