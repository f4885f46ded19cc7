"""Turn an evaluation into the feedback text the agent reads next turn."""

from __future__ import annotations

import math

from cudaperf_env.evaluate import ConfigOutcome, Evaluation
from cudaperf_env.kinds import kind_of
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Task
from cudaperf_env.text import sanitize, truncate

MAX_LOG_LINES = 30
_CUT_OFF = ("The code block was never closed: the reply was probably cut off by a length limit. "
            "Answer with a shorter, complete source.")
_VERBS = {Status.TIMEOUT: "Timed out", Status.RUNTIME_ERROR: "Runtime error", Status.WRONG_ANSWER: "Wrong answer"}


def feedback(task: Task, evaluation: Evaluation) -> str:
    """A concise, actionable report of what happened to the submission."""
    e = evaluation
    if e.status == Status.FORMAT_ERROR:
        body = f"Format error: {e.message}.\n{kind_of(task, e.mode).answer_format(task)}"
    elif e.status == Status.REJECTED:
        lines = "\n".join(f"  {_at(f.line)}{f.message}" for f in e.findings[:10]) or f"  {e.message}"
        body = f"Rejected {'at run time' if e.compiled else 'before compiling'}:\n{lines}"
    elif e.status == Status.COMPILE_ERROR:
        body = f"Compilation failed: {e.message}.\n{truncate(e.compile_log, 4000, MAX_LOG_LINES)}"
    elif e.status == Status.OK:
        body = _success(task, e)
    else:
        body = _failure(e)
    if e.cut_off and e.status != Status.OK:
        body += f"\n{_CUT_OFF}"
    if e.structure is not None and e.structure.hints and e.status not in (Status.FORMAT_ERROR, Status.COMPILE_ERROR):
        hints = "\n".join(f"  - {h}" for h in e.structure.hints[:5])
        body += f"\nStructure (score {e.structure.score:.2f}):\n{hints}"
    if e.stdout and e.status != Status.FORMAT_ERROR:
        body += f"\nYour program printed:\n{truncate(e.stdout, 1000, 15)}"
    return sanitize(f"[{e.status}] {body}")


def _success(task: Task, e: Evaluation) -> str:
    parts = [f"Correct on all {len(e.configs)} configurations ({e.backend} backend)."]
    if math.isfinite(e.speedup):
        over = {"c_reference": f"{kind_of(task).reference_noun} compiled with -O2 on the host CPU",
                "pytorch_eager": "the PyTorch reference run eagerly on the same GPU"}.get(
            e.baseline, "the baseline implementation")  # fmt: skip
        parts.append(
            f"Runtime {e.runtime_ms:.4g} ms vs. {e.baseline_ms:.4g} ms for {over}: speedup {e.speedup:.2f}x "
            f"(95% lower bound {e.speedup_lcb:.2f}x) on {e.device.get('name', 'the GPU')}."
        )
        if math.isfinite(e.speedup_vs_compile):
            parts.append(f"Against torch.compile of the reference ({e.compile_ms:.4g} ms): "
                         f"{e.speedup_vs_compile:.2f}x.")
        elif e.compile_error:
            parts.append(f"No torch.compile baseline ({e.compile_error}): compared with eager only.")
        if math.isfinite(e.speedup_vs_c) and e.baseline != "c_reference":
            parts.append(f"That is {e.speedup_vs_c:.1f}x faster than {kind_of(task).reference_noun} on the CPU.")
        if math.isfinite(e.speedup_bound):
            parts.append(f"Timing stopped early: at most {e.speedup_bound:.2g}x, far slower than the baseline.")
        if e.timing_flags:
            parts.append(f"Speedup not credited: {'; '.join(e.timing_flags)}.")
    else:
        parts.append("This backend checks correctness only; speed is measured on a GPU.")
    parts += _resources(e)
    return "\n".join(parts)


def _failure(e: Evaluation) -> str:
    failed = next((o for o in e.configs if o.status != Status.OK), None)
    if failed is None:
        return e.message
    where = _where(failed)
    verb = _VERBS.get(failed.status, "Failed")
    text = f"{verb} on {where}: {failed.message}."
    c = failed.comparison
    if c is not None:
        text += f"\n  first mismatch at flat index {c.first_bad}: got {c.got:.7g}, expected {c.want:.7g}"
        if c.nans < c.mismatches:  # errors over the finite mismatches; NaNs are reported below
            text += f"\n  max abs error {c.max_abs_error:.3g}, max rel error {c.max_rel_error:.3g}"
        if c.nans:
            text += (
                f"\n  {c.nans} elements are NaN: output buffers arrive filled with NaN, so every element "
                "must be written (clear accumulators first)"
            )
    passed = sum(o.status == Status.OK for o in e.configs)
    if passed:
        text += f"\n{passed} configuration(s) before it passed."
    return text


def _where(o: ConfigOutcome) -> str:
    if o.hidden:
        return f"hidden configuration #{o.index + 1}"
    sizes = ", ".join(f"{k}={v}" for k, v in o.config.items())
    return f"configuration #{o.index + 1} ({sizes})"


def _resources(e: Evaluation) -> list[str]:
    lines = []
    for k in e.kernels[:8]:
        spills = f", {k.spill_stores} B spill stores" if k.spill_stores else ""
        lines.append(
            f"  kernel {truncate(k.name, 80)}: {k.registers} registers, {k.shared_bytes} B static shared memory{spills}"
        )
    return [f"Compiled resources ({e.arch}):", *lines] if lines else []


def _at(line: int) -> str:
    return f"line {line}: " if line > 0 else ""  # whole-program findings have no line
