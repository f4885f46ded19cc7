"""Latency of one CPU-backend environment step: this code against a base commit, in one run.

Three measures on a starter task: the first step on a cold cache (a fresh
``CUDAPERF_CACHE_DIR``: runtime, reference and both compilers built on the way; the second
step of that episode is recorded too), a step with a new source on a warm cache (sources
differ by a comment, so nvcc and g++ both rebuild) and a step with a source seen before.
Each is recorded in wall seconds and in CPU seconds (``<measure>_cpu``: the process and the
compilers and workers it waited for; a background prebuild is not counted). Every sample runs
in a fresh process whose ``PYTHONPATH`` is one of the two trees, and the trees alternate, so
that other load on the machine falls on both alike; medians and the ratio base / new are
reported. Background work a tree leaves behind (a detached runtime prebuild after a cold step)
is waited for before the next sample.

Run::

    git worktree add /tmp/cudaperf-base 324feae
    python benchmarks/env_step.py --base /tmp/cudaperf-base --json > benchmarks/results/env_step_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
GOALS_S = {"cold_first_step": 2.0, "new_source": 0.5, "cached_source": 0.3}


def worker(mode: str, task_id: str, repeats: int) -> dict[str, Any]:
    """Runs inside the tree under test: the step latencies of one episode, in seconds."""
    import cudaperf_env
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.env import CudaPerfEnv

    env = CudaPerfEnv(backend=CpuBackend(), task_ids=[task_id], max_turns=10**6)
    env.reset(seed=0)
    task = env.task
    assert task is not None
    source = task.implementation(task.baseline).source
    stamp = time.time_ns()

    def cpu_seconds() -> float:
        """This process's CPU time and its waited-for children's (compilers, workers)."""
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    out: dict[str, Any] = {"package": str(Path(cudaperf_env.__file__).parent)}

    def timed(measure: str, code: str) -> None:
        start, cpu = time.perf_counter(), cpu_seconds()
        info = env.step(f"```cuda\n{code}```")[4]
        elapsed, used = time.perf_counter() - start, cpu_seconds() - cpu
        assert str(info["status"]) in ("ok", "Status.OK"), info
        if measure:
            out.setdefault(measure, []).append(elapsed)
            out.setdefault(f"{measure}_cpu", []).append(used)  # less sensitive to other load than wall time

    if mode == "cold":
        timed("cold_first_step", f"// cold {stamp}\n{source}")
        timed("cold_second_step", f"// second {stamp}\n{source}")
        return out
    timed("", f"// warm-up {stamp}\n{source}")  # expected outputs are computed once per process
    for i in range(repeats):
        timed("new_source", f"// variant {stamp}-{i}\n{source}")
    timed("", source)
    for _ in range(repeats):
        timed("cached_source", source)
    return out


def run_tree(tree: Path, cache: Path, mode: str, task_id: str, repeats: int) -> dict[str, Any]:
    """One worker process on ``tree`` with ``cache`` as its build cache."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CUDAPERF_CACHE_DIR": str(cache)}
    command = [sys.executable, str(HERE), "--worker", mode, "--task", task_id, "--repeats", str(repeats)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker on {tree} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["package"]).resolve() != (tree / "cudaperf_env").resolve():
        raise RuntimeError(f"the worker imported {result['package']}, not the tree {tree}")
    settle(cache)
    return result


def settle(cache: Path, limit_s: float = 300.0) -> None:
    """Wait until no runtime prebuild is pending in ``cache`` (trees without one return at once)."""
    deadline = time.monotonic() + limit_s
    for folder in (cache / "runtime").glob("*"):
        while time.monotonic() < deadline:
            files = ("cudaperf_pch.h.gch", "cudaperf_runtime.o")
            if all((folder / f).exists() for f in files) or (folder / "prebuild.log").exists():
                break
            time.sleep(0.2)
        lock = folder / "lock"
        if lock.exists():
            with open(lock, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX)  # the builder holds it until it has finished


def commit_of(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"cores": os.cpu_count(), "cpu": cpu, "gxx": gxx, "python": platform.python_version()}


def measure(trees: dict[str, Path], task_id: str, rounds: int, repeats: int) -> dict[str, dict[str, list[float]]]:
    """Samples per measure and tree; trees alternate (and swap who goes first) every round."""
    samples: dict[str, dict[str, list[float]]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="env-step-bench-"))
    try:
        warm = {name: scratch / f"warm-{name}" for name in trees}
        for name, tree in trees.items():  # fill each tree's warm cache, prebuilt runtime included
            run_tree(tree, warm[name], "warm", task_id, 1)
        for r in range(rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in order:
                cold = scratch / f"cold-{name}-{r}"
                results = [run_tree(trees[name], cold, "cold", task_id, 1)]
                shutil.rmtree(cold, ignore_errors=True)
                results.append(run_tree(trees[name], warm[name], "warm", task_id, repeats))
                for result in results:
                    for key, values in result.items():
                        if key != "package":
                            samples.setdefault(key, {}).setdefault(name, []).extend(values)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="c2cuda/saxpy_f32", help="a starter task")
    parser.add_argument("--base", type=Path, help="a checkout of the code to compare against (git worktree)")
    parser.add_argument("--rounds", type=int, default=5, help="alternations of the trees (one cold sample each)")
    parser.add_argument("--repeats", type=int, default=5, help="warm-cache steps per measure and round")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", choices=("cold", "warm"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.task, args.repeats)))
        return

    trees = {"new": HERE.parents[1]}
    if args.base is not None:
        trees = {"base": args.base.resolve(), **trees}
    samples = measure(trees, args.task, args.rounds, args.repeats)
    result: dict[str, Any] = {
        "benchmark": "env_step (cpu backend)",
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "task": args.task,
        "commits": {name: commit_of(tree) for name, tree in trees.items()},
        "rounds": args.rounds,
        "repeats": args.repeats,
        "measures": {},
    }
    for key, per_tree in samples.items():
        row: dict[str, Any] = {f"{name}_median_s": statistics.median(v) for name, v in per_tree.items()}
        if "base" in per_tree:
            row["ratio_base_over_new"] = row["base_median_s"] / row["new_median_s"]
        if key in GOALS_S:
            row["goal_s"] = GOALS_S[key]
        row["samples_s"] = {name: [round(s, 4) for s in v] for name, v in per_tree.items()}
        result["measures"][key] = row
    if args.json:
        print(json.dumps(result, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"env.step latency, {args.task}, cpu backend, {os.cpu_count()} cores (medians)")
    for column in ("measure", *(f"{name} s" for name in trees), "base / new", "goal s"):
        table.add_column(column)
    for key, row in result["measures"].items():
        cells = [f"{row[f'{name}_median_s']:.3f}" for name in trees]
        ratio = f"{row['ratio_base_over_new']:.2f}x" if "ratio_base_over_new" in row else "-"
        table.add_row(key, *cells, ratio, f"<= {row['goal_s']}" if "goal_s" in row else "-")
    Console().print(table)


if __name__ == "__main__":
    main()
