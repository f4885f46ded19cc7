"""A task's trusted checker: a C function that decides whether outputs are valid, for problems with
several valid answers (a convex hull from any start point, any valid permutation or colouring).

The task file gives ``checker: {source: ..., entry: NAME}``; the function receives the entry's
arguments (outputs as ``const``: what the submission wrote), then the reference's value of every
output (``const``, same order, named ``expected_<name>``), then ``int* valid`` and
``char* message`` (room for :data:`MESSAGE_BYTES` characters)::

    void check_hull(int n, const float* x, const float* y, const int* hull, const int* count,
                    const int* expected_hull, const int* expected_count, int* valid, char* message);

It is built with gcc like the C reference and run like it, in a worker of its own (a checker
reading indices out of hostile output must not take the trusted process down); a crash or a
time-out of the checker is the submission's wrong answer, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.status import Status
from cudaperf_env.tasks.dtypes import DTYPES
from cudaperf_env.tasks.schema import Arg, Task
from cudaperf_env.toolchain.native import build_c_reference

MESSAGE_BYTES = 256
VALID, MESSAGE = "cudaperf_valid", "cudaperf_message"


def checker_task(task: Task) -> Task:
    """The checker's own call, as a task whose entry is the checker (so the harness and worker apply)."""
    assert task.checker is not None
    args: list[Arg] = []
    for arg in task.args:
        args.append(replace(arg, role="in", check="elementwise", length="") if arg.is_buffer else arg)
    args += [replace(a, name=f"expected_{a.name}", role="in", init={}, check="elementwise", length="")
             for a in task.args if a.role in ("out", "inout")]  # fmt: skip
    args += [Arg(VALID, "out", DTYPES["int32"], shape=(1,)),
             Arg(MESSAGE, "out", DTYPES["int8"], shape=(MESSAGE_BYTES,), ctype="char")]  # fmt: skip
    return replace(task, id=f"{task.id}#checker", entry=task.checker.entry, args=tuple(args),
                   reference_source=task.checker.source, implementations=(), baseline="")  # fmt: skip


def run_checker(
    task: Task,
    jobs: Sequence[Job],
    outputs: Sequence[Mapping[str, np.ndarray]],
    expected: Sequence[Mapping[str, np.ndarray]],
    workdir: Path,
    timeout_s: float = 30.0,
) -> list[tuple[bool, str]]:
    """``(valid, message)`` per job: the checker's verdict on what the submission wrote."""
    view = checker_task(task)
    build = build_c_reference(wrap(view, view.reference_source, "c", "checker.c"))
    if not build.ok or build.library is None:
        return [(False, f"the task's checker does not compile (a task bug):\n{build.log[-500:]}")] * len(jobs)
    calls = []
    for job, got, want in zip(jobs, outputs, expected, strict=True):
        inputs = dict(job.inputs)
        for arg in task.args:
            if arg.role in ("out", "inout"):
                inputs[arg.name] = np.asarray(got[arg.name])
                inputs[f"expected_{arg.name}"] = np.asarray(want[arg.name])
        calls.append(Job(job.config, inputs))
    folder = workdir / "checker"
    folder.mkdir(exist_ok=True)
    results = run_jobs(build.library, view, calls, folder, timeout_s, deterministic=True)
    verdicts = []
    for i in range(len(jobs)):
        if i >= len(results) or results[i].status != Status.OK:
            why = results[i].message if i < len(results) else "it stopped before this configuration"
            verdicts.append((False, f"the task's checker failed on this output: {why}"))
            continue
        raw = results[i].buffers[MESSAGE].tobytes()
        message = raw.split(b"\0", 1)[0].decode("utf-8", "replace").strip() if b"\0" in raw else ""
        verdicts.append((bool(results[i].buffers[VALID][0] == 1), message))
    return verdicts
