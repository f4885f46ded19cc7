"""CPU backend costs: build time (cold, precompiled header, cached) and run time of real kernels.

Run: ``python benchmarks/cpu_backend.py``. Goals (2-core x86-64): build with the
prebuilt runtime (precompiled header + runtime object) under 0.5 s per file; matmul 512x512 under 1 s on one core;
reduction of 1M floats under 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends.cpu import compiler
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain.cache import cache_dir, scratch_dir

RUNS = [  # (label, task, implementation, configuration)
    ("matmul 512x512 (tiled)", "c2cuda/matmul_f32", "smem_tiled_32", {"M": 512, "N": 512, "K": 512}),
    ("reduction 1M floats (one per thread)", "c2cuda/sum_f32", "naive", {"N": 1 << 20}),
    ("reduction 1M floats (warp shuffle)", "c2cuda/sum_f32", "warp_shuffle_atomic", {"N": 1 << 20}),
    ("saxpy 4M floats", "c2cuda/saxpy_f32", "naive", {"N": 1 << 22}),
]


def build_seconds(backend: CpuBackend, task, source: str) -> float:
    start = time.perf_counter()
    build = backend.build(task, source)
    assert build.ok, build.log
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tasks = load_tasks()
    saxpy = tasks["c2cuda/saxpy_f32"]
    source = saxpy.implementation("naive").source
    backend = CpuBackend()

    shutil.rmtree(cache_dir("runtime"), ignore_errors=True)  # cold: no prebuilt runtime, a header-only build
    cold = build_seconds(backend, saxpy, f"// cold {time.time_ns()}\n{source}")
    start = time.perf_counter()
    while not compiler.prebuild():  # the cold build started it in the background: wait for it
        time.sleep(0.2)
    prebuild = time.perf_counter() - start
    with_pch = statistics.median(
        build_seconds(backend, saxpy, f"// variant {time.time_ns()}\n{source}") for _ in range(args.repeats)
    )
    cached = statistics.median(build_seconds(backend, saxpy, source) for _ in range(args.repeats))
    result: dict[str, object] = {
        "build_cold_s": cold,
        "prebuild_wait_s": prebuild,
        "build_pch_s": with_pch,
        "build_cached_s": cached,
        "runs": [],
    }

    for label, task_id, impl, config in RUNS:
        task = tasks[task_id]
        build = backend.build(task, task.implementation(impl).source)
        assert build.ok and build.library is not None, build.log
        job = Job(config, make_inputs(task, config, seed=1))
        row = {"kernel": label}
        for threads in (1, 2):
            seconds = []
            for _ in range(args.repeats):
                [res] = run_jobs(build.library, task, [job], scratch_dir(), timeout_s=60, threads=threads)
                assert res.status == "ok", res.message
                seconds.append(res.seconds)
            row[f"{threads}_thread_s"] = statistics.median(seconds)
        result["runs"].append(row)  # type: ignore[union-attr]

    if args.json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"CPU backend ({os.cpu_count()} cores)")
    table.add_column("measure")
    table.add_column("1 thread s", justify="right")
    table.add_column("2 threads s", justify="right")
    table.add_row("build, cold (header-only)", f"{cold:.3f}", "")
    table.add_row("then waiting for the prebuilt runtime", f"{prebuild:.3f}", "")
    table.add_row("build, with the prebuilt runtime", f"{with_pch:.3f}", "")
    table.add_row("build, cached", f"{cached:.4f}", "")
    for row in result["runs"]:  # type: ignore[union-attr]
        table.add_row(row["kernel"], f"{row['1_thread_s']:.4f}", f"{row['2_thread_s']:.4f}")
    Console().print(table)


if __name__ == "__main__":
    main()
