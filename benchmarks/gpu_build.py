"""What a new submission's GPU build costs with the call shim compiled beside it and with it linked in
as a cached object (``toolchain/native.compiled_object``; the CUDA backend's build since 2026-12-07).

Each repeat builds a new saxpy source for ``sm_90`` with ``build_gpu`` both ways, interleaved so that
other load on the machine falls on both alike (nvcc flags, confinement, ``-keep`` and the checks of
the compiled unit, the library's symbol check: all as the backend builds). Needs
nvcc, not a GPU. Prints medians and quartiles (seconds) and their ratio.

Run::

    python benchmarks/gpu_build.py --repeats 10 [--json benchmarks/results/gpu_build_cpu.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
import uuid
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends.cuda import backend
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain import tools

TASK = load_tasks()["c2cuda/saxpy_f32"]


def build(code: str, shim_object: bool) -> float:
    """Seconds of one ``build_gpu`` of ``code`` (asserting it succeeded); ``shim_object=False`` as before:
    the shim compiled beside the submission (what ``build_gpu`` falls back to without the object)."""
    made = backend.compiled_object
    if not shim_object:
        backend.compiled_object = lambda *args, **kwargs: None
    try:
        started = time.perf_counter()
        result = backend.build_gpu(TASK, code, "sm_90")
        seconds = time.perf_counter() - started
    finally:
        backend.compiled_object = made
    assert result.ok and not result.cached, result.log
    return seconds


def quartiles(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    source = TASK.implementation("naive").source
    ways: dict[str, Callable[[str], float]] = {"shim compiled beside": lambda c: build(c, False),
                                               "shim as a cached object": lambda c: build(c, True)}  # fmt: skip
    for way in ways.values():  # first builds: the shim object, the launcher, disk caches
        way(f"// warm {uuid.uuid4()}\n{source}")
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, way in ways.items():
            seconds[name].append(way(f"// {uuid.uuid4()}\n{source}"))
    figures = {name: quartiles(values) for name, values in seconds.items()}
    before, after = (figures[name]["median"] for name in ways)
    table = Table(title=f"new saxpy submission, nvcc build for sm_90 ({args.repeats} each, interleaved)")
    for column in ("build", "median s", "q1", "q3"):
        table.add_column(column)
    for name, f in figures.items():
        table.add_row(name, f"{f['median']:.3f}", f"{f['q1']:.3f}", f"{f['q3']:.3f}")
    Console().print(table)
    print(f"ratio (beside / cached object): {before / after:.2f}x")
    if args.json:
        result = {"benchmark": "gpu_build", "date": datetime.date.today().isoformat(), "machine": platform.machine(),
                  "cpus": os.cpu_count(), "nvcc": tools.version(tools.nvcc()), "repeats": args.repeats,
                  "seconds": figures, "samples": seconds, "ratio": before / after,
                  "command": f"python benchmarks/gpu_build.py --repeats {args.repeats} --json {args.json}"}  # fmt: skip
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
