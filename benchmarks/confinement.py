"""What kernel confinement costs per step: the same work with ``CUDAPERF_CONFINE`` on and off, interleaved.

Measures, on the CPU backend of this machine:

* ``launcher``: a confined ``/bin/true`` against a bare one: the fixed cost per confined
  process (a step with a new source starts three: the nvcc check, the backend's build and
  the worker; a step with a source seen before starts one, the worker);
* ``worker``: starting a worker, loading a built submission and one call on a small
  configuration (every step that runs does this once);
* ``compiler``: one compiler invocation on a tiny file (a step with a new source runs two:
  the nvcc check and the backend's build);
* ``step_cached`` / ``step_new``: a whole ``env.step`` with a source seen before (no
  compiler runs) and with a new one (both compilers run);
* with ``--gpu`` (on a GPU machine), ``gpu_worker``: starting the GPU worker (CUDA context),
  loading the submission and one call.

Samples alternate on/off so other load on the machine falls on both alike; medians and the
added milliseconds are reported. The goal is under 50 ms added per step.

Run::

    python benchmarks/confinement.py --json > benchmarks/results/confinement_cpu.json
    python benchmarks/confinement.py --gpu --json > benchmarks/results/confinement_gpu.json  # GPU machine
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOAL_MS = 50.0


def _toggle(on: bool) -> None:
    os.environ["CUDAPERF_CONFINE"] = "on" if on else "off"


def measure(fn: Callable[[], None], rounds: int) -> dict[str, list[float]]:
    """``fn`` timed ``rounds`` times with confinement on and off, alternating (milliseconds)."""
    samples: dict[str, list[float]] = {"on": [], "off": []}
    for k in range(2 * rounds):
        mode = "on" if k % 2 == 0 else "off"
        _toggle(mode == "on")
        start = time.perf_counter()
        fn()
        samples[mode].append((time.perf_counter() - start) * 1e3)
    return samples


def summary(samples: dict[str, list[float]]) -> dict[str, Any]:
    on, off = statistics.median(samples["on"]), statistics.median(samples["off"])
    return {"on_median_ms": round(on, 2), "off_median_ms": round(off, 2), "added_ms": round(on - off, 2),
            "samples_ms": {k: [round(v, 2) for v in vs] for k, vs in samples.items()}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="samples per mode and measure")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--gpu", action="store_true", help="also measure the GPU worker (needs an NVIDIA GPU)")
    args = parser.parse_args()

    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.backends.execute import Job, run_jobs
    from cudaperf_env.env import CudaPerfEnv
    from cudaperf_env.tasks.inputs import make_inputs
    from cudaperf_env.toolchain import tools
    from cudaperf_env.toolchain.cache import scratch_dir
    from cudaperf_env.toolchain.confine import Confinement, probe_mode

    env = CudaPerfEnv(backend=CpuBackend(), task_ids=["c2cuda/saxpy_f32"], max_turns=10**6)
    env.reset(seed=0)
    task = env.task
    assert task is not None
    source = task.implementation(task.baseline).source
    build = CpuBackend().build(task, source)
    assert build.ok and build.library is not None, build.log
    library = build.library
    config = min(task.configs, key=lambda c: sum(c.values()))
    job = Job(config, make_inputs(task, config, 0))

    def worker() -> None:
        folder = scratch_dir()
        try:
            assert run_jobs(library, task, [job], folder, 10.0, uid=65534)[0].status == "ok"
        finally:
            subprocess.run(["rm", "-rf", str(folder)], check=False)

    tiny = Path(tempfile.mkdtemp()) / "tiny.c"
    tiny.parent.chmod(0o755)  # read by the confined compiler's own user
    tiny.write_text("int f(int x) { return x + 1; }\n")

    def compiler() -> None:
        work = tempfile.mkdtemp()
        confine = Confinement() if os.environ["CUDAPERF_CONFINE"] == "on" else None
        result = tools.run_tool([tools.host_compiler("gcc"), "-c", str(tiny), "-o", "t.o"], work, 30.0,
                                confine=confine, visible=[tiny.parent])  # fmt: skip
        assert result.ok, result.output
        subprocess.run(["rm", "-rf", work], check=False)

    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    scratch = Path(tempfile.mkdtemp())
    scratch.chmod(0o755)

    def launcher() -> None:
        argv = Confinement().wrap([true], cwd=scratch).argv
        assert subprocess.run(argv, check=False).returncode == 0

    stamp = time.time_ns()
    counter = iter(range(10**6))

    def step(code: str) -> None:
        assert str(env.step(f"```cuda\n{code}```")[4]["status"]) == "ok"

    gpu_measure = {}
    if args.gpu:
        from cudaperf_env.backends.cuda.backend import CudaBackend

        gpu = CudaBackend(measures_time=False)
        gpu_build = gpu.build(task, source)
        assert gpu_build.ok and gpu_build.library is not None, gpu_build.log
        gpu_library = gpu_build.library

        def gpu_worker() -> None:
            folder = scratch_dir()
            try:
                with gpu.start_worker(folder) as proc:
                    assert run_jobs(gpu_library, task, [job], folder, 60.0, worker=proc)[0].status == "ok"
            finally:
                subprocess.run(["rm", "-rf", str(folder)], check=False)

        gpu_measure["gpu_worker"] = summary(measure(gpu_worker, args.rounds))

    step(source)  # expected outputs and the prebuilt runtime, once
    measures = {
        "launcher": summary(measure(launcher, 5 * args.rounds)),
        "worker": summary(measure(worker, args.rounds)),
        "compiler": summary(measure(compiler, args.rounds)),
        "step_cached": summary(measure(lambda: step(source), args.rounds)),
        "step_new": summary(measure(lambda: step(f"// variant {stamp}-{next(counter)}\n{source}"),
                                    max(3, args.rounds // 2))),  # fmt: skip
        **gpu_measure,
    }
    result = {
        "benchmark": f"confinement: added milliseconds per step (cpu backend{', gpu worker' if gpu_measure else ''})",
        "date": datetime.date.today().isoformat(),
        "machine": {"cores": os.cpu_count(), "cpu": _cpu_name(), "kernel": platform.release(),
                    "python": platform.python_version(), "gcc": tools.version(tools.host_compiler("gcc")),
                    "confinement": probe_mode(), "load_average_1min": round(os.getloadavg()[0], 2)},  # fmt: skip
        "task": "c2cuda/saxpy_f32",
        "goal_added_ms_per_step": GOAL_MS,
        "measures": measures,
        "added_ms_per_step_from_launcher": {
            "new_source (3 confined processes)": round(3 * measures["launcher"]["added_ms"], 2),
            "cached_source (1 confined process)": round(measures["launcher"]["added_ms"], 2),
        },
    }
    print(json.dumps(result, indent=2) if args.json else _table(measures))


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _table(measures: dict[str, Any]) -> str:
    rows = [f"{'measure':<12} {'off ms':>9} {'on ms':>9} {'added ms':>9}"]
    for name, m in measures.items():
        rows.append(f"{name:<12} {m['off_median_ms']:>9.1f} {m['on_median_ms']:>9.1f} {m['added_ms']:>9.1f}")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
