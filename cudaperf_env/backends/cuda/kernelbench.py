"""KernelBench mode, the parent's side: build the screened extensions, run ``ModelNew`` in a confined torch
worker, time it against the PyTorch reference.

The worker (``kernelbench_worker.py``, one process per submission) gets inputs and parameters the parent
drew, as files in the parent's own folder, and returns every buffer after a forward; the evaluator judges
them against the trusted reference exactly as in native mode (inputs unchanged, outputs within
tolerance, the zero-fill probe). Timing reuses the GPU backend's method: a checked round on every input
set, warmup, then calls rotated over the sets, each after an L2 flush, between CUDA events with a
device-wide synchronize before the end event, until the trial limits, the budget or the target error;
the parent's own clock cross-checks the events; each set's last timed outputs must equal its checked
call's, and, at indices drawn after timing, the trusted torch process's outputs. The speedup is over the
reference run eagerly (and under ``torch.compile``) in the trusted torch process
(``torch_baselines.py``), on the same input sets.

:class:`KernelBenchRunner` also runs on ``device="cpu"`` (C++ extensions, host timing) so its protocol is
tested where there is no GPU; the environment offers the mode on the ``cuda`` backend only.
"""

from __future__ import annotations

import base64
import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.backends.base import CallResult, Crash, Job, Worker
from cudaperf_env.backends.cuda.clocks import read_clocks
from cudaperf_env.backends.cuda.perf_inputs import PERF_SEED
from cudaperf_env.backends.cuda.timing import (
    SpeedupEstimate,
    Timing,
    TimingOptions,
    bandwidth_flag,
    wall_clock_inconsistent,
)
from cudaperf_env.backends.cuda.torch_baselines import TorchBaselines, TorchTimes
from cudaperf_env.backends.execute import io_dir
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.sandbox import WorkerProcess
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.source.inline_extension import InlineExtension
from cudaperf_env.status import Status
from cudaperf_env.tasks.expressions import evaluate
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.cache import cache_dir
from cudaperf_env.toolchain.confine import Confinement, Limits
from cudaperf_env.toolchain.extension import ExtensionBuild, build_extensions

WORKER = Path(__file__).with_name("kernelbench_worker.py")
TIMED_MISMATCH_FRACTION = 0.01  # as the GPU backend: a few elements may stray (reordered sums), not many
SAMPLES_PER_OUTPUT = 4096
_STATUS = {"ok": Status.OK, "refused": Status.REJECTED, "error": Status.RUNTIME_ERROR}


@dataclass
class KernelBenchRunner:
    """Runs KernelBench-mode submissions on ``device`` (``cuda:N``; ``cpu`` for the protocol's tests).

    Attributes:
        device: The torch device of the worker.
        arch: GPU architecture the extensions are built for (None: ``resolve_arch()``, else C++ sources only).
        resolve_arch: Finds the architecture on first use (the backend's ``detect_arch``).
        timeout_s: Limit of one forward (and of loading the submission, plus a minute for torch's import).
        build_timeout_s: Limit of one extension's build.
        timing: How the forward is timed (the GPU backend's options).
        confinement: The worker's confinement (default: the GPU worker's, or rlimits for ``cpu``).
        baselines: The trusted torch process timing the reference (None: no speedup, the candidate's time only).
        gpu_lock: Held around every GPU phase (the backend's lock), so timed phases never share the card.
        probe: The backend's health probe, run after a worker crashed (a failing one raises
            ``BackendUnavailableError``, as in native mode).
    """

    device: str = "cuda:0"
    arch: str | None = None
    timeout_s: float = 30.0
    build_timeout_s: float = 300.0
    timing: TimingOptions = field(default_factory=TimingOptions)
    confinement: Confinement | None = None
    baselines: TorchBaselines | None = None
    gpu_lock: AbstractContextManager[Any] = field(default_factory=nullcontext)
    probe: Callable[[Path], bool] | None = None
    resolve_arch: Callable[[], str] | None = None
    copy_gbps: float = field(default=math.nan, init=False)  # the card's copy bandwidth, measured once

    def build(self, extensions: Sequence[InlineExtension], cancel: threading.Event | None = None) -> ExtensionBuild:
        """Build (or find in the cache) every extension the screen read."""
        if self.arch is None and self.resolve_arch is not None:
            self.arch = self.resolve_arch()
        return build_extensions(extensions, self.arch, self.build_timeout_s, cancel)

    def start_worker(self, workdir: Path) -> WorkerProcess:
        """A confined worker importing torch and making its device context while the build runs."""
        # The worker's user id is random and has no passwd entry: torch's CUDA path asks getpass.getuser()
        # (seen on an H100: "KeyError: getpwuid(): uid not found"), which reads these first.
        names = {"USER": "cudaperf", "LOGNAME": "cudaperf", "HOME": str(workdir)}
        worker = WorkerProcess(workdir, env={"OMP_NUM_THREADS": "1", **names}, script=WORKER,
                               confinement=self._confinement(), visible=[cache_dir("torch_extensions")],
                               site_packages=True)  # fmt: skip
        worker.send({"op": "init", "device": self.device})
        return worker

    def load(self, source: str, build: ExtensionBuild, worker: Worker) -> str:
        """Run the submission's module in the worker with its builds; "" when ``ModelNew`` is ready, else why not."""
        assert isinstance(worker, WorkerProcess), "load() takes the worker start_worker() made"
        request = {"op": "load", "source": source, "modules": {k: str(p) for k, p in build.modules.items()}}
        reply = worker.request(request, self.timeout_s + 120)  # the first request also waits for torch's import
        if isinstance(reply, Crash):
            return f"the worker stopped while loading the submission: {reply.message}"
        if not reply.get("ok") or reply.get("status") != "ok":
            return str(reply.get("message") or reply.get("error") or "the submission could not be loaded")
        return ""

    def run(self, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker) -> list[CallResult]:
        """One forward per job on fresh inputs; every buffer back; stop at the first failure."""
        assert isinstance(worker, WorkerProcess), "run() takes the worker start_worker() made"
        results: list[CallResult] = []
        for index, job in enumerate(jobs):
            path = io_dir(workdir) / f"job-{index}.npz"
            arrays: dict[str, Any] = {n: np.asarray(job.inputs[n]) for n in _bound(task)}
            np.savez(path, **arrays)
            started = time.perf_counter()
            with self.gpu_lock:
                reply = worker.request({"op": "run", "arrays": str(path), **forward_spec(task, job.config)},
                                       self.timeout_s)  # fmt: skip
            result = call_result(task, job.config, reply, time.perf_counter() - started)
            results.append(result)
            if result.status != Status.OK:
                break
        crashed = any(r.crash_kind not in ("", "protocol") for r in results)
        if crashed and self.probe is not None and not self.probe(workdir):
            raise BackendUnavailableError("the GPU did not pass its health probe after a crashed submission")
        return results

    def time(self, task: Task, workdir: Path, worker: Worker) -> Timing | Crash:
        """Time the (correct) ModelNew on each timing configuration; speedups over the PyTorch reference."""
        assert isinstance(worker, WorkerProcess), "time() takes the worker start_worker() made"
        configs = timing_configs(task)
        estimates, flags, mismatch = [], [], ""
        phases: dict[str, float] = {}
        eager: list[TorchTimes] = []
        left_s = self.timing.evaluation_budget_s
        for index, config in enumerate(configs):
            opts = replace(self.timing, budget_s=min(self.timing.budget_s, max(0.0, left_s)))
            path = io_dir(workdir) / f"perf-{index}.npz"
            sets = [task_inputs(task, config, PERF_SEED + k) for k in range(opts.input_sets)]
            arrays: dict[str, Any] = {f"{k}:{n}": np.asarray(s[n]) for k, s in enumerate(sets) for n in _bound(task)}
            np.savez(path, **arrays)
            started = time.perf_counter()
            with self.gpu_lock:
                reply = worker.request({"op": "time", "arrays": str(path), "sets": opts.input_sets,
                                        "timing": timing_spec(opts), "tolerances": tolerances(task),
                                        **forward_spec(task, config)}, opts.budget_s * 4 + 120)  # fmt: skip
                if isinstance(reply, Crash) or not reply.get("ok") or reply.get("status") != "ok":
                    return _crash(reply)
                flags += self._wall_check(worker)
            path.unlink(missing_ok=True)
            left_s -= time.perf_counter() - started
            for key, value in reply.get("phases", {}).items():
                phases[key] = phases.get(key, 0.0) + float(value)
            mismatch = mismatch or str(reply.get("problem") or "") or timed_mismatch(task, reply.get("mismatches", []))
            times = self._reference_times(task, index, config, opts, workdir)
            eager.append(times)
            mismatch = mismatch or self._sampled_check(task, index, config, opts, workdir, worker)
            estimates.append(over_eager([float(t) for t in reply["times"]], times.eager_ms, opts.deadband))
            flags += self._roofline(task, config, estimates[-1].candidate_ms, worker)
        device = {k: v for k, v in worker.early_replies[0].items() if k != "ok"} if worker.early_replies else {}
        if self.device.startswith("cuda"):
            device.update(read_clocks(torch_device_index(self.device)))  # right after the timed calls
        return replace(combine(estimates, eager, flags, mismatch, phases, self.timing.deadband), device=device)

    def _reference_times(self, task: Task, index: int, config: Config, opts: TimingOptions,
                         workdir: Path) -> TorchTimes:  # fmt: skip
        if self.baselines is None:
            return TorchTimes(math.nan, error="no PyTorch baseline on this runner")
        with self.gpu_lock:  # the torch process has the GPU to itself, as a timed worker does
            return self.baselines.times(task, index, config, opts, workdir)

    def _sampled_check(self, task: Task, index: int, config: Config, opts: TimingOptions, workdir: Path,
                       worker: WorkerProcess) -> str:  # fmt: skip
        """The last timed outputs at indices drawn now, against the trusted reference's on the same sets."""
        if self.baselines is None:
            return ""
        rng = np.random.default_rng()  # unpredictable: drawn after the timed calls ran
        sizes = [math.prod(int(evaluate(d, config)) for d in a.shape) for a in _outputs(task)]
        indices = [sorted(rng.choice(n, min(n, SAMPLES_PER_OUTPUT), replace=False).tolist()) for n in sizes]
        reply = worker.request({"op": "sample", "indices": indices}, self.timeout_s)
        if isinstance(reply, Crash) or not reply.get("ok") or not isinstance(reply.get("values"), list):
            return "the outputs of the timed calls could not be read back for checking"
        with self.gpu_lock:
            want = self.baselines.samples(task, index, config, opts, workdir, indices)
        return "" if want is None else sampled_mismatch(task, reply["values"], want)  # None: the reference failed

    def _roofline(self, task: Task, config: Config, candidate_ms: float, worker: WorkerProcess) -> list[str]:
        """A call that moved its buffers faster than the card copies memory was not timed whole (GPU only)."""
        if not self.device.startswith("cuda") or not math.isfinite(candidate_ms):
            return []
        if not math.isfinite(self.copy_gbps):
            reply = worker.request({"op": "bandwidth", "bytes": 1 << 30}, self.timeout_s)
            if isinstance(reply, Crash) or not isinstance(reply.get("copy_gbps"), (int, float)):
                return []
            self.copy_gbps = float(reply["copy_gbps"])
        moved = sum(a.dtype.itemsize * math.prod(int(evaluate(d, config)) for d in a.shape)
                    for a in task.args if a.is_buffer)  # fmt: skip
        too_fast = bandwidth_flag(moved, candidate_ms, self.copy_gbps)
        return ["faster than the memory bandwidth allows"] if too_fast else []

    def _wall_check(self, worker: WorkerProcess) -> list[str]:
        """Back-to-back calls timed by the parent's own clock must explain the events (side streams, threads)."""
        calls = self.timing.wall_check_calls
        started = time.perf_counter()
        reply = worker.request({"op": "wall_check", "calls": calls}, self.timeout_s * 4)
        wall_ms = (time.perf_counter() - started) * 1e3
        if isinstance(reply, Crash) or not reply.get("ok") or not isinstance(reply.get("events"), list):
            return ["wall-clock check failed"]
        events = [float(e) for e in reply["events"]]
        return ["event times disagree with the wall clock"] if wall_clock_inconsistent(events, wall_ms, 0.0) else []

    def _confinement(self) -> Confinement:
        if self.device.startswith("cuda"):
            from cudaperf_env.backends.cuda.backend import gpu_confinement

            return self.confinement or gpu_confinement()
        limits = Limits(memory_bytes=None, data_bytes=8 << 30, cpu_seconds=900, file_bytes=64 << 20, open_files=1024)
        return self.confinement or Confinement(limits=limits)


def _bound(task: Task) -> list[str]:
    assert task.torch is not None, f"{task.id} has no PyTorch reference"
    return [*task.torch.inputs, *task.torch.parameters.values()]


def _outputs(task: Task) -> list[Any]:
    assert task.torch is not None
    args = {a.name: a for a in task.args}
    return [args[n] for n in task.torch.outputs]


def forward_spec(task: Task, config: Config) -> dict[str, Any]:
    """What the worker needs to build ``ModelNew`` and call it on ``config`` (pure)."""
    binding = task.torch
    assert binding is not None, f"{task.id} has no PyTorch reference"
    return {"init": list(binding.init_values(config)), "inputs": list(binding.inputs),
            "parameters": dict(binding.parameters),
            "shapes": {a.name: [int(evaluate(d, config)) for d in a.shape] for a in task.args if a.is_buffer},
            "outputs": [[a.name, a.dtype.numpy.name] for a in _outputs(task)]}  # fmt: skip


def timing_spec(opts: TimingOptions) -> dict[str, Any]:
    return {"warmup": opts.warmup, "min_trials": opts.min_trials, "max_trials": opts.max_trials,
            "budget_s": opts.budget_s, "budget_floor": opts.budget_floor, "target_rse": opts.target_rse,
            "flush_bytes": opts.flush_bytes, "l2_flush": opts.l2_flush}  # fmt: skip


def tolerances(task: Task) -> list[dict[str, float]]:
    return [{"atol": task.tolerance(a.dtype).atol, "rtol": task.tolerance(a.dtype).rtol} for a in _outputs(task)]


def call_result(task: Task, config: Config, reply: dict[str, Any] | Crash, seconds: float) -> CallResult:
    """The worker's answer to one ``run`` as the judge reads it; a reply that lacks a buffer is malformed (pure)."""
    if isinstance(reply, Crash):
        status = Status.TIMEOUT if reply.kind == "timeout" else Status.RUNTIME_ERROR
        return CallResult(status, reply.message, reply.kind, seconds=seconds)
    if not reply.get("ok"):
        return CallResult(Status.RUNTIME_ERROR, str(reply.get("error", "the worker failed")), "exit", seconds=seconds)
    status = _STATUS.get(str(reply.get("status")), Status.RUNTIME_ERROR)
    if status != Status.OK:
        return CallResult(status, str(reply.get("message", "")), seconds=seconds)
    buffers, sent = {}, reply.get("buffers")
    for arg in task.args:
        if not arg.is_buffer:
            continue
        size = math.prod(int(evaluate(d, config)) for d in arg.shape)
        entry = sent.get(arg.name) if isinstance(sent, dict) else None
        try:
            values = np.frombuffer(base64.b64decode(entry["data"]), dtype=arg.dtype.numpy).copy()  # type: ignore[index]
        except (TypeError, KeyError, ValueError):
            values = None
        if values is None or values.size != size:
            return CallResult(Status.RUNTIME_ERROR, f"the worker returned no valid `{arg.name}` (a malformed reply)",
                              "protocol", seconds=seconds)  # fmt: skip
        buffers[arg.name] = values
    return CallResult(Status.OK, buffers=buffers, seconds=seconds)


def _crash(reply: dict[str, Any] | Crash) -> Crash:
    if isinstance(reply, Crash):
        return reply
    if reply.get("status") == "refused":
        return Crash("refused", str(reply.get("message", "")))
    return Crash("exit", str(reply.get("message") or reply.get("error") or "the worker failed while timing"))


def timed_mismatch(task: Task, mismatches: Sequence[dict[str, Any]]) -> str:
    """The wrong-answer message when a set's last timed outputs differ from its checked call's (pure)."""
    outputs = _outputs(task)
    for m in mismatches:
        if m["count"] > TIMED_MISMATCH_FRACTION * m["total"]:
            return (f"outputs of timed calls on input set {m['set'] + 1} differ from the first call on the same "
                    f"inputs (`{outputs[m['output']].name}`, {m['count']} of {m['total']} elements): results must not "
                    "depend on earlier calls")  # fmt: skip
    return ""


def sampled_mismatch(task: Task, got: Sequence[Sequence[Sequence[float]]],
                     want: Sequence[Sequence[Sequence[float]]]) -> str:  # fmt: skip
    """The wrong-answer message when sampled timed outputs differ from the reference's (pure).

    ``got[k][i]`` and ``want[k][i]`` hold output ``i``'s values on input set ``k`` at the same indices.
    """
    outputs = _outputs(task)
    if len(got) != len(want):
        return "the timed outputs could not be sampled on every input set"
    for k, (g_set, w_set) in enumerate(zip(got, want, strict=True)):
        for i, (g, w) in enumerate(zip(g_set, w_set, strict=True)):
            a, b = np.asarray(g, float), np.asarray(w, float)
            tol = task.tolerance(outputs[i].dtype)
            if a.shape != b.shape:
                return "the timed outputs could not be sampled"
            bad = ~(np.abs(a - b) <= tol.atol + tol.rtol * np.abs(b)) & ~(np.isnan(a) & np.isnan(b))
            if bad.sum() > TIMED_MISMATCH_FRACTION * max(1, b.size):
                return (f"outputs of timed calls on the timing configuration differ from the PyTorch reference "
                        f"(`{outputs[i].name}` on input set {k + 1}: {int(bad.sum())} of {b.size} sampled "
                        "elements): the kernel must be correct at every size")  # fmt: skip
    return ""


def over_eager(candidate_ms: Sequence[float], eager_ms: float, deadband: float) -> SpeedupEstimate:
    """Median candidate time and the speedup eager / candidate; its lower bound takes the candidate's 95%
    bootstrap upper time (the reference's time, measured apart in the trusted process, is fixed) (pure)."""
    c = np.asarray(candidate_ms, float)
    if c.size == 0:  # timing stopped before its first trial (a problem found in the checked round)
        return SpeedupEstimate(math.nan, eager_ms, math.nan, math.nan, 0)
    med = float(np.median(c))
    if not (math.isfinite(eager_ms) and eager_ms > 0 and med > 0):
        return SpeedupEstimate(med, eager_ms, math.nan, math.nan, int(c.size))
    boot = np.median(np.random.default_rng(0).choice(c, (400, c.size)), axis=1)
    speedup = eager_ms / med
    lcb = min(speedup, eager_ms / float(np.quantile(boot, 0.95)))
    return SpeedupEstimate(med, eager_ms, 1.0 if abs(speedup - 1) <= deadband else speedup, lcb, int(c.size))


def combine(estimates: Sequence[SpeedupEstimate], reference: Sequence[TorchTimes], flags: Sequence[str],
            mismatch: str, phases: dict[str, float], deadband: float) -> Timing:  # fmt: skip
    """The timing verdict over the timing configurations: geometric means, the compile baseline beside (pure)."""

    def gmean(xs: Sequence[float]) -> float:
        ok = [x for x in xs if math.isfinite(x) and x > 0]
        return float(np.exp(np.mean(np.log(ok)))) if ok and len(ok) == len(xs) else math.nan

    speedup = gmean([e.speedup for e in estimates])
    combined = SpeedupEstimate(gmean([e.candidate_ms for e in estimates]), gmean([e.baseline_ms for e in estimates]),
                               speedup, gmean([e.speedup_lcb for e in estimates]),
                               min((e.trials for e in estimates), default=0))  # fmt: skip
    compiled = tuple(t.compile_ms for t in reference)
    vs_compile = gmean([c / e.candidate_ms for c, e in zip(compiled, estimates, strict=True)])
    vs_compile = 1.0 if math.isfinite(vs_compile) and abs(vs_compile - 1) <= deadband else vs_compile
    has_eager = math.isfinite(speedup)
    return Timing(combined, tuple(dict.fromkeys(flags)), mismatch, {}, tuple(estimates), phases,
                  baseline="pytorch_eager" if has_eager else "", eager_ms=tuple(t.eager_ms for t in reference),
                  compile_ms=compiled, compile_error=next((t.compile_error for t in reference if t.compile_error), ""),
                  eager_error=next((t.error for t in reference if t.error), ""),
                  speedup_vs_compile=vs_compile)  # fmt: skip


def torch_device_index(device: str) -> int:
    """``cuda:1`` -> 1, ``cuda`` -> 0 (pure)."""
    return int(device.partition(":")[2] or 0)


def timing_configs(task: Task) -> tuple[Config, ...]:
    """The configurations timed: the task's perf configurations, else its largest shown one (as native mode)."""
    return tuple(task.perf_configs) or (max(task.configs, key=lambda c: sum(c.values())),)
