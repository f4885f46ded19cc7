"""KernelBench mode's evaluation: the stages for a reply of Python defining ``ModelNew`` (``docs/torch2cuda.md``).

The same :class:`~cudaperf_env.evaluate.Context` and :class:`~cudaperf_env.evaluate.Evaluation` as native
mode, other stages: take the ```python block, screen its AST and its CUDA sources, build the extensions
(confined, cached) while the worker starts and the trusted reference computes the expected outputs, load
the submission in the confined torch worker, run ``ModelNew`` on every configuration and judge the returned
buffers with the native judge (outputs within tolerance, inputs unchanged, the zero-fill probe), then time
it against the PyTorch reference. A backend without the ``kernelbench`` capability (the CPU backend) answers
after the screen that the mode needs a GPU.
"""

from __future__ import annotations

import time

from cudaperf_env.backends.base import Crash, Job, ModelRunner
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.evaluate import Context, Evaluation, Stage, timing_fields
from cudaperf_env.judge import judge
from cudaperf_env.source.extract import extract_python
from cudaperf_env.source.python_screen import screen_python
from cudaperf_env.source.screen import Finding
from cudaperf_env.status import Status
from cudaperf_env.toolchain.extension import ExtensionBuild

NEEDS_GPU = ("KernelBench mode needs a GPU: this backend ({backend}) cannot build or run ModelNew (CUDA "
             "extensions); run on a machine with an NVIDIA GPU (backend='cuda' or 'auto'), or use "
             "mode='native'")  # fmt: skip
_CRASHES = {"timeout": Status.TIMEOUT, "refused": Status.REJECTED}


def _runner(ctx: Context) -> ModelRunner:
    runner = ctx.backend.capabilities.kernelbench
    assert runner is not None, "stage after require_gpu"
    return runner


def extract(ctx: Context) -> Context | Evaluation:
    """Take the Python out of the reply (its ```python block), within the size limit."""
    extraction = extract_python(ctx.action, max_chars=ctx.options.max_code_chars)
    if extraction.code is None:
        return ctx.finish(Status.FORMAT_ERROR, extraction.error or "no code found")
    return ctx.update(code=extraction.code, cut_off=extraction.cut_off)


def screen(ctx: Context) -> Context | Evaluation:
    """The AST screen and the screen of the load_inline sources; a syntax error is a compile error."""
    assert ctx.result.code is not None, "stage after extract"
    result = screen_python(ctx.result.code)
    syntax = next((f for f in result.findings if f.rule == "syntax"), None)
    if syntax is not None:
        log = f"line {syntax.line}: {syntax.message}"
        return ctx.finish(Status.COMPILE_ERROR, "the Python does not parse", compile_log=log)
    if result.findings:
        return ctx.finish(Status.REJECTED, result.findings[0].message, findings=result.findings)
    ctx.extensions = result.extensions
    return ctx


def require_gpu(ctx: Context) -> Context | Evaluation:
    """The mode runs on backends that can build and run CUDA extensions only."""
    if ctx.backend.capabilities.kernelbench is None:
        return ctx.finish(Status.RUNTIME_ERROR, NEEDS_GPU.format(backend=ctx.backend.name))
    return ctx


def launch(ctx: Context) -> Context | Evaluation:
    """Start the overlapping work: the extensions' build, the expected outputs, the worker (torch's import)."""
    task, runner = ctx.task, _runner(ctx)
    ctx.pending["extensions"] = ctx.pool.submit(runner.build, ctx.extensions, ctx.cancel)
    configs = task.correctness_configs if ctx.options.run_hidden else task.configs
    ctx.jobs = [Job(c, task_inputs(task, c, ctx.seed)) for c in configs]
    reference = ctx.workdir / "ref"
    reference.mkdir(mode=0o700)  # the parent's: the worker, another user, cannot read the expected outputs
    ctx.pending["expected"] = ctx.pool.submit(ctx.reference.expected, task, ctx.jobs, ctx.seed, reference)
    ctx.worker = runner.start_worker(ctx.workdir)
    return ctx


def build(ctx: Context) -> Context | Evaluation:
    """Wait for the build; then run the submission's module in the worker with it."""
    built: ExtensionBuild = ctx.pending["extensions"].result()
    ctx.seconds["build"] = built.seconds
    if not built.ok:
        what = "timed out" if built.timed_out else "failed"
        return ctx.finish(Status.COMPILE_ERROR, f"the load_inline build {what}", compile_log=built.log)
    assert ctx.worker is not None and ctx.result.code is not None
    started = time.perf_counter()
    problem = _runner(ctx).load(ctx.result.code, built, ctx.worker)
    ctx.seconds["load"] = time.perf_counter() - started
    if problem:
        return ctx.finish(Status.RUNTIME_ERROR, problem, compiled=True)
    return ctx.update(compiled=True)


def run_and_judge(ctx: Context) -> Context | Evaluation:
    """One forward per configuration in the worker; the returned buffers judged against the expected ones."""
    assert ctx.worker is not None
    want = ctx.pending["expected"].result()
    started = time.perf_counter()
    runs = _runner(ctx).run(ctx.task, ctx.jobs, ctx.workdir, ctx.worker)
    ctx.seconds["run"] = time.perf_counter() - started
    ctx.outcomes = judge(ctx.task, ctx.jobs, runs, want)
    ctx.update(configs=tuple(ctx.outcomes))
    failed = next((o for o in ctx.outcomes if o.status != Status.OK), None)
    if failed is not None and failed.status == Status.REJECTED:
        return ctx.finish(Status.REJECTED, failed.message, findings=(Finding(0, "runtime_guard", failed.message),))
    if failed is not None:
        return ctx.finish(failed.status, failed.message)
    if len(ctx.outcomes) != len(ctx.jobs):
        return ctx.finish(Status.RUNTIME_ERROR, "the worker stopped before every configuration ran")
    return ctx


def time_model(ctx: Context) -> Context | Evaluation:
    """Time the correct ModelNew against the PyTorch reference, where the backend times."""
    if ctx.backend.capabilities.timer is None or ctx.worker is None:
        return ctx
    started = time.perf_counter()
    timing = _runner(ctx).time(ctx.task, ctx.workdir, ctx.worker)
    ctx.seconds["timing"] = time.perf_counter() - started
    if isinstance(timing, Crash):
        status = _CRASHES.get(timing.kind, Status.RUNTIME_ERROR)
        message = f"while timing: {timing.message}"
        findings = (Finding(0, "runtime_guard", message),) if status == Status.REJECTED else ()
        return ctx.finish(status, message, findings=findings)
    ctx.seconds.update({f"timing.{phase}": s for phase, s in timing.phases.items()})
    ctx.update(**timing_fields(timing))
    return ctx.finish(Status.WRONG_ANSWER, timing.mismatch) if timing.mismatch else ctx


KERNELBENCH_STAGES: tuple[Stage, ...] = (extract, screen, require_gpu, launch, build, run_and_judge, time_model)
