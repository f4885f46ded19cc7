"""One submission, end to end, as an ordered list of stages over one context.

The trusted parent (this module) makes inputs, holds expected outputs and
judges; the submission only ever runs in an untrusted worker process. Each
stage in :data:`STAGES` reads and fills the :class:`Context` and returns it,
or returns a finished :class:`Evaluation` that ends the pipeline. Adding a
stage means writing one function here and naming it in :data:`STAGES`.

Backends are reached only through ``backends/base.py``: the evaluator asks a
backend for its capabilities (timing, sanitizers), never for its type.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.analysis import StructuralReport, analyze
from cudaperf_env.backends.base import Backend, Build, Crash, Job, TimingResult, Worker
from cudaperf_env.backends.checker import run_checker
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.launch_limits import write_resources
from cudaperf_env.backends.reference import ReferenceOutputs
from cudaperf_env.judge import ConfigOutcome, judge
from cudaperf_env.kinds import MODES, kind_of
from cudaperf_env.ranker import Ranker, load_ranker
from cudaperf_env.source import extract_code, screen
from cudaperf_env.source.inline_extension import InlineExtension
from cudaperf_env.source.screen import Finding
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Task, TimingLabel
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.compile_check import DEFAULT_ARCH, CompileReport, KernelResources, compile_check

__all__ = ["STAGES", "ConfigOutcome", "Context", "EvalOptions", "Evaluation", "Evaluator", "speedup_over"]


@dataclass(frozen=True)
class Evaluation:
    """Everything the environment learned about one submission."""

    status: Status
    message: str
    backend: str
    arch: str = DEFAULT_ARCH
    compiled: bool = False
    correct: bool = False
    code: str | None = None
    cut_off: bool = False  # the code's fenced block was never closed: the reply likely hit a length limit
    compile_log: str = ""
    kernels: tuple[KernelResources, ...] = ()
    findings: tuple[Finding, ...] = ()
    configs: tuple[ConfigOutcome, ...] = ()
    stdout: str = ""
    speedup: float = math.nan
    speedup_lcb: float = math.nan
    runtime_ms: float = math.nan
    baseline_ms: float = math.nan
    baseline: str = ""
    timing_flags: tuple[str, ...] = ()
    per_config_ms: tuple[float, ...] = ()
    speedup_vs_c: float = math.nan
    speedup_vs_best: float = math.nan
    speedup_bound: float = math.nan
    speedup_vs_compile: float = math.nan
    speedup_vs_impl: float = math.nan
    compile_ms: float = math.nan
    compile_error: str = ""
    ranker_score: float = math.nan
    device: Mapping[str, object] = field(default_factory=dict)
    structure: StructuralReport | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)
    mode: str = "native"

    @property
    def credited_speedup(self) -> float:
        """The speedup the reward may use: NaN when unmeasured or when timing was flagged."""
        return math.nan if self.timing_flags else self.speedup


@dataclass(frozen=True)
class EvalOptions:
    """Limits and switches of the evaluation pipeline.

    Attributes:
        arch: GPU architecture for the nvcc compile check (and the resources the feedback shows).
        max_code_chars: Largest accepted source.
        compile_timeout_s: Limit for nvcc.
        run_hidden: Also run the task's hidden configurations.
        schedules: Extra runs of the smallest configuration, each with another seeded order of blocks and
            threads, on backends that run blocks one after another (``cpu``): a result that depends on the
            order is a race (``docs/cpu-backend.md``, fidelity). 0 turns them off.
        racecheck: One more run of the smallest configuration under the shadow-memory race detector, with
            every index into an array of known size checked, on backends that have one (``cpu``).
        mode: ``native`` (CUDA C++ defining the task's entry) or ``kernelbench`` (Python defining ``ModelNew``
            with load_inline, torch2cuda tasks on a GPU backend; ``evaluate_kernelbench.py``).
    """

    arch: str = DEFAULT_ARCH
    max_code_chars: int = 65536
    compile_timeout_s: float = 60.0
    run_hidden: bool = True
    schedules: int = 2
    racecheck: bool = True
    mode: str = "native"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.max_code_chars <= 0 or self.compile_timeout_s <= 0:
            raise ValueError("max_code_chars and compile_timeout_s must be positive")
        if self.schedules < 0:
            raise ValueError(f"schedules must be >= 0, got {self.schedules}")


@dataclass
class Context:
    """The working state of one evaluation, passed from stage to stage.

    ``result`` accumulates what is known so far; :meth:`finish` turns it into the
    final evaluation. ``pending`` holds work started by one stage and awaited by a
    later one (compile check, build, expected outputs and analysis overlap).
    """

    task: Task
    action: str
    seed: int
    backend: Backend
    options: EvalOptions
    reference: ReferenceOutputs
    workdir: Path
    pool: ThreadPoolExecutor
    result: Evaluation
    cancel: threading.Event = field(default_factory=threading.Event)
    pending: dict[str, Future[Any]] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    worker: Worker | None = None
    build: Build | None = None
    outcomes: list[ConfigOutcome] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    extensions: tuple[InlineExtension, ...] = ()  # KernelBench mode: the load_inline calls the screen read

    def update(self, **changes: Any) -> Context:
        """Record what a stage learned; returns the context (a stage's "go on")."""
        self.result = replace(self.result, **changes)
        return self

    def finish(self, status: Status, message: str, **changes: Any) -> Evaluation:
        """The final evaluation with ``status`` (a stage's "stop here")."""
        return replace(self.result, status=status, message=message, seconds=dict(self.seconds), **changes)


Stage = Callable[[Context], "Context | Evaluation"]


def extract(ctx: Context) -> Context | Evaluation:
    """Take the code out of the reply (fenced block or bare source), within the size limit."""
    extraction = extract_code(ctx.action, max_chars=ctx.options.max_code_chars)
    if extraction.code is None:
        return ctx.finish(Status.FORMAT_ERROR, extraction.error or "no code found")
    return ctx.update(code=extraction.code, cut_off=extraction.cut_off)


def screen_source(ctx: Context) -> Context | Evaluation:
    """Refuse forbidden constructs before any compiler sees the code."""
    findings = screen(_code(ctx), entry=ctx.task.entry)
    if findings:
        return ctx.finish(Status.REJECTED, findings[0].message, findings=tuple(findings))
    return ctx


def launch(ctx: Context) -> Context | Evaluation:
    """Start the overlapping work: nvcc check, backend build (and race-check build), expected outputs, the worker."""
    task, code, options = ctx.task, _code(ctx), ctx.options
    # the compilers first: they are the step's critical path, the inputs are made while they run
    ctx.pending["check"] = ctx.pool.submit(compile_check, kind_of(task).harness(task, code), options.arch,
                                           options.compile_timeout_s, ctx.cancel)  # fmt: skip
    ctx.pending["build"] = ctx.pool.submit(ctx.backend.build, task, code, ctx.cancel)
    race_build = getattr(ctx.backend, "race_build", None)
    if race_build is not None and options.racecheck:  # beside the build; cancelled if the evaluation ends first
        ctx.pending["race_build"] = ctx.pool.submit(race_build, task, code, ctx.cancel)
    ctx.jobs = correctness_jobs(task, options, ctx.seed)
    reference = ctx.workdir / "ref"
    reference.mkdir(mode=0o700)  # the reference's worker's (or the parent's): the submission's cannot read it
    ctx.pending["expected"] = ctx.pool.submit(ctx.reference.expected, task, ctx.jobs, ctx.seed, reference)
    ctx.worker = ctx.backend.start_worker(ctx.workdir)
    return ctx


def correctness_jobs(task: Task, options: EvalOptions, seed: int) -> list[Job]:
    """The configurations a reply is run on (shown, and hidden with ``run_hidden``) with their seeded inputs."""
    configs = task.correctness_configs if options.run_hidden else task.configs
    return [Job(c, task_inputs(task, c, seed)) for c in configs]


def check_compiles(ctx: Context) -> Context | Evaluation:
    """nvcc for the target architecture: errors, registers, shared memory; analysis starts on it."""
    report: CompileReport = ctx.pending["check"].result()
    ctx.seconds["compile_check"] = report.seconds
    ctx.update(compile_log=report.log, kernels=report.kernels)
    if not report.ok:
        _discard_build(ctx)
        return ctx.finish(Status.COMPILE_ERROR, f"nvcc {'timed out' if report.timed_out else 'failed'}")
    ctx.pending["structure"] = ctx.pool.submit(analyze, _code(ctx), report)  # overlaps the build and the run
    return ctx


def _discard_build(ctx: Context) -> None:
    """nvcc refused the code: stop the backend's builds started beside it, and keep nothing of them in the cache."""
    ctx.cancel.set()
    for name in ("build", "race_build"):
        built: Build | None = ctx.pending[name].result() if name in ctx.pending else None
        if built is not None and built.ok and not built.cached and built.library is not None:
            built.library.unlink(missing_ok=True)


def build(ctx: Context) -> Context | Evaluation:
    """The backend's own build of the submission."""
    built: Build = ctx.pending["build"].result()
    ctx.seconds["build"] = built.seconds
    ctx.build = built
    ctx.update(structure=ctx.pending["structure"].result())
    if built.unsupported:
        return ctx.finish(Status.REJECTED, built.unsupported[0].message, findings=built.unsupported)
    if not built.ok:
        msg = f"nvcc accepts this code but the {ctx.backend.name} backend could not build it"
        return ctx.finish(Status.COMPILE_ERROR, msg, compile_log=built.log)
    return ctx


def rank(ctx: Context) -> Context | Evaluation:
    """The learned ranker's probability that the code is faster than the task's baseline (shipped model only)."""
    ranker = shipped_ranker()
    if ranker is None:
        return ctx
    report: CompileReport = ctx.pending["check"].result()
    started = time.perf_counter()
    score = ranker.score(ctx.task, _code(ctx), report, ctx.result.structure)
    ctx.seconds["ranker"] = time.perf_counter() - started
    return ctx.update(ranker_score=score)


@functools.cache
def shipped_ranker() -> Ranker | None:
    """The package's ranker, loaded once; None where no model ships (the ``ranker`` term is then left out)."""
    try:
        return load_ranker()
    except FileNotFoundError:
        return None


def run_and_judge(ctx: Context) -> Context | Evaluation:
    """Run every configuration in the worker and compare with the expected outputs.

    On a backend whose runs share the device with other evaluations' runs, a run that ran out of
    device memory is judged again with the device to itself, in a fresh worker
    (``Capabilities.alone``): a peer may have taken the memory, and a verdict must not depend on
    what else was graded at the same moment. Nothing else is run again: a peer cannot change a
    run's outputs or make it fault, a peer's share of the card's time is far inside a call's
    limit (2 s plus 1,000x the baseline), and a second draw would give a sometimes-crashing or
    sometimes-hanging kernel credit it does not earn alone. For the same reason only the
    harness's own report of the error counts, never a crashed process's last words (its
    stderr, which the submission writes).
    """
    want = ctx.pending["expected"].result()
    assert ctx.build is not None and ctx.worker is not None
    started = time.perf_counter()
    write_resources(ctx.workdir, ctx.result.kernels, ctx.options.arch)  # the CPU runtime's launch limits
    runs = ctx.backend.run(ctx.build, ctx.task, ctx.jobs, ctx.workdir, ctx.worker)
    ctx.seconds["run"] = time.perf_counter() - started
    failed = _judge_runs(ctx, runs, want)
    alone = ctx.backend.capabilities.alone
    if failed is not None and out_of_device_memory(*failed, runs) and alone is not None:
        started = time.perf_counter()
        ctx.worker.kill()
        ctx.worker = ctx.backend.start_worker(ctx.workdir)
        runs = alone.run_alone(ctx.build, ctx.task, ctx.jobs, ctx.workdir, ctx.worker)
        failed = _judge_runs(ctx, runs, want)
        ctx.seconds["run_alone"] = time.perf_counter() - started  # how often and how long: in the trainer's metrics
    if failed is not None and any(r.crash_kind in CRASHES_TO_EXPLAIN for r in runs):
        failed = explain_crash(ctx) or failed
    if failed is not None:
        return ctx.finish(*failed)
    return ctx


# Crashes that an index past an array explains when it overwrote something far from its cause.
CRASHES_TO_EXPLAIN = ("illegal_address", "abort", "signal")


def explain_crash(ctx: Context) -> tuple[Status, str] | None:
    """A crashed run's cause where the race-check build finds an index past an array (CPU backend).

    An index past a ``__shared__`` array on the CPU backend overwrites the worker thread's next
    thread-locals, the runtime's own among them, and the crash comes later and elsewhere ("invalid
    memory access at address 0x0 in host code"). The race-check build checks every index: its run
    of the smallest configuration, in a fresh worker (the crash ended the run's), names the index,
    the array, the line and the thread. None when it does not (or the backend has no race check).
    """
    race_check = getattr(ctx.backend, "race_check", None)
    if race_check is None or "race_build" not in ctx.pending or not ctx.jobs:
        return None
    started = time.perf_counter()
    built: Build = ctx.pending["race_build"].result()
    index = min(range(len(ctx.jobs)), key=lambda k: _elements(ctx.jobs[k]))
    write_resources(ctx.workdir, ctx.result.kernels, ctx.options.arch, racecheck=True)
    worker = ctx.backend.start_worker(ctx.workdir)
    try:
        result = race_check(ctx.task, built, ctx.jobs[index], ctx.workdir, worker)
    finally:
        worker.kill()
    ctx.seconds["explain_crash"] = time.perf_counter() - started
    if result is not None and result.crash_kind == "out_of_bounds":
        return Status.RUNTIME_ERROR, out_of_bounds_message(result.message)
    return None


def out_of_bounds_message(report: str) -> str:
    """The feedback for the runtime's ``out_of_bounds`` report (pure)."""
    return f"{report}; on a GPU such an index is an illegal address or reads and writes another variable"


OUT_OF_MEMORY = "cudaErrorMemoryAllocation"


def out_of_device_memory(status: Status, message: str, runs: Sequence[Any]) -> bool:
    """Whether a verdict is a run that failed for want of device memory, as the harness reported it (pure).

    That is what another run on the same device can cause. The error must come from the harness's
    report after the call (no crash kind) or the worker's answer that it could not set the call up
    (``load``); a crashed process's message ends with its stderr, which the submission writes.
    """
    return (status == Status.RUNTIME_ERROR and OUT_OF_MEMORY in message
            and any(r.crash_kind in ("", "load") and OUT_OF_MEMORY in r.message for r in runs))  # fmt: skip


def _judge_runs(ctx: Context, runs: Sequence[Any], want: Sequence[Any]) -> tuple[Status, str] | None:
    """Judge ``runs`` into ``ctx`` (outcomes, configs, stdout); the failure's status and message, or None."""
    started = time.perf_counter()
    checked = _checked(ctx, ctx.jobs, runs, want)
    if ctx.task.checker is not None:
        ctx.seconds["checker"] = time.perf_counter() - started
    ctx.outcomes = judge(ctx.task, ctx.jobs, runs, want, checked)
    # what the shown configurations printed: the hidden ones' output would reveal their sizes
    ctx.update(compiled=True, configs=tuple(ctx.outcomes),
               stdout=next((r.stdout for r in reversed(runs[: len(ctx.task.configs)]) if r.stdout), ""))  # fmt: skip
    failed = next((o for o in ctx.outcomes if o.status != Status.OK), None)
    if failed is not None:
        return failed.status, failed.message
    if len(ctx.outcomes) != len(ctx.jobs):
        return Status.RUNTIME_ERROR, "the worker stopped before every configuration ran"
    return None


def _checked(ctx: Context, jobs: Sequence[Job], runs: Sequence[Any], want: Sequence[Any]) -> list[tuple[bool, str]]:
    """The task's checker's ``(valid, message)`` per run ([] for tasks without a checker)."""
    if ctx.task.checker is None:
        return []
    done = [i for i, r in enumerate(runs) if r.status == Status.OK]
    checked = run_checker(ctx.task, [jobs[i] for i in done], [runs[i].buffers for i in done],
                          [want[i] for i in done], ctx.workdir)  # fmt: skip
    by_index = dict(zip(done, checked, strict=True))
    return [by_index.get(i, (False, "")) for i in range(len(runs))]


def perturb_schedules(ctx: Context) -> Context | Evaluation:
    """The smallest configuration again under seeded block and thread orders (CPU backend): order must not matter."""
    rerun = getattr(ctx.backend, "rerun", None)
    if rerun is None or ctx.options.schedules == 0 or ctx.worker is None or not ctx.jobs:
        return ctx
    started = time.perf_counter()
    index = min(range(len(ctx.jobs)), key=lambda k: _elements(ctx.jobs[k]))
    job, want = ctx.jobs[index], ctx.pending["expected"].result()[index]
    for k in range(ctx.options.schedules):
        seed = 1 + k + 1000 * ctx.seed
        write_resources(ctx.workdir, ctx.result.kernels, ctx.options.arch, schedule=seed)
        runs = [rerun(ctx.task, job, ctx.workdir, ctx.worker, f"schedule-{k}")]
        outcome = judge(ctx.task, [job], runs, [want], _checked(ctx, [job], runs, [want]))[0]
        # A crash under another order is order-dependence too (a timeout is not: one thread runs it then)
        if outcome.status in (Status.WRONG_ANSWER, Status.RUNTIME_ERROR):
            ctx.seconds["schedules"] = time.perf_counter() - started
            what = "crashed" if outcome.status == Status.RUNTIME_ERROR else "failed"
            message = (f"race: the result depends on the order blocks and threads run in (it passed in CUDA's "
                       f"order, then {what}: {outcome.message} with blocks and threads started in another order); "
                       "threads that share data need __syncthreads(), __syncwarp() or atomics")
            return ctx.finish(Status.WRONG_ANSWER, message)
    ctx.seconds["schedules"] = time.perf_counter() - started
    return ctx


def check_races(ctx: Context) -> Context | Evaluation:
    """The smallest configuration under the backend's shadow-memory race detector, with array indices
    checked (CPU backend)."""
    race_check = getattr(ctx.backend, "race_check", None)
    if race_check is None or "race_build" not in ctx.pending or ctx.worker is None or not ctx.jobs:
        return ctx
    started = time.perf_counter()
    built: Build = ctx.pending["race_build"].result()  # started in launch
    ctx.seconds["racecheck_build"] = built.seconds
    index = min(range(len(ctx.jobs)), key=lambda k: _elements(ctx.jobs[k]))
    write_resources(ctx.workdir, ctx.result.kernels, ctx.options.arch, racecheck=True)
    result = race_check(ctx.task, built, ctx.jobs[index], ctx.workdir, ctx.worker)
    ctx.seconds["racecheck"] = time.perf_counter() - started
    if result is not None and result.crash_kind == "out_of_bounds":  # the build also checks array indices
        return ctx.finish(Status.RUNTIME_ERROR, out_of_bounds_message(result.message))
    if result is not None and result.crash_kind == "race":
        return ctx.finish(Status.WRONG_ANSWER, f"race: {result.message}; make the threads' accesses atomic or "
                                               "order them with __syncthreads() or __syncwarp()")  # fmt: skip
    if result is not None and result.status == Status.RUNTIME_ERROR:  # passed with many threads, crashed with one
        return ctx.finish(Status.WRONG_ANSWER, f"race: the run under the race detector (one thread, CUDA's order) "
                                               f"crashed: {result.message}; it passed with several threads, so the "
                                               "result depends on how threads interleave")  # fmt: skip
    return ctx


def sanitize(ctx: Context) -> Context | Evaluation:
    """Memory and race checkers on the smallest configuration, where the backend has them."""
    sanitizer = ctx.backend.capabilities.sanitizer
    if sanitizer is None or ctx.build is None:
        return ctx
    started = time.perf_counter()
    problem = sanitizer.sanitize(ctx.build, ctx.task, min(ctx.jobs, key=_elements), ctx.workdir)
    ctx.seconds["sanitizer"] = time.perf_counter() - started
    return ctx.finish(Status.RUNTIME_ERROR, problem) if problem else ctx


def time_against_baseline(ctx: Context) -> Context | Evaluation:
    """Interleaved timing of the candidate and the task's baseline (or, without one, its C reference on
    the host), where the backend times."""
    timer = ctx.backend.capabilities.timer
    if timer is None or ctx.build is None or ctx.worker is None:
        return ctx
    started = time.perf_counter()
    timing = timer.time(ctx.task, ctx.build, ctx.seed, ctx.workdir, ctx.worker)
    ctx.seconds["timing"] = time.perf_counter() - started
    if isinstance(timing, Crash):
        status = Status.TIMEOUT if timing.kind == "timeout" else Status.RUNTIME_ERROR
        return ctx.finish(status, f"while timing: {timing.message}")
    ctx.seconds.update({f"timing.{phase}": s for phase, s in timing.phases.items()})
    ctx.update(**timing_fields(timing))
    return ctx.finish(Status.WRONG_ANSWER, timing.mismatch) if timing.mismatch else ctx


def against_best_known(ctx: Context) -> Context | Evaluation:
    """Speedup over the fastest labelled implementation (``cuda_agent``'s third milestone)."""
    best = best_known_speedup(ctx.task)
    # labels are over the baseline implementation: so is the speedup compared with them
    over_impl = ctx.result.speedup_vs_impl if math.isfinite(ctx.result.speedup_vs_impl) else ctx.result.speedup
    if math.isfinite(over_impl) and math.isfinite(best):
        ctx.update(speedup_vs_best=over_impl / best)
    return ctx


STAGES: tuple[Stage, ...] = (
    extract,
    screen_source,
    launch,
    check_compiles,
    build,
    rank,
    run_and_judge,
    perturb_schedules,
    check_races,
    sanitize,
    time_against_baseline,
    against_best_known,
)


class Evaluator:
    """Evaluates submissions on one backend; holds the expected-output cache.

    Args:
        backend: Where submissions run (``CpuBackend()``, ...).
        options: Pipeline limits.
        reference: Expected-output cache (shared between evaluators if given).
        stages: The pipeline (default: :data:`STAGES`, or in KernelBench mode
            ``evaluate_kernelbench.KERNELBENCH_STAGES``).
    """

    def __init__(self, backend: Backend, options: EvalOptions | None = None,
                 reference: ReferenceOutputs | None = None, stages: Sequence[Stage] | None = None) -> None:  # fmt: skip
        tools.check_toolkit(tools.nvcc())  # a mismatched install fails here, clearly, not in every step
        self.backend = backend
        self.options = options or EvalOptions()
        self.reference = reference or ReferenceOutputs()
        if stages is None and self.options.mode == "kernelbench":
            from cudaperf_env.evaluate_kernelbench import KERNELBENCH_STAGES  # its stages build on this module

            stages = KERNELBENCH_STAGES
        self.stages = tuple(STAGES if stages is None else stages)
        self._preparing = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cudaperf-prepare")
        self._grading = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="cudaperf-grade")

    @property
    def measures_time(self) -> bool:
        """Whether correct submissions get a measured speedup on this backend."""
        return self.backend.capabilities.timer is not None

    def evaluate(self, task: Task, action: str, seed: int = 0) -> Evaluation:
        """Judge one action (raw agent text) for ``task``; never raises on bad input."""
        started = time.perf_counter()
        result = self._evaluate(task, action if isinstance(action, str) else "", seed)
        return replace(result, seconds={**result.seconds, "total": time.perf_counter() - started})

    def evaluate_many(
        self, task: Task, actions: Sequence[str], seed: int = 0, max_workers: int | None = None
    ) -> list[Evaluation]:
        """Judge several actions for one task concurrently (a GRPO group), in order.

        Compilation and correctness runs overlap across ``max_workers`` threads (default:
        the number of cores); backends that time serialize their timing phase, so
        concurrent submissions never disturb each other's measurements.
        """
        return self.evaluate_batch([(task, action, seed) for action in actions], max_workers)

    def evaluate_batch(self, jobs: Sequence[tuple[Task, str, int]], max_workers: int | None = None) -> list[Evaluation]:
        """Judge ``(task, action, seed)`` jobs of any tasks concurrently, in order (as :meth:`evaluate_many`).

        The Ray pool (:class:`cudaperf_env.integrations.ray.EvaluatorPool`) has the same
        method, so callers that grade many replies at once scale out through either.
        """
        workers = max(1, min(len(jobs), max_workers or os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda job: self.evaluate(job[0], job[1], job[2]), jobs))

    def submit(self, task: Task, action: str, seed: int = 0) -> Future[Evaluation]:
        """:meth:`evaluate` in the background; its verdict's future (it never raises on bad input).

        As many run at once as the machine has cores; the rest queue. A rollout submits each
        reply as soon as the policy has written it, while the batch's other replies are generated.
        """
        return self._grading.submit(self.evaluate, task, action, seed)

    def prepare(self, jobs: Sequence[tuple[Task, int]]) -> Future[None]:
        """Make, in the background, what grading replies to each ``(task, seed)`` needs whatever they say.

        That is the expected outputs of the correctness configurations (kept in :attr:`reference`)
        and, in native mode, the backend's own (``Capabilities.preparer``: a timing's input sets and
        the baseline's build). A trainer calls it as soon as a step's tasks are drawn, so the work
        overlaps the generation of the first replies instead of adding to their grading; an
        evaluation that starts meanwhile waits for a task's work in progress, never repeats it. A
        failure here is left to the evaluations, which report it. The future is done when all is made.
        """
        return all_of([self._preparing.submit(self._prepare, task, seed) for task, seed in jobs])

    def _prepare(self, task: Task, seed: int) -> None:
        if self.options.mode != "native":
            return  # KernelBench mode: references and timings are the torch worker's, made per evaluation
        workdir = scratch_dir()
        try:
            reference = workdir / "ref"
            reference.mkdir(mode=0o700)  # as an evaluation's (launch)
            self.reference.expected(task, correctness_jobs(task, self.options, seed), seed, reference)
            preparer = self.backend.capabilities.preparer
            if preparer is not None:
                preparer.prepare(task)
        except Exception:  # noqa: BLE001 - an evaluation meets the same failure and reports it
            pass
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _evaluate(self, task: Task, action: str, seed: int) -> Evaluation:
        workdir = scratch_dir()
        pool = ThreadPoolExecutor(max_workers=4)  # nvcc check, build, race-check build, expected outputs
        ctx = Context(task, action, seed, self.backend, self.options, self.reference, workdir, pool,
                      Evaluation(Status.OK, "", self.backend.name, arch=self.options.arch,
                                 mode=self.options.mode))  # fmt: skip
        try:
            for stage in self.stages:
                step = stage(ctx)
                if isinstance(step, Evaluation):
                    return step
            return ctx.finish(Status.OK, f"correct on all {len(ctx.jobs)} configurations", correct=True)
        finally:
            ctx.cancel.set()  # stops compilers still running after an early return
            if ctx.worker is not None:
                ctx.worker.kill()
            pool.shutdown(wait=True)
            shutil.rmtree(workdir, ignore_errors=True)


def all_of(futures: Sequence[Future[Any]]) -> Future[None]:
    """A future done when every one of ``futures`` is."""
    done: Future[None] = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future[Any]) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            done.set_result(None)

    if not futures:
        done.set_result(None)
    for future in futures:
        future.add_done_callback(one_done)
    return done


def best_known_speedup(task: Task) -> float:
    """The fastest labelled implementation's speedup over the baseline (geometric mean, pure); NaN unlabelled."""
    if not task.baseline:
        return math.nan
    base = {_label_key(lab): lab.median_ms for lab in task.implementation(task.baseline).labels}
    speedups = []
    for impl in task.implementations:
        ratios = [base[_label_key(lab)] / lab.median_ms for lab in impl.labels
                  if _label_key(lab) in base and lab.median_ms > 0]  # fmt: skip
        if ratios:
            speedups.append(float(np.exp(np.mean(np.log(ratios)))))
    return max(speedups, default=math.nan)


def _label_key(label: TimingLabel) -> tuple:
    return label.kind, tuple(sorted(label.config.items()))


def speedup_over(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> float:
    """Geometric mean of reference / candidate time over configurations where both are known (pure)."""
    ratios = [r / c for r, c in zip(reference_ms, candidate_ms, strict=False) if math.isfinite(r) and c > 0]
    return float(np.exp(np.mean(np.log(ratios)))) if ratios else math.nan


def timing_fields(timing: TimingResult) -> dict[str, Any]:
    e = timing.estimate
    candidate_ms = [c.candidate_ms for c in timing.per_config]
    return {
        "speedup": e.speedup,
        "speedup_lcb": e.speedup_lcb,
        "runtime_ms": e.candidate_ms,
        "baseline_ms": e.baseline_ms,
        "baseline": timing.baseline,
        "timing_flags": tuple(timing.flags),
        "per_config_ms": tuple(candidate_ms),
        "speedup_vs_c": speedup_over(timing.c_reference_ms, candidate_ms),
        "device": dict(timing.device),
        "speedup_bound": timing.speedup_bound,
        # a PyTorch task's baselines (torch_baselines.py); absent from other timers' results
        "speedup_vs_compile": getattr(timing, "speedup_vs_compile", math.nan),
        "speedup_vs_impl": getattr(timing, "speedup_vs_impl", math.nan),
        "compile_ms": _gmean_or_nan(getattr(timing, "compile_ms", ())),
        "compile_error": getattr(timing, "compile_error", ""),
    }


def _gmean_or_nan(values: Sequence[float]) -> float:
    ok = [v for v in values if math.isfinite(v) and v > 0]
    return float(np.exp(np.mean(np.log(ok)))) if ok and len(ok) == len(values) else math.nan


def _code(ctx: Context) -> str:
    assert ctx.result.code is not None, "stage after extract"
    return ctx.result.code


def _elements(job: Job) -> int:
    return sum(int(np.asarray(v).size) for v in job.inputs.values())
