"""One submission, end to end: extract, screen, compile-check, build, run, compare.

The trusted parent (this module) makes inputs, holds expected outputs and
judges; the submission only ever runs in an untrusted worker process.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from cudaperf_env.analysis import StructuralReport, analyze
from cudaperf_env.backends.base import Backend
from cudaperf_env.backends.cuda.timing import Timing
from cudaperf_env.backends.execute import CallResult, Job
from cudaperf_env.backends.harness import wrap
from cudaperf_env.backends.reference import ReferenceOutputs
from cudaperf_env.backends.sandbox import Crash
from cudaperf_env.compare import Comparison, compare, unchanged
from cudaperf_env.source import extract_code, screen
from cudaperf_env.source.screen import Finding
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.compile_check import DEFAULT_ARCH, KernelResources, compile_check

STATUSES = ("ok", "format_error", "compile_error", "runtime_error", "timeout", "wrong_answer", "rejected")


@dataclass(frozen=True)
class ConfigOutcome:
    """The verdict on one configuration.

    Attributes:
        index: Position among the task's correctness configurations.
        config: Symbol values.
        hidden: Not shown to the agent (feedback does not reveal its sizes).
        status: ``ok``, ``runtime_error``, ``timeout`` or ``wrong_answer``.
        message: Why it failed.
        output: The output buffer that mismatched, if any.
        comparison: Its comparison with the expected values.
    """

    index: int
    config: Config
    hidden: bool
    status: str
    message: str = ""
    output: str = ""
    comparison: Comparison | None = None


@dataclass(frozen=True)
class Evaluation:
    """Everything the environment learned about one submission."""

    status: str
    message: str
    backend: str
    compiled: bool = False
    correct: bool = False
    code: str | None = None
    compile_log: str = ""
    kernels: tuple[KernelResources, ...] = ()
    findings: tuple[Finding, ...] = ()
    configs: tuple[ConfigOutcome, ...] = ()
    stdout: str = ""
    speedup: float = math.nan
    speedup_lcb: float = math.nan
    runtime_ms: float = math.nan
    baseline_ms: float = math.nan
    timing_flags: tuple[str, ...] = ()
    per_config_ms: tuple[float, ...] = ()
    speedup_vs_c: float = math.nan
    speedup_vs_best: float = math.nan
    ranker_score: float = math.nan
    device: Mapping[str, object] = field(default_factory=dict)
    structure: StructuralReport | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def credited_speedup(self) -> float:
        """The speedup the reward may use: NaN when unmeasured or when timing was flagged."""
        return math.nan if self.timing_flags else self.speedup


@dataclass(frozen=True)
class EvalOptions:
    """Limits and switches of the evaluation pipeline.

    Attributes:
        arch: GPU architecture for the nvcc compile check.
        max_code_chars: Largest accepted source.
        compile_timeout_s: Limit for nvcc.
        run_hidden: Also run the task's hidden configurations.
    """

    arch: str = DEFAULT_ARCH
    max_code_chars: int = 65536
    compile_timeout_s: float = 60.0
    run_hidden: bool = True

    def __post_init__(self) -> None:
        if self.max_code_chars <= 0 or self.compile_timeout_s <= 0:
            raise ValueError("max_code_chars and compile_timeout_s must be positive")


class Evaluator:
    """Evaluates submissions on one backend; holds the expected-output cache.

    Args:
        backend: Where submissions run (``CpuBackend()``, ...).
        options: Pipeline limits.
        reference: Expected-output cache (shared between evaluators if given).
    """

    def __init__(self, backend: Backend, options: EvalOptions | None = None,
                 reference: ReferenceOutputs | None = None) -> None:  # fmt: skip
        self.backend = backend
        self.options = options or EvalOptions()
        self.reference = reference or ReferenceOutputs()

    def jobs(self, task: Task, seed: int) -> list[Job]:
        """Fresh inputs for each correctness configuration from ``seed``."""
        configs = task.correctness_configs if self.options.run_hidden else task.configs
        return [Job(c, make_inputs(task, c, seed)) for c in configs]

    def evaluate(self, task: Task, action: str, seed: int = 0) -> Evaluation:
        """Judge one action (raw agent text) for ``task``; never raises on bad input."""
        started = time.perf_counter()
        result = self._evaluate(task, action, seed)
        return replace(result, seconds={**result.seconds, "total": time.perf_counter() - started})

    def evaluate_many(
        self, task: Task, actions: Sequence[str], seed: int = 0, max_workers: int | None = None
    ) -> list[Evaluation]:
        """Judge several actions for one task concurrently (a GRPO group), in order.

        Compilation and correctness runs overlap across ``max_workers`` threads (default:
        the number of cores); backends that time serialize their timing phase, so
        concurrent submissions never disturb each other's measurements.
        """
        workers = max(1, min(len(actions), max_workers or os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda action: self.evaluate(task, action, seed), actions))

    def _evaluate(self, task: Task, action: str, seed: int) -> Evaluation:
        name = self.backend.name
        extraction = extract_code(action if isinstance(action, str) else "", max_chars=self.options.max_code_chars)
        if extraction.code is None:
            return Evaluation("format_error", extraction.error or "no code found", name)
        code = extraction.code
        findings = screen(code, entry=task.entry)
        if findings:
            return Evaluation("rejected", findings[0].message, name, code=code, findings=findings)
        workdir = scratch_dir()
        try:
            return self._compile_and_run(task, code, seed, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _compile_and_run(self, task: Task, code: str, seed: int, workdir: Path) -> Evaluation:
        seconds: dict[str, float] = {}
        result = Evaluation("", "", self.backend.name, code=code, seconds=seconds)
        jobs = self.jobs(task, seed)
        (workdir / "ref").mkdir()
        cancel = threading.Event()  # set on an early return: stops compilers still running
        with ThreadPoolExecutor(max_workers=3) as pool:
            check = pool.submit(compile_check, wrap(task, code, "cuda"), self.options.arch,
                                self.options.compile_timeout_s, cancel)  # fmt: skip
            built = pool.submit(self.backend.build, task, code, cancel)
            expected = pool.submit(self.reference.expected, task, jobs, seed, workdir / "ref")
            worker = self.backend.start_worker(workdir)
            try:
                report = check.result()
                seconds["compile_check"] = report.seconds
                result = replace(result, compile_log=report.log, kernels=report.kernels)
                if not report.ok:
                    why = "timed out" if report.timed_out else "failed"
                    return replace(result, status="compile_error", message=f"nvcc {why}")
                structure = pool.submit(analyze, code, report)  # overlaps the build and the run
                build = built.result()
                seconds["build"] = build.seconds
                result = replace(result, structure=structure.result())
                if build.unsupported:
                    findings = build.unsupported
                    return replace(result, status="rejected", message=findings[0].message, findings=findings)
                if not build.ok:
                    msg = f"nvcc accepts this code but the {self.backend.name} backend could not build it"
                    return replace(result, status="compile_error", message=msg, compile_log=build.log)
                want = expected.result()
                t_run = time.perf_counter()
                runs = self.backend.run(build, task, jobs, workdir, worker)
                seconds["run"] = time.perf_counter() - t_run
                outcomes = judge(task, jobs, runs, want)
                all_ok = len(outcomes) == len(jobs) and all(o.status == "ok" for o in outcomes)
                sanitize = getattr(self.backend, "sanitize", None)
                if all_ok and sanitize is not None and getattr(self.backend, "sanitizers", None):
                    t_sanitize = time.perf_counter()
                    problem = sanitize(build, task, min(jobs, key=_elements), workdir)
                    seconds["sanitizer"] = time.perf_counter() - t_sanitize
                    if problem:
                        return replace(result, status="runtime_error", message=problem, compiled=True,
                                       configs=tuple(outcomes))  # fmt: skip
                if self.backend.measures_time and all_ok:
                    t_time = time.perf_counter()
                    timing = self.backend.time(task, build, seed, workdir, worker)
                    seconds["timing"] = time.perf_counter() - t_time
                    if isinstance(timing, Timing):
                        seconds.update({f"timing.{phase}": s for phase, s in timing.phases.items()})
                    result = _with_timing(result, timing)
                    if result.status:
                        return result
            finally:
                cancel.set()
                worker.kill()
        failed = [o for o in outcomes if o.status != "ok"]
        return replace(
            result,
            status=failed[0].status if failed else "ok",
            message=failed[0].message if failed else f"correct on all {len(jobs)} configurations",
            compiled=True,
            correct=not failed and len(outcomes) == len(jobs),
            configs=tuple(outcomes),
            stdout=next((r.stdout for r in reversed(runs) if r.stdout), ""),
        )


def speedup_over(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> float:
    """Geometric mean of reference / candidate time over configurations where both are known (pure)."""
    ratios = [r / c for r, c in zip(reference_ms, candidate_ms, strict=False) if math.isfinite(r) and c > 0]
    return float(np.exp(np.mean(np.log(ratios)))) if ratios else math.nan


def _elements(job: Job) -> int:
    return sum(int(np.asarray(v).size) for v in job.inputs.values())


def _with_timing(result: Evaluation, timing: Timing | Crash) -> Evaluation:
    """Fold a timing outcome into the evaluation; a non-empty status means the step failed there."""
    if isinstance(timing, Crash):
        status = "timeout" if timing.kind == "timeout" else "runtime_error"
        return replace(result, status=status, message=f"while timing: {timing.message}", compiled=True)
    e = timing.estimate
    result = replace(
        result,
        speedup=e.speedup,
        speedup_lcb=e.speedup_lcb,
        runtime_ms=e.candidate_ms,
        baseline_ms=e.baseline_ms,
        timing_flags=timing.flags,
        per_config_ms=tuple(c.candidate_ms for c in timing.per_config),
        speedup_vs_c=speedup_over(timing.c_reference_ms, [c.candidate_ms for c in timing.per_config]),
        device=timing.device,
    )
    if timing.mismatch:
        return replace(result, status="wrong_answer", message=timing.mismatch, compiled=True)
    return result


def judge(
    task: Task, jobs: Sequence[Job], results: Sequence[CallResult], expected: Sequence[Mapping[str, np.ndarray]]
) -> list[ConfigOutcome]:
    """Verdicts per configuration from the worker's results and the expected outputs (pure)."""
    outcomes = []
    for index, (job, result) in enumerate(zip(jobs, results, strict=False)):  # results stop at a failure
        status, message, output, comparison = verdict(task, job, result, expected[index])
        hidden = index >= len(task.configs)
        outcomes.append(ConfigOutcome(index, job.config, hidden, status, message, output, comparison))
    return outcomes


def verdict(
    task: Task, job: Job, result: CallResult, want: Mapping[str, np.ndarray]
) -> tuple[str, str, str, Comparison | None]:
    """``(status, message, buffer, comparison)`` for one configuration's run."""
    if result.status != "ok":
        return result.status, result.message, "", None
    if result.overruns:
        names = ", ".join(f"`{n}`" for n in result.overruns)
        message = f"wrote past the end of {names} (out-of-bounds write; check your bounds guards)"
        return "runtime_error", message, "", None
    for arg in task.args:
        if arg.role == "in" and not unchanged(job.inputs[arg.name], result.buffers[arg.name]):
            return "wrong_answer", f"modified the input `{arg.name}`, which must stay unchanged", arg.name, None
    for arg in task.args:
        if arg.role in ("out", "inout"):
            comparison = compare(result.buffers[arg.name], want[arg.name], task.tolerance(arg.dtype))
            if not comparison.ok:
                message = (
                    f"`{arg.name}` differs from the expected output in "
                    f"{comparison.mismatches} of {comparison.total} elements"
                )
                return "wrong_answer", message, arg.name, comparison
    return "ok", "", "", None
