"""One submission, end to end: extract, screen, compile-check, build, run, compare.

The trusted parent (this module) makes inputs, holds expected outputs and
judges; the submission only ever runs in an untrusted worker process.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from cudaperf_env.backends.base import Backend
from cudaperf_env.backends.cache import scratch_dir
from cudaperf_env.backends.compile_check import DEFAULT_ARCH, KernelResources, compile_check
from cudaperf_env.backends.execute import CallResult, Job
from cudaperf_env.backends.harness import wrap
from cudaperf_env.backends.reference import ReferenceOutputs
from cudaperf_env.compare import Comparison, compare, unchanged
from cudaperf_env.source import extract_code, screen
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.schema import Config, Task

STATUSES = ("ok", "format_error", "compile_error", "runtime_error", "timeout", "wrong_answer", "rejected")


@dataclass(frozen=True)
class Finding:
    """A problem found in the source before anything ran."""

    line: int
    rule: str
    message: str


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
    runtime_ms: float = math.nan
    baseline_ms: float = math.nan
    seconds: Mapping[str, float] = field(default_factory=dict)


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
        name = self.backend.name
        extraction = extract_code(action if isinstance(action, str) else "", max_chars=self.options.max_code_chars)
        if extraction.code is None:
            return Evaluation("format_error", extraction.error or "no code found", name)
        code = extraction.code
        findings = tuple(Finding(f.line, f.rule, f.message) for f in screen(code, entry=task.entry))
        if findings:
            return Evaluation("rejected", findings[0].message, name, code=code, findings=findings)
        workdir = scratch_dir()
        try:
            return self._compile_and_run(task, code, seed, workdir, started)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _compile_and_run(self, task: Task, code: str, seed: int, workdir, started: float) -> Evaluation:
        name, seconds = self.backend.name, {}
        jobs = self.jobs(task, seed)
        (workdir / "ref").mkdir()
        with ThreadPoolExecutor(max_workers=3) as pool:
            check = pool.submit(compile_check, wrap(task, code, "cuda"), self.options.arch,
                                self.options.compile_timeout_s)  # fmt: skip
            built = pool.submit(self.backend.build, task, code)
            expected = pool.submit(self.reference.expected, task, jobs, seed, workdir / "ref")
            worker = self.backend.start_worker(workdir)
            try:
                report = check.result()
                seconds["compile_check"] = report.seconds
                if not report.ok:
                    why = "timed out" if report.timed_out else "failed"
                    return Evaluation("compile_error", f"nvcc {why}", name, code=code, compile_log=report.log,
                                      seconds=seconds)  # fmt: skip
                build = built.result()
                seconds["build"] = build.seconds
                common = dict(code=code, compile_log=report.log, kernels=report.kernels)
                if build.unsupported:
                    findings = tuple(Finding(u.line, u.construct, u.message) for u in build.unsupported)
                    return Evaluation("rejected", findings[0].message, name, findings=findings, **common)
                if not build.ok:
                    msg = f"nvcc accepts this code but the {name} backend could not build it"
                    return Evaluation("compile_error", msg, name, compile_log=build.log, code=code)
                want = expected.result()
                t_run = time.perf_counter()
                results = self.backend.run(build, task, jobs, workdir, worker)
                seconds["run"] = time.perf_counter() - t_run
            finally:
                worker.kill()
        outcomes = judge(task, jobs, results, want)
        failed = [o for o in outcomes if o.status != "ok"]
        status = failed[0].status if failed else "ok"
        correct = not failed and len(outcomes) == len(jobs)
        seconds["total"] = time.perf_counter() - started
        stdout = next((r.stdout for r in reversed(results) if r.stdout), "")
        message = failed[0].message if failed else f"correct on all {len(jobs)} configurations"
        return Evaluation(status, message, name, True, correct, configs=tuple(outcomes), stdout=stdout,
                          seconds=seconds, **common)  # fmt: skip


def judge(
    task: Task, jobs: Sequence[Job], results: Sequence[CallResult], expected: Sequence[Mapping[str, np.ndarray]]
) -> list[ConfigOutcome]:
    """Verdicts per configuration from the worker's results and the expected outputs (pure)."""
    outcomes = []
    n_shown = len(task.configs)
    for index, (job, result) in enumerate(zip(jobs, results, strict=False)):  # stops at a failure
        base = dict(index=index, config=job.config, hidden=index >= n_shown)
        if result.status != "ok":
            outcomes.append(ConfigOutcome(status=result.status, message=result.message, **base))
            continue
        if result.overruns:
            names = ", ".join(f"`{n}`" for n in result.overruns)
            msg = f"wrote past the end of {names} (out-of-bounds write; check your bounds guards)"
            outcomes.append(ConfigOutcome(status="runtime_error", message=msg, **base))
            continue
        outcomes.append(_compare_buffers(task, job, result, expected[index], base))
    return outcomes


def _compare_buffers(
    task: Task, job: Job, result: CallResult, want: Mapping[str, np.ndarray], base: dict
) -> ConfigOutcome:
    for arg in task.args:
        if arg.role == "in" and not unchanged(job.inputs[arg.name], result.buffers[arg.name]):
            msg = f"modified the input `{arg.name}`, which must stay unchanged"
            return ConfigOutcome(status="wrong_answer", message=msg, output=arg.name, **base)
    for arg in task.args:
        if arg.role in ("out", "inout"):
            comparison = compare(result.buffers[arg.name], want[arg.name], task.tolerance(arg.dtype))
            if not comparison.ok:
                msg = (
                    f"`{arg.name}` differs from the expected output in "
                    f"{comparison.mismatches} of {comparison.total} elements"
                )
                return ConfigOutcome(
                    status="wrong_answer", message=msg, output=arg.name, comparison=comparison, **base
                )
    return ConfigOutcome(status="ok", **base)
