"""KernelBench mode against KernelBench's own evaluation path, on the same ModelNew sources in one run.

Run on a GPU machine with a CUDA build of torch:
``python benchmarks/kernelbench_mode.py --out benchmarks/results/kernelbench_mode_h200.json``.

For each ModelNew (the test fixtures: an elementwise tanh and a fused Linear + mish + relu, on their
starter tasks' perf configurations) it records:

* ours: the env's step in KernelBench mode (``Evaluator`` on ``CudaBackend``, ``mode="kernelbench"``),
  cold (the load_inline build and the PyTorch baselines are paid) and warm (the build from the cache, the
  baselines kept): wall time per stage, the candidate's median time, eager's, the speedup;
* KernelBench's: the same source exec'd in this process (a real ``load_inline`` into a fresh
  ``TORCH_EXTENSIONS_DIR``), ``Model`` and ``ModelNew`` on the GPU with the same parameters and inputs,
  checked with ``torch.allclose`` (atol = rtol = 1e-2), then timed as KernelBench's
  ``time_execution_with_cuda_event`` does (3 warmup calls, 100 trials, CUDA events around each call and
  ``torch.cuda.synchronize`` after, the same input every call, no L2 flush): its wall time cold and again
  in-process, ModelNew's and Model's mean and median, their speedup.

The two measure different things on purpose (ours flushes L2, rotates inputs, synchronizes the whole
device and checks the timed outputs); the ratios show how far the numbers and the step costs move.
The card, driver and date come from the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Task

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures" / "kernelbench_mode"
CASES = {"torch2cuda/tanh": "tanh_modelnew.py", "torch2cuda/linear_mish_relu": "linear_mish_relu_modelnew.py"}


def _value(x: float) -> float | None:
    return round(x, 5) if math.isfinite(x) else None


def ours(evaluator: Evaluator, task: Task, source: str) -> dict[str, Any]:
    """Two evaluations of the same reply: cold, then warm."""
    row: dict[str, Any] = {}
    for name, seed in (("cold", 1), ("warm", 2)):
        started = time.perf_counter()
        e = evaluator.evaluate(task, f"```python\n{source}```", seed=seed)
        row[name] = {
            "status": str(e.status), "message": e.message[:300], "step_s": round(time.perf_counter() - started, 3),
            "seconds": {k: round(v, 3) for k, v in e.seconds.items()}, "runtime_ms": _value(e.runtime_ms),
            "eager_ms": _value(e.baseline_ms), "compile_ms": _value(e.compile_ms), "speedup": _value(e.speedup),
            "speedup_lcb": _value(e.speedup_lcb), "speedup_vs_compile": _value(e.speedup_vs_compile),
            "flags": list(e.timing_flags), "device": dict(e.device),
        }  # fmt: skip
    return row


def kernelbench_style(task: Task, source: str, trials: int = 100) -> dict[str, Any]:
    """KernelBench's eval on ``source``: load_inline in this process, allclose, CUDA events, no flush."""
    import torch

    assert task.torch is not None
    config = task.perf_configs[0] if task.perf_configs else task.configs[-1]
    device = torch.device("cuda:0")
    reference: dict[str, Any] = {}
    exec(compile(task.reference_source, "reference.py", "exec"), reference)  # the task's trusted reference
    values = task_inputs(task, config, 1000)
    shapes = {a.name: [int(evaluate(d, config)) for d in a.shape] for a in task.args if a.is_buffer}
    inputs = [torch.from_numpy(np.asarray(values[n]).copy()).reshape(shapes[n]).to(device) for n in task.torch.inputs]
    row: dict[str, Any] = {}
    os.environ["TORCH_EXTENSIONS_DIR"] = tempfile.mkdtemp(prefix="kb-extensions-")
    for name in ("cold", "warm"):
        started = time.perf_counter()
        namespace: dict[str, Any] = {"__name__": f"kernelbench_{name}"}
        exec(compile(source, "model_new.py", "exec"), namespace)  # the fixture: trusted here
        built_s = time.perf_counter() - started
        init = list(task.torch.init_values(config))
        torch.manual_seed(0)
        model = reference["Model"](*init).to(device)
        model_new = namespace["ModelNew"](*init).to(device)
        params = {k: torch.from_numpy(np.asarray(values[arg]).copy()).reshape(model.state_dict()[k].shape)
                  for k, arg in task.torch.parameters.items()}  # fmt: skip
        model.load_state_dict(params, strict=False)
        model_new.load_state_dict(params, strict=False)
        with torch.no_grad():
            correct = bool(torch.allclose(model(*inputs), model_new(*inputs), atol=1e-2, rtol=1e-2))
            new_ms, ref_ms = _events(torch, model_new, inputs, trials), _events(torch, model, inputs, trials)
        row[name] = {
            "eval_s": round(time.perf_counter() - started, 3), "build_s": round(built_s, 3), "correct": correct,
            "model_new_ms": {"mean": _value(statistics.mean(new_ms)), "median": _value(statistics.median(new_ms))},
            "model_ms": {"mean": _value(statistics.mean(ref_ms)), "median": _value(statistics.median(ref_ms))},
            "speedup": _value(statistics.mean(ref_ms) / statistics.mean(new_ms)),
        }  # fmt: skip
    return row


def _events(torch: Any, model: Any, inputs: list, trials: int) -> list[float]:
    """KernelBench's ``time_execution_with_cuda_event``: warmup, then events around each call, synchronize after."""
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def measure(task_ids: list[str]) -> dict[str, Any]:
    tasks = load_tasks(kind="torch2cuda")
    evaluator = Evaluator(CudaBackend(), EvalOptions(mode="kernelbench"))
    rows = []
    for task_id in task_ids or list(CASES):
        source = (FIXTURES / CASES[task_id]).read_text()
        row = {"task": task_id, "fixture": CASES[task_id], "ours": ours(evaluator, tasks[task_id], source),
               "kernelbench": kernelbench_style(tasks[task_id], source)}  # fmt: skip
        o, k = row["ours"]["warm"], row["kernelbench"]["warm"]
        if o["runtime_ms"] and k["model_new_ms"]["median"]:
            row["ratios"] = {
                "runtime_ours_over_kernelbench": round(o["runtime_ms"] / k["model_new_ms"]["median"], 3),
                "speedup_ours_over_kernelbench": _value((o["speedup"] or math.nan) / (k["speedup"] or math.nan)),
                "warm_step_over_kernelbench_eval": round(o["step_s"] / k["eval_s"], 3),
            }
        rows.append(row)
        print(json.dumps(row))
    device = next((r["ours"]["warm"]["device"] for r in rows if r["ours"]["warm"]["device"]), {})
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "cases": rows}  # fmt: skip


def main() -> None:
    """Command line: ``--tasks`` (default both fixtures' tasks) and ``--out``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=[], choices=list(CASES), help="tasks (default: both)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/kernelbench_mode.json"))
    args = parser.parse_args()
    result = measure(args.tasks)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
