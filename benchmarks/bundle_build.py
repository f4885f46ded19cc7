"""Time N separate nvcc builds against bundles of the same N implementations (no GPU needed).

The separate builds are exactly ``CudaBackend.build`` (the harness wrap, one nvcc
each); the bundles are ``cudaperf_env.datagen.bundle``. Every method starts
from an empty build cache, one build at a time, in the same run, so the ratio
is against a baseline measured under the same machine load.

    python benchmarks/bundle_build.py [--n 30] [--sizes 10,30] [--source starter|dataset] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.backends.harness import wrap
from cudaperf_env.datagen.bundle import BundleUnit, build_bundles
from cudaperf_env.dataset.load import load_dataset
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.native import build_library


def pick_units(source: str, n: int) -> list[BundleUnit]:
    """The first ``n`` implementations of the starter tasks, or one per dataset task (spread over families)."""
    if source == "starter":
        units = [(t, impl.source) for t in load_tasks().values() for impl in t.implementations]
    else:
        tasks = sorted(load_dataset().values(), key=lambda t: t.id)
        units = [(t, t.implementations[0].source) for t in tasks[:: max(1, len(tasks) // n)]]
    if len(units) < n:
        raise SystemExit(f"only {len(units)} implementations in --source {source}; pass a smaller --n")
    return units[:n]


def separate(units: list[BundleUnit], arch: str) -> int:
    """One nvcc per implementation, as ``CudaBackend.build`` does; returns the number that built."""
    flags = nvcc_flags(arch)
    return sum(build_library(tools.nvcc(), flags, wrap(task, src), ".cu").ok for task, src in units)


def bundled(units: list[BundleUnit], arch: str, size: int) -> int:
    return sum(r.ok for r in build_bundles(units, arch, size=size))


@dataclass(frozen=True)
class Measurement:
    """One method's run: wall and compiler CPU time, implementations that built, libraries written."""

    method: str
    seconds: float
    cpu_seconds: float
    built: int
    libraries: int


def measure(method: str, build: Callable[[], int]) -> Measurement:
    """Time ``build()`` (which returns how many implementations built) with an empty build cache."""
    previous = os.environ.get("CUDAPERF_CACHE_DIR")
    with tempfile.TemporaryDirectory() as fresh:
        os.environ["CUDAPERF_CACHE_DIR"] = fresh
        try:
            start, cpu = time.perf_counter(), _children_cpu()
            built = build()
            seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
            libraries = len(list(Path(fresh, "builds").glob("*.so")))
        finally:
            if previous is None:
                os.environ.pop("CUDAPERF_CACHE_DIR", None)
            else:
                os.environ["CUDAPERF_CACHE_DIR"] = previous
    return Measurement(method, seconds, cpu, built, libraries)


def _children_cpu() -> float:
    """User + system seconds of finished child processes (the compilers): insensitive to machine load."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=30, help="implementations to build")
    parser.add_argument("--sizes", default="", help="bundle sizes to time, comma-separated (default: N)")
    parser.add_argument("--source", choices=("starter", "dataset"), default="starter")
    parser.add_argument("--arch", default="sm_90", help="nvcc -arch (no GPU needed)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    units = pick_units(args.source, args.n)
    sizes = [int(s) for s in args.sizes.split(",") if s] or [args.n]
    load = os.getloadavg()[0]
    rows = [measure("separate", lambda: separate(units, args.arch))]
    for size in sizes:
        rows.append(measure(f"bundles of {size}", partial(bundled, units, args.arch, size)))
    if args.json:
        print(json.dumps({"n": len(units), "source": args.source, "cpus": os.cpu_count(), "load": load,
                          "rows": [vars(r) for r in rows]}, indent=2))  # fmt: skip
        return
    table = Table(title=f"{len(units)} {args.source} implementations, empty cache, {os.cpu_count()} CPUs "
                  f"(load {load:.1f}); CPU = the compilers' user + system time")  # fmt: skip
    for column in ("method", "libs", "built", "wall s", "per impl", "speedup", "CPU s", "per impl", "speedup"):
        table.add_column(column, justify="left" if column == "method" else "right")
    base = rows[0]
    for row in rows:
        table.add_row(row.method, str(row.libraries), f"{row.built}/{len(units)}", f"{row.seconds:.1f}",
                      f"{row.seconds / len(units):.3f}", f"{base.seconds / row.seconds:.1f}x", f"{row.cpu_seconds:.1f}",
                      f"{row.cpu_seconds / len(units):.3f}", f"{base.cpu_seconds / row.cpu_seconds:.1f}x")  # fmt: skip
    Console(width=max(100, Console().width)).print(table)


if __name__ == "__main__":
    main()
