"""Judging one run: the verdict on each configuration from the worker's results and the expected outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cudaperf_env.backends.base import CallResult, Job
from cudaperf_env.checks import compare_output
from cudaperf_env.compare import Comparison, unchanged
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.tolerance import constant_fill, output_scale, reduction_length, reorder_tolerance


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
    status: Status
    message: str = ""
    output: str = ""
    comparison: Comparison | None = None


def judge(
    task: Task,
    jobs: Sequence[Job],
    results: Sequence[CallResult],
    expected: Sequence[Mapping[str, np.ndarray]],
    checked: Sequence[tuple[bool, str]] = (),
) -> list[ConfigOutcome]:
    """Verdicts per configuration from the worker's results and the expected outputs (pure).

    ``checked``: the task's checker's ``(valid, message)`` per result, for tasks with one.
    """
    outcomes = []
    for index, (job, result) in enumerate(zip(jobs, results, strict=False)):  # results stop at a failure
        status, message, output, comparison = verdict(task, job, result, expected[index])
        if status == Status.OK and task.checker is not None:
            valid, why = checked[index] if index < len(checked) else (False, "the checker did not run")
            if not valid:
                status, message = Status.WRONG_ANSWER, f"the task's checker rejected the output: {why or 'invalid'}"
        hidden = index >= len(task.configs)
        outcomes.append(ConfigOutcome(index, job.config, hidden, status, message, output, comparison))
    return outcomes


def verdict(
    task: Task, job: Job, result: CallResult, want: Mapping[str, np.ndarray]
) -> tuple[Status, str, str, Comparison | None]:
    """``(status, message, buffer, comparison)`` for one configuration's run."""
    if result.status != "ok":
        return Status(result.status), result.message, "", None
    if result.overruns:
        names = ", ".join(f"`{n}`" for n in result.overruns)
        message = f"wrote past the end of {names} (out-of-bounds write; check your bounds guards)"
        return Status.RUNTIME_ERROR, message, "", None
    for arg in task.args:
        if arg.role == "in" and not unchanged(job.inputs[arg.name], result.buffers[arg.name]):
            return Status.WRONG_ANSWER, f"modified the input `{arg.name}`, which must stay unchanged", arg.name, None
    length = reduction_length(job.inputs)
    for arg in task.args:
        if arg.role in ("out", "inout") and task.checker is None:
            got, expected = result.buffers[arg.name], want[arg.name]
            tolerance = reorder_tolerance(task.tolerance(arg.dtype), arg.dtype.name, length, output_scale(expected))
            comparison = compare_output(task, arg, result.buffers, want, tolerance)
            if not comparison.ok:
                message = (
                    f"`{arg.name}` differs from the expected output in "
                    f"{comparison.mismatches} of {comparison.total} elements"
                )
                return Status.WRONG_ANSWER, message, arg.name, comparison
            constant = constant_fill(got, expected, tolerance) if arg.check == "elementwise" and not arg.length else ""
            if constant:
                return Status.WRONG_ANSWER, f"`{arg.name}` {constant}", arg.name, None
    return Status.OK, "", "", None
