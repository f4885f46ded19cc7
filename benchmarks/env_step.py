"""Median latency of one environment step on the CPU backend, cached and uncached.

"Uncached" submissions differ by a comment, so nvcc and g++ both rebuild;
"cached" ones repeat the same source. Run: ``python benchmarks/env_step.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.env import CudaPerfEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="c2cuda/saxpy_f32", help="a 3-configuration task")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    env = CudaPerfEnv(backend=CpuBackend(), task_ids=[args.task], max_turns=10**6)
    env.reset(seed=0)
    task = env.task
    assert task is not None
    source = task.implementation(task.baseline).source
    stamp = time.time_ns()

    def timed(action: str) -> float:
        start = time.perf_counter()
        _, _, _, _, info = env.step(action)
        elapsed = time.perf_counter() - start
        assert info["status"] == "ok", info
        return elapsed

    uncached = [timed(f"```cuda\n// variant {stamp}-{i}\n{source}```") for i in range(args.repeats)]
    timed(f"```cuda\n{source}```")  # warm the cache for the cached case
    cached = [timed(f"```cuda\n{source}```") for _ in range(args.repeats)]
    result = {
        "task": task.id,
        "configs": len(task.correctness_configs),
        "uncached_median_s": statistics.median(uncached),
        "cached_median_s": statistics.median(cached),
        "goal_uncached_s": 2.0,
        "goal_cached_s": 0.3,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"env.step latency, {task.id} ({result['configs']} configurations, cpu backend)")
    for column in ("submission", "median s", "goal s"):
        table.add_column(column)
    table.add_row("uncached", f"{result['uncached_median_s']:.3f}", "< 2.0")
    table.add_row("cached", f"{result['cached_median_s']:.3f}", "< 0.3")
    Console().print(table)


if __name__ == "__main__":
    main()
