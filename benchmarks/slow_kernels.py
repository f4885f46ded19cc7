"""GPU step time of correct but slow kernels, with the slow-kernel budget on and off (issue 22).

Run on a GPU machine: ``python benchmarks/slow_kernels.py --out benchmarks/results/slow_kernels.json``.
On ``c2cuda/dot_f64`` (perf configuration N = 2^25), each a new submission (a unique comment
defeats the build cache, as in ``gpu_eval.py``'s cold step), through
``Evaluator(make_backend("cuda")).evaluate``:

* ``single_thread``: the whole dot product in one thread (the issue measured 46 s a step);
* ``single_block``: one block of 256 threads, a shared-memory tree at the end;
* ``ordinary``: the task's baseline implementation.

``on`` is the default backend (``TimingOptions.slow_bound`` 1/8, ``evaluation_budget_s`` 2 s,
``CudaBackend.call_limits``); ``off`` has all three switched off. Per mode and kernel: the median
step time over ``--repeats`` evaluations, its phases, status, speedup, whether timing stopped
early (``capped``) and the speedup term of the default reward (clip 8). Goal: with the budget on,
the slow steps within 2x of the ordinary one, and the same speedup term as with it off.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import subprocess
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends import make_backend
from cudaperf_env.backends.cuda.timing import Timing, TimingOptions
from cudaperf_env.evaluate import Evaluation, Evaluator
from cudaperf_env.reward import speedup_term
from cudaperf_env.tasks import load_tasks

TASK = "c2cuda/dot_f64"
CLIP = 8.0
SINGLE_THREAD = r"""
__global__ void dot_one_thread(int n, const double* x, const double* y, double* out) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  out[0] = s;
}

extern "C" void dot_f64(int n, const double* x, const double* y, double* out) {
  dot_one_thread<<<1, 1>>>(n, x, y, out);
}
"""
SINGLE_BLOCK = r"""
__global__ void dot_one_block(int n, const double* x, const double* y, double* out) {
  __shared__ double s[256];
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i] * y[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = s[0];
}

extern "C" void dot_f64(int n, const double* x, const double* y, double* out) {
  dot_one_block<<<1, 256>>>(n, x, y, out);
}
"""
OFF = {"timing": TimingOptions(slow_bound=0.0, evaluation_budget_s=math.inf), "call_limits": None}


def record_timings(backend) -> list:
    """Keep every Timing the evaluator gets from ``backend`` (``Evaluation`` does not carry the cap)."""
    timings: list = []
    original = backend.time

    def time_and_keep(*args, **kwargs):
        timings.append(original(*args, **kwargs))
        return timings[-1]

    object.__setattr__(backend, "time", time_and_keep)  # a frozen dataclass: shadow the method on this instance
    return timings


def step(evaluator: Evaluator, timings: list, task, source: str) -> tuple[float, Evaluation, Timing | None]:
    """One evaluation of ``source`` as a new submission: wall seconds, evaluation, its Timing (if timed)."""
    before = len(timings)
    started = time.perf_counter()
    e = evaluator.evaluate(task, f"```cuda\n// submission {time.time_ns()}\n{source}```", seed=1)
    seconds = time.perf_counter() - started
    timing = timings[-1] if len(timings) > before and isinstance(timings[-1], Timing) else None
    return seconds, e, timing


def measure(mode: str, kernels: dict[str, str], task, repeats: int) -> dict[str, dict]:
    """Median step time and its verdict per kernel for one mode of the budget."""
    backend = make_backend("cuda", **({} if mode == "on" else OFF))
    timings = record_timings(backend)
    evaluator = Evaluator(backend)
    step(evaluator, timings, task, kernels["ordinary"])  # harness, bandwidth, perf inputs, baseline build and times
    rows = {}
    for name, source in kernels.items():
        runs = [step(evaluator, timings, task, source) for _ in range(repeats)]
        _, e, timing = runs[-1]
        rows[name] = {
            "step_s": statistics.median(s for s, _, _ in runs),
            "steps_s": [round(s, 3) for s, _, _ in runs],
            "phases_s": {
                k: round(statistics.median(r[1].seconds.get(k, 0.0) for r in runs), 4) for k in e.seconds
            },  # fmt: skip
            "status": e.status,
            "message": e.message,
            "speedup": e.speedup,
            "speedup_lcb": e.speedup_lcb,
            "runtime_ms": e.runtime_ms,
            "baseline_ms": e.baseline_ms,
            "timing_flags": list(e.timing_flags),
            "capped": bool(timing and timing.capped),
            "speedup_bound": timing.speedup_bound if timing else math.nan,
            "over_budget": bool(timing and timing.over_budget),
            "speedup_term": speedup_term(e.credited_speedup, clip=CLIP) if e.correct else math.nan,
            "device": {k: v for k, v in e.device.items() if isinstance(v, str | int | float)},
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/slow_kernels.json")
    parser.add_argument("--repeats", type=int, default=3, help="evaluations per mode and kernel")
    parser.add_argument("--modes", default="on,off", help="comma-separated: on, off")
    args = parser.parse_args()

    task = load_tasks(kind="c2cuda")[TASK]
    kernels = {"single_thread": SINGLE_THREAD, "single_block": SINGLE_BLOCK,
               "ordinary": task.implementation(task.baseline).source}  # fmt: skip
    by_mode = {mode: measure(mode, kernels, task, args.repeats) for mode in args.modes.split(",")}
    drivers = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
    device = next(iter(by_mode.values()))["ordinary"]["device"]
    result = {
        "card": device.get("name"),
        "driver": drivers[0] if drivers else "",
        "gpus_on_machine": len(drivers),
        "date": datetime.date.today().isoformat(),
        "task": TASK,
        "perf_configs": [dict(c) for c in task.perf_configs],
        "repeats": args.repeats,
        "modes": by_mode,
        "ratio_to_ordinary": {
            mode: {k: rows[k]["step_s"] / rows["ordinary"]["step_s"] for k in rows} for mode, rows in by_mode.items()
        },  # fmt: skip
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n")

    table = Table(title=f"{TASK}: step time on {result['card']} (driver {result['driver']}, {result['date']})")
    for column in ("budget", "kernel", "step s", "x ordinary", "status", "speedup", "capped", "speedup term"):
        table.add_column(column, justify="left" if column in ("budget", "kernel", "status") else "right")
    for mode, rows in by_mode.items():
        for name, r in rows.items():
            table.add_row(mode, name, f"{r['step_s']:.2f}", f"{result['ratio_to_ordinary'][mode][name]:.2f}",
                          r["status"], f"{r['speedup']:.3g}", "yes" if r["capped"] else "no",
                          f"{r['speedup_term']:.3f}")  # fmt: skip
    Console().print(table)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
