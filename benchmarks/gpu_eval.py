"""GPU evaluation: step latency (cold / warm cache), load_inline comparison, timing fidelity.

Run on a GPU machine: ``python benchmarks/gpu_eval.py --out benchmarks/results/gpu_eval.json``.
Measures, in one run:

* ``cold_step_s`` / ``warm_step_s``: median wall time of a full evaluation (compile check,
  nvcc build, every correctness configuration, timing against the baseline) of a new
  submission and of a resubmitted one, for a task whose inputs were already prepared.
* ``load_inline_s``: the same kernel built the KernelBench way
  (``torch.utils.cpp_extension.load_inline``, fresh build directory) and called once;
  ``cold_speedup_vs_load_inline`` is their ratio (goal >= 25).
* ``fidelity``: our event-timed median per call against Nsight Compute's
  ``gpu__time_duration`` for several kernels (goal within 5% for kernels of 50 us and more).
* ``spread``: (max - min) / median of the candidate's median time over repeated evaluations,
  each in a fresh worker process (goal < 2%); ``speedup_spread`` the same for its speedup
  over the baseline. ``spread_by_l2_flush`` repeats both with each L2 flush (a reading
  kernel, the default, and a memset), interleaved.
* ``bandwidth_fraction``: achieved bandwidth of the best memory-bound implementation over
  the measured device-to-device copy bandwidth.
* ``throughput``: evaluations per minute of a group of new submissions judged by
  ``evaluate_many`` with N threads (compiles in parallel, timing serialized on the GPU).
* ``speedup_vs_c``: the naive kernel against the task's serial C reference on the CPU.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

TASK = "c2cuda/saxpy_f32"
FIDELITY = [("c2cuda/saxpy_f32", "naive"), ("c2cuda/saxpy_f32", "vec4_grid_stride"),
            ("c2cuda/matmul_f32", "naive"), ("c2cuda/transpose_f32", "naive")]  # fmt: skip
HARNESS_KERNELS = ("fill_canary", "check_canary", "flush_read", "compare_")


def relative_range(values: list[float]) -> float:
    """(max - min) / median."""
    return (max(values) - min(values)) / statistics.median(values)


def spread_by_flush(task, source: str, repeats: int) -> tuple[dict, list]:
    """Median time and speedup over ``repeats`` fresh evaluations per L2 flush mode, interleaved.

    Returns the figures per mode and the default mode's evaluations.
    """
    modes = ("read", "write")
    evaluators = {m: Evaluator(CudaBackend(timing=TimingOptions(l2_flush=m))) for m in modes}
    runs: dict[str, list] = {m: [] for m in modes}
    for _ in range(repeats):
        for mode in modes:
            runs[mode].append(timed_eval(evaluators[mode], task, source)[1])
    figures = {}
    for mode, evaluations in runs.items():
        medians, speedups = [e.runtime_ms for e in evaluations], [e.speedup for e in evaluations]
        figures[mode] = {"spread": relative_range(medians), "medians_ms": medians,
                         "speedup_spread": relative_range(speedups), "speedups": speedups}  # fmt: skip
    return figures, runs[TimingOptions().l2_flush]


def timed_eval(ev: Evaluator, task, source: str) -> tuple[float, object]:
    start = time.perf_counter()
    e = ev.evaluate(task, source, seed=1)
    elapsed = time.perf_counter() - start
    assert e.status == "ok", (e.status, e.message, e.compile_log)
    return elapsed, e


def load_inline_seconds(source: str) -> float:
    """Build and call the kernel through torch's load_inline in a fresh directory (KernelBench's path)."""
    import torch
    from torch.utils.cpp_extension import load_inline

    cuda_src = source + """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x, torch::Tensor y, double a) {
  saxpy((int)x.numel(), (float)a, x.data_ptr<float>(), y.data_ptr<float>());
  return y;
}"""
    build_dir = tempfile.mkdtemp(prefix="load_inline-")
    start = time.perf_counter()
    declaration = "torch::Tensor run(torch::Tensor x, torch::Tensor y, double a);"
    module = load_inline(name=f"saxpy_{time.time_ns()}", cpp_sources=declaration, cuda_sources=cuda_src,
                         functions=["run"], build_directory=build_dir, verbose=False)  # fmt: skip
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    module.run(x, y, 2.5)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    shutil.rmtree(build_dir, ignore_errors=True)
    return elapsed


def ncu_ms_per_call(task_id: str, impl: str, calls: int = 5) -> float:
    """Kernel time per call from Nsight Compute's gpu__time_duration (harness kernels excluded)."""
    target = str(Path(__file__).with_name("ncu_target.py"))
    cmd = ["ncu", "--clock-control", "none", "--target-processes", "all", "--metrics", "gpu__time_duration.sum",
           "--csv", sys.executable, target, task_id, impl, str(calls)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out[out.index('"ID"'):])))
    total_ns = 0.0
    for row in rows:
        if row["Metric Name"] == "gpu__time_duration.sum" and not row["Kernel Name"].startswith(HARNESS_KERNELS):
            value = float(row["Metric Value"].replace(",", ""))
            total_ns += value * {"usecond": 1e3, "msecond": 1e6}.get(row["Metric Unit"], 1.0)
    return total_ns / calls / 1e6


def save(path: str, result: dict) -> None:
    """Write what has been measured so far (a run cut short still leaves its figures)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {sorted(result)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="benchmarks/results/gpu_eval.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-ncu", action="store_true")
    parser.add_argument("--skip-load-inline", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--group", type=int, default=16, help="submissions per throughput measurement")
    args = parser.parse_args()

    tasks = load_tasks()
    task = tasks[TASK]
    ev = Evaluator(CudaBackend(time_c_reference=True))
    naive = task.implementation("naive").source
    best = task.implementation("vec4_grid_stride").source
    timed_eval(ev, task, naive)  # harness build, copy bandwidth, perf inputs
    cold_runs = [timed_eval(ev, task, f"// variant {time.time_ns()}\n{naive}") for _ in range(args.repeats)]
    cold = [seconds for seconds, _ in cold_runs]
    warm = [timed_eval(ev, task, naive)[0] for _ in range(args.repeats)]
    by_flush, runs = spread_by_flush(task, best, args.repeats)
    medians = [e.runtime_ms for e in runs]
    device = dict(runs[0].device)
    moved = sum(a.numel(task.perf_configs[0]) * a.dtype.itemsize * (2 if a.role == "inout" else 1)
                for a in task.args if a.is_buffer)  # fmt: skip
    drivers = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
    result: dict[str, object] = {
        "card": device.get("name"),
        "driver": drivers[0] if drivers else "",
        "gpus_on_machine": len(drivers),  # the others may be busy (load, copies) during the run
        "cuda_driver_api": device.get("driver"),
        "clocks": {k: device[k] for k in ("sm_clock_mhz", "max_sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                                          "throttled_by") if k in device},  # fmt: skip
        "date": datetime.date.today().isoformat(),
        "task": TASK,
        "cold_step_s": statistics.median(cold),
        "cold_step_phases_s": {phase: statistics.median(e.seconds.get(phase, 0.0) for _, e in cold_runs)
                               for phase in cold_runs[0][1].seconds},  # fmt: skip
        "warm_step_s": statistics.median(warm),
        "spread": relative_range(medians),
        "spread_medians_ms": medians,
        "speedup_spread": relative_range([e.speedup for e in runs]),
        "spread_by_l2_flush": by_flush,
        "copy_gbps": device.get("copy_gbps"),
        "bandwidth_fraction": moved / (statistics.median(medians) * 1e-3) / 1e9 / float(device["copy_gbps"]),
        "speedup_vec4_vs_naive": statistics.median(e.speedup for e in runs),
        "speedup_vs_c": statistics.median(e.speedup_vs_c for _, e in cold_runs),
    }
    save(args.out, result)
    if not args.skip_throughput:
        result["throughput"] = {}
        for workers in (1, 4, 16):
            group = [f"// group variant {workers}-{k} {time.time_ns()}\n{naive}" for k in range(args.group)]
            start = time.perf_counter()
            judged = ev.evaluate_many(task, group, seed=1, max_workers=workers)
            per_minute = len(group) / (time.perf_counter() - start) * 60
            assert all(e.status == "ok" for e in judged), [e.message for e in judged if e.status != "ok"]
            result["throughput"][f"{workers}_workers_evals_per_min"] = per_minute
        save(args.out, result)
    if not args.skip_load_inline:
        result["load_inline_s"] = load_inline_seconds(naive)
        result["cold_speedup_vs_load_inline"] = result["load_inline_s"] / result["cold_step_s"]
        save(args.out, result)
    if not args.skip_ncu:
        fidelity = []
        for task_id, impl in FIDELITY:
            t = tasks[task_id]
            e = timed_eval(Evaluator(CudaBackend()), t, t.implementation(impl).source)[1]
            ours = e.per_config_ms[0]
            ncu = ncu_ms_per_call(task_id, impl)
            fidelity.append({"task": task_id, "impl": impl, "event_ms": ours, "ncu_ms": ncu,
                             "rel_diff": (ours - ncu) / ncu})  # fmt: skip
            result["fidelity"] = fidelity
            save(args.out, result)
    save(args.out, result)
    table = Table(title=f"GPU evaluation on {result['card']} (driver {result['driver']}, {result['date']})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key not in ("fidelity", "cold_step_phases_s", "clocks", "throughput", "spread_medians_ms",
                       "spread_by_l2_flush"):
            table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    for phase, seconds in result["cold_step_phases_s"].items():
        table.add_row(f"  cold step: {phase}", f"{seconds:.3f} s")
    for mode, figures in result["spread_by_l2_flush"].items():
        table.add_row(f"L2 flush {mode}: spread of median / speedup",
                      f"{figures['spread']:.2%} / {figures['speedup_spread']:.2%}")
    for name, value in result.get("throughput", {}).items():
        table.add_row(f"throughput {name}", f"{value:.1f}")
    table.add_row("clocks after timing", json.dumps(result["clocks"]))
    for row in result.get("fidelity", []):
        summary = f"event {row['event_ms']:.4g} ms, ncu {row['ncu_ms']:.4g} ms ({row['rel_diff']:+.1%})"
        table.add_row(f"fidelity {row['task']}:{row['impl']}", summary)
    Console().print(table)


if __name__ == "__main__":
    main()
