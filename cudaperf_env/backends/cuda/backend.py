"""The ``cuda`` backend: nvcc-built shared libraries run on a real GPU, with hardened timing."""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from cudaperf_env.backends.base import Build, Capabilities, Worker
from cudaperf_env.backends.buffers import BufferFile, poison_value
from cudaperf_env.backends.cuda import imports
from cudaperf_env.backends.cuda.budget import (
    CallLimits,
    decided_slow,
    labelled_ms,
    speedup_upper_bound,
    too_slow_message,
    wall_check_calls,
)
from cudaperf_env.backends.cuda.clocks import read_clocks
from cudaperf_env.backends.cuda.device_lock import DeviceLock, device_identity
from cudaperf_env.backends.cuda.kernelbench import KernelBenchRunner
from cudaperf_env.backends.cuda.perf_inputs import PerfInputs
from cudaperf_env.backends.cuda.replies import time_reply_problem, wall_check_problem
from cudaperf_env.backends.cuda.sanitizer import sanitizer_command, sanitizer_verdict
from cudaperf_env.backends.cuda.timing import (
    SpeedupEstimate,
    Timing,
    TimingOptions,
    bandwidth_flag,
    estimate_speedup,
    over_c_reference,
    wall_clock_inconsistent,
)
from cudaperf_env.backends.cuda.torch_baselines import TorchBaselines, over_pytorch
from cudaperf_env.backends.execute import CallResult, Job, call_once, io_dir, run_jobs
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.harness import units, wrap
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.source.phases import translate
from cudaperf_env.source.screen import Finding
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain import initcode, tools
from cudaperf_env.toolchain.cache import cache_dir
from cudaperf_env.toolchain.confine import Confinement, Limits
from cudaperf_env.toolchain.native import build_c_reference, build_library, compiled_object

HERE = Path(__file__).parent


@lru_cache(maxsize=1)
def detect_arch() -> str:
    """``sm_XY`` of GPU 0, from ``nvidia-smi`` (no CUDA context needed)."""
    if not shutil.which("nvidia-smi"):
        raise BackendUnavailableError("no NVIDIA driver (nvidia-smi not found); use backend='cpu'")
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
    if out.returncode != 0 or not out.stdout.strip():
        raise BackendUnavailableError(f"nvidia-smi found no usable GPU: {out.stderr.strip()}; use backend='cpu'")
    major, minor = out.stdout.splitlines()[0].strip().split(".")
    return f"sm_{major}{minor}"


def nvcc_flags(arch: str) -> list[str]:
    """Fixed flags for every GPU build (never the user's); ``-fdata-sections`` puts each host variable in a
    section of its own, so a relocation to it names it (``toolchain/initcode.py``)."""
    return ["-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17", f"-arch={arch}", "-lineinfo",
            "-Xcompiler", "-fdata-sections", "-Xlinker", "-z,defs", "-Xlinker", "-Bsymbolic"]  # fmt: skip


# The compiler's initialisers' names, which the load-time code check trusts: no identifier may spell them.
COMPILER_NAMES = re.compile(r"\b_GLOBAL__\w*")


def build_gpu(task: Task, code: str, arch: str, timeout_s: float = 120.0,
              cancel: threading.Event | None = None) -> Build:  # fmt: skip
    """Build ``code`` for ``task`` with nvcc for ``arch`` (no GPU needed), confined, with the checks of the
    submission's compiled unit (nvcc's host object, kept by ``-keep``) before linking: no code of the
    submission at load time (``toolchain/initcode.py``, nvcc's registration admitted) and imports and
    definitions as in :func:`~cudaperf_env.backends.cuda.imports.check_unit`; then the symbol check of the
    library. Either refusal is an ``unsupported`` finding (status ``rejected``)."""
    named = COMPILER_NAMES.search(translate(code))
    if named:
        message = (f"`{named.group()}` is a name of the compiler's initialisers, which the checks of the built "
                   "code trust; a submission may neither use nor define it: rename it")  # fmt: skip
        return Build(False, unsupported=(Finding(0, "runtime_names", message),))
    flags = nvcc_flags(arch)
    unit = imports.unit_checker(tuple(flags))
    submission, harness = units(task, code, "cuda")
    shim = compiled_object(tools.nvcc(), flags, harness, ".cu")  # the same for every submission to the task
    sources, objects = ([submission], (shim,)) if shim else ([submission, harness], ())
    result = build_library(tools.nvcc(), flags, sources, ".cu", timeout_s=timeout_s, cancel=cancel,
                           confine=Confinement(), check=imports.checker(tuple(flags)), objects=objects,
                           object_check=lambda obj: initcode.check(obj, nvcc=True) or unit(obj))  # fmt: skip
    if result.refused.startswith(initcode.MESSAGE):
        return Build(False, log=result.log, unsupported=(Finding(0, "constructor", result.refused),))
    if result.refused:  # the symbol checks: calls into the system the screen did not see, or replaced
        return Build(False, log=result.log, unsupported=(Finding(0, "symbols", result.refused),))
    return Build(result.ok, result.library, result.log, (), result.seconds, result.cached)


def gpu_confinement() -> Confinement:
    """The GPU worker's confinement: its device nodes, ``/sys``, and a memory limit on private data
    (a CUDA context reserves far more address space than it uses, so not on address space)."""
    devices = tuple(sorted(glob.glob("/dev/nvidia*")))
    limits = Limits(memory_bytes=None, data_bytes=32 << 30, cpu_seconds=4 * 3600, open_files=1024, file_bytes=64 << 20)
    return Confinement(limits=limits, devices=devices, sys=True)


@lru_cache(maxsize=4)
def harness_library(arch: str) -> Path:
    """The trusted timing/buffer harness, built once per architecture."""
    result = build_library(tools.nvcc(), nvcc_flags(arch), (HERE / "harness.cu").read_text(), ".cu")
    if not result.ok or result.library is None:
        raise BackendUnavailableError(f"cannot build the GPU harness:\n{result.log}")
    return result.library


@dataclass(frozen=True)
class CudaBackend:
    """Runs submissions on GPU ``device``; times them against the task's baseline.

    Attributes:
        device: CUDA device index.
        timeout_s: Wall-clock limit per call.
        build_timeout_s: Limit for nvcc.
        timing: How candidate and baseline are timed.
        sanitizers: compute-sanitizer tools run once on the smallest configuration of a correct submission.
        time_c_reference: Also time the task's serial C reference on the CPU on the timing
            configurations (once per task; NaN past ``c_reference_timeout_s``) for ``speedup_vs_c``.
        call_limits: Each correctness call's wall-clock limit, scaled from the baseline's time on its
            configuration (its GPU label, else measured once per task in a worker of its own) and at
            most ``timeout_s``; None: ``timeout_s`` for every call.
        torch_baselines: For a PyTorch task, also time its reference ``Model`` eagerly (and, with
            ``compile_baseline``, under ``torch.compile``) in the trusted torch process, once per task and
            timing configuration, and report the speedup over eager (``speedup_vs_compile`` beside it;
            ``torch_baselines.py``). Off: the speedup stays over the task's baseline implementation.
        compile_baseline: Time ``torch.compile`` of the reference too.
        compile_timeout_s: Limit of one ``torch.compile`` build; past it (or when it fails) the task is
            eager-only (``info["compile_fallback"]``).
        shared_runs: Correctness and sanitizer runs share the card with each other (never with a
            timing; :mod:`.device_lock`). False: every GPU phase has the card to itself, as before
            (``benchmarks/gpu_grading.py`` compares the two). Default: on, unless the environment
            sets ``CUDAPERF_GPU_SHARED_RUNS=0`` (for processes that make their backend themselves,
            such as a trainer's).
    """

    device: int = 0
    timeout_s: float = 30.0
    build_timeout_s: float = 120.0
    timing: TimingOptions = field(default_factory=TimingOptions)
    name: str = "cuda"
    measures_time: bool = True
    facts: dict[str, object] = field(default_factory=dict, repr=False, compare=False)  # card, filled once
    perf_inputs: PerfInputs = field(default_factory=lambda: PerfInputs(), repr=False, compare=False)
    _lock: DeviceLock | None = field(default=None, init=False, repr=False, compare=False)
    sanitizers: tuple[str, ...] = ()  # e.g. ("memcheck", "racecheck"): see sanitizer.py
    time_c_reference: bool = False
    c_reference_timeout_s: float = 30.0
    c_reference_ms: dict[tuple[str, int], float] = field(default_factory=dict, repr=False, compare=False)
    call_limits: CallLimits | None = field(default_factory=CallLimits)
    baseline_ms: dict[tuple, float] = field(default_factory=dict, repr=False, compare=False)  # per config, once
    torch_baselines: bool = True
    compile_baseline: bool = True
    compile_timeout_s: float = 300.0
    shared_runs: bool = field(default_factory=lambda: os.environ.get("CUDAPERF_GPU_SHARED_RUNS", "1") != "0")
    pytorch: TorchBaselines | None = field(default=None, repr=False, compare=False)  # made in __post_init__
    _kernelbench: KernelBenchRunner | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lock", DeviceLock(device_identity(self.device)))
        if self.pytorch is None and self.torch_baselines:  # no process until a PyTorch task is timed
            object.__setattr__(self, "pytorch", TorchBaselines(self.device, self.compile_baseline,
                                                               self.compile_timeout_s))  # fmt: skip
        if self.timing.input_sets < 2:
            raise ValueError("CudaBackend needs timing.input_sets >= 2 (rotation is what defeats result caching)")
        if self.timing.check_first:
            raise ValueError("CudaBackend checks outputs after timing (check_first is for trusted code only)")

    @property
    def gpu_lock(self) -> DeviceLock:
        """This card's lock, across threads and processes (:mod:`.device_lock`): timings alone, runs side by side."""
        assert self._lock is not None
        return self._lock

    def run_lock(self, alone: bool = False) -> AbstractContextManager[DeviceLock]:
        """The lock a correctness or sanitizer run holds: shared with other runs (``shared_runs``), unless ``alone``."""
        return self.gpu_lock.hold(exclusive=alone or not self.shared_runs)

    @property
    def arch(self) -> str:
        return detect_arch()

    @property
    def capabilities(self) -> Capabilities:
        """Times correct submissions (unless ``measures_time`` is off) and makes their timing inputs ahead
        (:meth:`prepare`); sanitizes them if :attr:`sanitizers` is set; runs a submission that ran out of memory
        again alone where runs share the card (:attr:`shared_runs`)."""
        timer = self if self.measures_time else None
        return Capabilities(timer=timer, sanitizer=self if self.sanitizers else None, kernelbench=self.kernelbench,
                            alone=self if self.shared_runs else None, preparer=timer)  # fmt: skip

    @property
    def kernelbench(self) -> KernelBenchRunner:
        """The KernelBench-mode runner on this card: its lock, timing options, PyTorch baselines (made once)."""
        if self._kernelbench is None:
            runner = KernelBenchRunner(f"cuda:{self.device}", None, self.timeout_s, max(300.0, self.build_timeout_s),
                                       self.timing, baselines=self.pytorch, gpu_lock=self.gpu_lock, probe=self.probe,
                                       resolve_arch=detect_arch)  # fmt: skip
            object.__setattr__(self, "_kernelbench", runner)
        assert self._kernelbench is not None
        return self._kernelbench

    def build(self, task: Task, code: str, cancel: threading.Event | None = None) -> Build:
        return build_gpu(task, code, self.arch, self.build_timeout_s, cancel)

    def start_worker(self, workdir: Path, wrapper: Sequence[str] = (), visible: Sequence[Path] = ()) -> WorkerProcess:
        """A GPU worker, confined like the CPU worker with the GPU's device nodes and /sys bound in; the
        build cache (harness, candidate and baseline libraries), the timing inputs and ``visible`` read-only."""
        worker = WorkerProcess(workdir, script=HERE / "gpu_worker.py", wrapper=wrapper, confinement=gpu_confinement(),
                               visible=[cache_dir(), self.perf_inputs.folder, *visible])  # fmt: skip
        canary = 0 if wrapper else 4096  # a sanitizer wants exact allocations to see every out-of-bounds access
        worker.send({"op": "init", "harness": str(harness_library(self.arch)), "device": self.device,
                     "canary_bytes": canary})  # fmt: skip
        return worker

    def run(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker | None = None
    ) -> list[CallResult]:
        return self._run(build, task, jobs, workdir, worker, alone=False)

    def run_alone(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker
    ) -> list[CallResult]:
        """:meth:`run` with the card to itself (no other run, no timing beside it)."""
        return self._run(build, task, jobs, workdir, worker, alone=True)

    def _run(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker | None, alone: bool
    ) -> list[CallResult]:
        assert build.library is not None, "run() needs a successful build"
        if worker is None:
            worker = self.start_worker(workdir)
        assert isinstance(worker, WorkerProcess), "run() takes the worker start_worker() made"
        timed = self.call_limits and task.baseline  # a task without a baseline runs under the plain limit
        baseline_ms = self._baseline_call_ms(task, jobs, workdir) if timed else [math.nan] * len(jobs)
        limits = [self.call_limits.limit_s(ms, self.timeout_s) if self.call_limits else self.timeout_s
                  for ms in baseline_ms]  # fmt: skip
        with self.run_lock(alone):  # shared: beside other correctness runs, never beside a timing
            results = run_limited(build.library, task, jobs, workdir, worker, limits, baseline_ms, self.timeout_s)
        if any(r.crash_kind for r in results) and not self.probe(workdir):
            raise BackendUnavailableError("the GPU did not pass its health probe after a crashed submission")
        return results

    def _baseline_call_ms(self, task: Task, jobs: Sequence[Job], workdir: Path) -> list[float]:
        """The baseline's time on each job's configuration: its GPU label, else one call of it, measured
        once per task and configuration in a worker of its own (NaN where it cannot be had)."""
        keys = [(task.id, tuple(sorted(job.config.items()))) for job in jobs]
        for key, job in zip(keys, jobs, strict=True):
            if key not in self.baseline_ms and math.isfinite(labelled_ms(task, job.config)):
                self.baseline_ms[key] = labelled_ms(task, job.config)
        missing = [(key, job) for key, job in zip(keys, jobs, strict=True) if key not in self.baseline_ms]
        if missing:
            baseline = self.build(task, task.implementation(task.baseline).source)  # cached; time() needs it too
            results: list[CallResult] = []
            if baseline.ok and baseline.library is not None:
                folder = workdir / "baseline-times"  # its own files: the candidate's worker keeps workdir's
                folder.mkdir(exist_ok=True)
                with self.run_lock(), self.start_worker(folder) as worker:
                    results = run_jobs(baseline.library, task, [job for _, job in missing], folder, self.timeout_s,
                                       worker=worker)  # fmt: skip
            for i, (key, _) in enumerate(missing):
                ok = i < len(results) and results[i].status == Status.OK
                self.baseline_ms[key] = results[i].seconds * 1e3 if ok else math.nan
        return [self.baseline_ms[key] for key in keys]

    def sanitize(self, build: Build, task: Task, job: Job, workdir: Path) -> str:
        """Run ``job`` under each of :attr:`sanitizers`; the first finding, or "" when clean."""
        assert build.library is not None, "sanitize() needs a successful build"
        for tool in self.sanitizers:
            log = workdir / f"sanitizer-{tool}.log"
            worker = self.start_worker(workdir, wrapper=sanitizer_command(tool, log))
            try:
                with self.run_lock():
                    run_jobs(build.library, task, [job], workdir, self.timeout_s * 20, worker=worker)
                    worker.finish(self.timeout_s * 5)
            finally:
                worker.kill()
            problem = sanitizer_verdict(tool, log.read_text(errors="replace") if log.exists() else "")
            if problem:
                return problem
        return ""

    def time(self, task: Task, candidate: Build, seed: int, workdir: Path, worker: Worker) -> Timing | Crash:
        """Time the (already loaded, correct) candidate against the task's baseline.

        A timing has the card to itself, across threads and processes (:attr:`gpu_lock`):
        concurrent evaluations compile, and run their correctness checks, side by side, but
        nothing else runs on the GPU while one is timed.
        The timing inputs are fixed per task and configuration (``PerfInputs``), so
        ``seed`` does not enter here.

        A task without a baseline implementation is timed against the candidate itself (the same
        hardened calls, checks and budget), and its speedup is over the C reference compiled with
        optimizations and timed on the host (:func:`~cudaperf_env.backends.cuda.timing.over_c_reference`).

        The timing's phases (``Timing.phases``) add ``prepare_s``: :meth:`prepare`, before the card is
        locked (nothing, where an evaluator prepared the task ahead), and ``lock_wait_s``.
        """
        assert isinstance(worker, WorkerProcess), "time() takes the worker start_worker() made"
        started = time.perf_counter()
        self.prepare(task)  # the inputs are made before the card is locked, not while others wait for it
        prepare_s = time.perf_counter() - started
        timing = self._time_task(task, candidate, workdir, worker)
        return replace(timing, phases={**timing.phases, "prepare_s": prepare_s}) if isinstance(timing, Timing) \
            else timing  # fmt: skip

    def _time_task(self, task: Task, candidate: Build, workdir: Path, worker: WorkerProcess) -> Timing | Crash:
        if not task.baseline:
            timing = self._alone(lambda: self._time(task, candidate, worker, paired=False))
            if isinstance(timing, Timing):
                timing = flag_unchecked_outputs(task, over_c_reference(timing, self._c_reference_ms(task, workdir)))
            return timing
        baseline = self.build(task, task.implementation(task.baseline).source)  # cached after the first
        if not baseline.ok or baseline.library is None:
            raise BackendUnavailableError(f"{task.id}: the baseline implementation does not build:\n{baseline.log}")
        timing = self._alone(lambda: self._time(task, baseline, worker))
        if self.time_c_reference and isinstance(timing, Timing):
            timing = replace(timing, c_reference_ms=self._c_reference_ms(task, workdir))
        if isinstance(timing, Timing) and self.pytorch is not None and task.reference_language == "pytorch":
            with self.gpu_lock:  # the torch process has the GPU to itself, as a timed worker does
                times = [self.pytorch.times(task, i, c, self.timing, workdir)
                         for i, c in enumerate(_timing_configs(task))]  # fmt: skip
            timing = over_pytorch(timing, times, self.timing.deadband)
        return flag_unchecked_outputs(task, timing) if isinstance(timing, Timing) else timing

    def prepare(self, task: Task) -> None:
        """Make what timing any correct reply to ``task`` needs and no reply changes, without the card's lock:
        the input sets of its timing configurations (``perf_inputs``) and the baseline's build (both kept).

        :meth:`time` calls it first; an evaluator calls it ahead, while the replies are still being
        written (``Evaluator.prepare``). Making a large task's sets takes seconds of CPU time that
        would otherwise be spent holding the card while every other timing waited.
        """
        if task.baseline:
            self.build(task, task.implementation(task.baseline).source)  # cached on disk after the first
        for index, config in enumerate(_timing_configs(task)):
            self.perf_inputs.sets(task, index, config, self.timing.input_sets)

    def _alone(self, timed: Callable[[], Timing | Crash]) -> Timing | Crash:
        """``timed()`` with the card to itself; a timing's phases get the seconds it waited for the card
        (``lock_wait_s``: behind other timings and the correctness runs on the card)."""
        started = time.perf_counter()
        with self.gpu_lock:
            waited = time.perf_counter() - started
            result = timed()
        if not isinstance(result, Timing):
            return result
        return replace(result, phases={**result.phases, "lock_wait_s": waited})

    def _c_reference_ms(self, task: Task, workdir: Path) -> tuple[float, ...]:
        """Serial C reference time per timing configuration, on the first timing input set (cached); NaN for
        a reference in another language (a PyTorch reference is not timed on the host)."""
        if task.reference_language != "c":
            return tuple(math.nan for _ in _timing_configs(task))
        times = []
        for index, config in enumerate(_timing_configs(task)):
            key = (task.id, index)
            if key not in self.c_reference_ms:
                build = build_c_reference(wrap(task, task.reference_source, "c", "reference.c"))
                ms = math.nan
                if build.ok and build.library is not None:
                    job = Job(config, task_inputs(task, config, 1000))
                    result = run_jobs(build.library, task, [job], workdir, self.c_reference_timeout_s,
                                      deterministic=True)[0]  # fmt: skip
                    ms = result.seconds * 1e3 if result.status == Status.OK else math.nan
                self.c_reference_ms[key] = ms
            times.append(self.c_reference_ms[key])
        return tuple(times)

    def _time(self, task: Task, baseline: Build, worker: WorkerProcess, paired: bool = True) -> Timing | Crash:
        started = time.perf_counter()
        reply = worker.request({"op": "load", "lib": str(baseline.library), "name": "baseline"}, self.timeout_s)
        if isinstance(reply, Crash):
            return reply
        device = self._device_facts(worker)  # the first timing of a process measures the copy bandwidth
        configs = _timing_configs(task)
        estimates, flags, mismatch, bounds, over_budget = [], [], "", [], False
        phases: dict[str, float] = {"load_s": time.perf_counter() - started}
        left_s = self.timing.evaluation_budget_s  # shared by the configurations' warmup and timed calls
        for index, config in enumerate(configs):
            outcome = self._time_config(task, index, config, worker, device, phases, left_s, paired)
            if isinstance(outcome, Crash):
                return outcome
            estimate, config_flags, config_mismatch, bound, spent_s, stop = outcome
            estimates.append(estimate)
            flags += config_flags
            mismatch = mismatch or config_mismatch
            bounds.append(bound)
            left_s -= spent_s
            over_budget = over_budget or stop == "budget"
        device.update(read_clocks(self.device))  # right after the timed calls
        combined = _geometric_mean(estimates)
        capped = tuple(i for i, b in enumerate(bounds) if math.isfinite(b))
        bound = _geometric_mean_of(bounds) if len(capped) == len(bounds) else math.nan
        return Timing(combined, tuple(dict.fromkeys(flags)), mismatch, device, tuple(estimates), phases,
                      speedup_bound=bound, capped_configs=capped, over_budget=over_budget)  # fmt: skip

    def _device_facts(self, worker: WorkerProcess) -> dict[str, object]:
        """Card name, compute capability, driver (from the worker's init) and copy bandwidth, once."""
        if not self.facts and worker.early_replies:
            reply = worker.request({"op": "bandwidth", "bytes": 1 << 30}, self.timeout_s)
            if not isinstance(reply, Crash) and reply.get("ok") and isinstance(reply.get("copy_gbps"), (int, float)):
                init = {k: v for k, v in worker.early_replies[0].items() if k != "ok"}
                self.facts.update(init, copy_gbps=reply["copy_gbps"], arch=self.arch)
        return dict(self.facts)

    def probe(self, workdir: Path) -> bool:
        """GPU health probe: a fresh worker can create a context and allocate."""
        with self.start_worker(workdir) as worker:
            reply = worker.request({"op": "bandwidth", "bytes": 1 << 20}, 60)
        return not isinstance(reply, Crash) and bool(reply.get("ok"))

    def _time_config(
        self,
        task: Task,
        index: int,
        config: Config,
        worker: WorkerProcess,
        device: dict,
        phases: dict,
        left_s: float = math.inf,
        paired: bool = True,
    ) -> tuple[SpeedupEstimate, list[str], str, float, float, str] | Crash:
        """One timing configuration: estimate, flags, mismatch, the speedup's upper bound where timing
        stopped early for slowness (else NaN), seconds of the budget spent, and why the trials stopped."""
        opts = replace(self.timing, budget_s=min(self.timing.budget_s, max(0.0, left_s)))
        started = time.perf_counter()
        with self.perf_inputs.lease(task, index, config, opts.input_sets) as files:  # made by prepare(), mostly
            sets = [set_spec(task, config, f) for f in files]
            request = time_request(opts, task, ["candidate", "baseline"], sets, "baseline", opts.pin_inputs)
            asked = time.perf_counter()
            reply = worker.request(request, self.timing.budget_s * 4 + 60)  # the worker reads the files here
        if isinstance(reply, Crash) or not reply.get("ok"):
            return reply if isinstance(reply, Crash) else Crash("exit", str(reply.get("error")))
        answered = time.perf_counter()
        malformed = time_reply_problem(reply, len(task.args))
        if malformed:  # the submission forged or corrupted the reply
            worker.kill()
            return Crash("protocol", f"the worker sent a malformed timing reply ({malformed}): a submission may "
                                     "not write to the harness's reply channel")  # fmt: skip
        mismatch = mismatch_message(task, reply["mismatches"].get("candidate", []))
        if reply["overruns"].get("candidate"):
            mismatch = mismatch or "wrote past the end of a buffer during timed calls"
        samples = _samples(reply)
        estimate = estimate_speedup(samples["candidate"], samples["baseline"], opts.deadband)
        bound, flags = _slow_verdict(opts, reply, samples)
        spent_s = float(reply["phases"]["trials_s"] + reply["phases"]["check_s"])
        if not math.isfinite(bound):
            calls = wall_check_calls(opts.wall_check_calls, estimate.candidate_ms, left_s - spent_s)
            flags += self._wall_check(worker, calls, paired)
        moved = sum(s.nbytes * (2 if s.arg.role == "inout" else 1) for s in files[0].slots)
        if "copy_gbps" in device and bandwidth_flag(moved, estimate.candidate_ms, float(device["copy_gbps"])):
            flags.append("faster than the memory bandwidth allows")
        wall_check_s = time.perf_counter() - answered
        for key, value in {"inputs_s": asked - started, **reply["phases"], "wall_check_s": wall_check_s}.items():
            phases[key] = phases.get(key, 0.0) + value
        return estimate, flags, mismatch, bound, spent_s + wall_check_s, str(reply.get("stop", ""))

    def _wall_check(self, worker: WorkerProcess, calls: int | None = None, paired: bool = True) -> list[str]:
        """Compare reported event times with the parent's own clock over ``calls`` back-to-back calls each.

        The trusted baseline's calls measure the per-call overhead; unpaired (the candidate timed
        against itself) there is none to trust, so no overhead is subtracted."""
        observed = {}
        for lib in ("baseline", "candidate") if paired else ("candidate",):
            if isinstance(worker.request({"op": "stage", "set": 0}, self.timeout_s), Crash):
                return ["wall-clock check failed"]
            start = time.perf_counter()
            reply = worker.request({"op": "wall_check", "lib": lib, "calls": calls or self.timing.wall_check_calls},
                                   self.timeout_s * 4)  # fmt: skip
            wall_ms = (time.perf_counter() - start) * 1e3
            if isinstance(reply, Crash) or not reply.get("ok") or wall_check_problem(reply):
                return ["wall-clock check failed"]
            observed[lib] = (reply["events"], wall_ms)
        overhead = 0.0
        if paired:
            events_b, wall_b = observed["baseline"]
            overhead = max(0.0, wall_b / len(events_b) - float(np.median(events_b)))
        events_c, wall_c = observed["candidate"]
        if wall_clock_inconsistent(events_c, wall_c, overhead):
            return ["event times disagree with the wall clock"]
        return []


def run_limited(
    library: Path, task: Task, jobs: Sequence[Job], workdir: Path, worker: WorkerProcess,
    limits: Sequence[float], baseline_ms: Sequence[float], load_timeout_s: float,
) -> list[CallResult]:  # fmt: skip
    """``run_jobs`` with a wall-clock limit per job; a call stopped at its limit says how slow it was.

    ``limits[i]`` and ``baseline_ms[i]`` (NaN: unknown) belong to ``jobs[i]``, whose index among the
    task's correctness configurations tells shown from hidden ones.
    """
    loaded = run_jobs(library, task, [], workdir, load_timeout_s, worker=worker)  # no jobs: loads the library only
    if loaded:
        return loaded
    results: list[CallResult] = []
    for index, (job, limit, ms) in enumerate(zip(jobs, limits, baseline_ms, strict=True)):
        result = call_once(worker, task, job, io_dir(workdir) / f"buffers-{index}.bin", limit)
        if result.status == Status.TIMEOUT and math.isfinite(ms):
            hidden = index >= len(task.configs)
            result = replace(result, message=too_slow_message(job.config, hidden, index, limit, ms))
        results.append(result)
        if result.status != Status.OK:
            break
    return results


def time_request(opts: TimingOptions, task: Task, libs: Sequence[str], sets: list[dict], reference: str,
                 pin: bool) -> dict:  # fmt: skip
    """The worker's ``time`` request: ``libs`` round robin on ``sets``, outputs checked against ``reference``."""
    return {"op": "time", "libs": list(libs), "sets": sets, "reference": reference, "outputs": output_checks(task),
            "pin": pin, "warmup": opts.warmup, "min_trials": opts.min_trials, "max_trials": opts.max_trials,
            "budget_s": opts.budget_s, "budget_floor": opts.budget_floor, "target_rse": opts.target_rse,
            "flush_bytes": opts.flush_bytes, "l2_flush": opts.l2_flush, "check_first": opts.check_first,
            "slow_bound": opts.slow_bound, "slow_margin": opts.slow_margin}  # fmt: skip


def _samples(reply: dict) -> dict[str, list[float]]:
    """Each implementation's timed calls; for one stopped as too slow before or between trials, every call
    it made (the checked and warmup calls too), with the reference's from the same rounds."""
    if not reply.get("capped"):
        return reply["times"]
    return {name: reply.get("early", {}).get(name, []) + t for name, t in reply["times"].items()}


def _slow_verdict(opts: TimingOptions, reply: dict, samples: dict[str, list[float]]) -> tuple[float, list[str]]:
    """The candidate's speedup bound when the worker stopped timing it as too slow (NaN otherwise), and a
    flag when the parent's own rule does not confirm that stop (pure)."""
    if "candidate" not in reply.get("capped", []):
        return math.nan, []
    if not decided_slow(samples["candidate"], samples["baseline"], opts.slow_bound, opts.slow_margin):
        return math.nan, ["timing stopped early without cause"]
    return speedup_upper_bound(samples["candidate"], samples["baseline"], opts.slow_margin), []


UNCHECKED_FLAG = "outputs of timed calls cannot be checked for this task's order-free or counted outputs"


def timed_outputs_unchecked(task: Task) -> bool:
    """Whether some output is left out of the device's timed-output check (:func:`output_checks`).

    Then a submission could skip that work in timed calls only (attack 7), so its speed is not
    credited: the flag keeps the verdict and the measured time, and the reward ignores the speedup."""
    return task.checker is not None or any(
        a.role in ("out", "inout") and (a.check != "elementwise" or bool(a.length)) for a in task.args
    )


def flag_unchecked_outputs(task: Task, timing: Timing) -> Timing:
    """``timing`` with :data:`UNCHECKED_FLAG` where :func:`timed_outputs_unchecked` (pure)."""
    return replace(timing, flags=(*timing.flags, UNCHECKED_FLAG)) if timed_outputs_unchecked(task) else timing


def output_checks(task: Task) -> list[dict]:
    """How the worker compares each output buffer on the device (``compare.py``'s rule).

    Outputs whose order is free (``check: multiset``/``sorted``) or whose length is counted are
    left out: element by element they may differ from the baseline's on every call (atomics);
    the correctness run judged them, and their counts are still compared here."""
    checks = []
    for i, arg in enumerate(task.args):
        if arg.role in ("out", "inout") and arg.check == "elementwise" and not arg.length and task.checker is None:
            tol = task.tolerance(arg.dtype)
            checks.append({"arg": i, "elem_bytes": arg.dtype.itemsize, "is_float": int(arg.dtype.is_float),
                           "atol": tol.atol, "rtol": tol.rtol})  # fmt: skip
    return checks


# Share of a timed output's elements that may lie outside the task's tolerance. At perf
# sizes a correct kernel that sums in another order (tree reductions, atomics, scans)
# strays from the baseline in a few elements (up to 0.2% seen on the H200 for a 32M-element
# float scan); stale, cached, skipped or unwritten results miss nearly all of them.
TIMED_MISMATCH_FRACTION = 0.01


def mismatch_message(task: Task, mismatches: Sequence[dict]) -> str:
    """The wrong-answer message for outputs of timed calls that differ from the baseline's (pure)."""
    wrong = [m for m in mismatches if m["count"] > TIMED_MISMATCH_FRACTION * m["total"]]
    if not wrong:
        return ""
    m = wrong[0]
    return (
        f"outputs of timed calls on input set {m['set'] + 1} differ from the baseline's "
        f"(`{task.args[m['arg']].name}`, {m['count']} of {m['total']} elements): "
        "results must not depend on earlier calls"
    )


def set_spec(task: Task, config: Config, f: BufferFile) -> dict:
    """The worker's description of one input set: its file, and each argument (outputs restored to poison)."""
    args = f.request_args(task, config)
    pointer_args = iter(a for a in task.args if a.is_buffer)
    for spec in args:
        if "ptr" in spec:
            arg = next(pointer_args)
            if arg.role == "out":
                spec.update(restore="poison", poison=int(poison_value(arg).view(np.uint8)[0]))
    return {"file": str(f.path), "size": f.size, "args": args}


def _timing_configs(task: Task) -> tuple[Config, ...]:
    """The configurations timed: the task's perf configurations, else its largest shown one."""
    return tuple(task.perf_configs) or (max(task.configs, key=lambda c: sum(c.values())),)


def _geometric_mean_of(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def _geometric_mean(estimates: Sequence[SpeedupEstimate]) -> SpeedupEstimate:
    def gmean(xs: list[float]) -> float:
        return float(np.exp(np.mean(np.log(xs))))

    return SpeedupEstimate(
        gmean([e.candidate_ms for e in estimates]),
        gmean([e.baseline_ms for e in estimates]),
        gmean([e.speedup for e in estimates]),
        gmean([e.speedup_lcb for e in estimates]),
        min(e.trials for e in estimates),
    )
