"""``cudaperf tasks check DIR``: validate a folder of a user's task files and run each reference.

For every ``*.yaml`` file: the schema (errors name the file and the field), the C reference on
every shown and hidden configuration for two input seeds (it must build, finish, and write
every output element), a zero-fill probe (an all-zero output must fail wherever the reference's
output varies, or the tolerance is too loose for the outputs' scale), and every implementation
the file gives, judged correct on the CPU backend.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.execute import Job
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.reference import ReferenceError, ReferenceOutputs
from cudaperf_env.compare import compare
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import Task, load_task
from cudaperf_env.toolchain.cache import scratch_dir

SEEDS = (0, 1)


@dataclass(frozen=True)
class TaskCheck:
    """What checking one task file found.

    Attributes:
        path: The file.
        task_id: Its id ("" when it did not load).
        errors: Problems that make the task unusable, each saying where and what to do.
        warnings: Things worth a look that do not stop the task.
    """

    path: str
    task_id: str
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def task_files(directory: str | Path) -> list[Path]:
    """The task files of a folder, recursively, in a stable order."""
    return sorted(p for p in Path(directory).rglob("*.yaml") if p.is_file())


def check_folder(directory: str | Path, timeout_s: float = 60.0) -> Iterator[TaskCheck]:
    """One :class:`TaskCheck` per task file under ``directory`` (a generator, for progress bars)."""
    reference = ReferenceOutputs(timeout_s=timeout_s)
    evaluator = Evaluator(CpuBackend(timeout_s=timeout_s), reference=reference)
    for path in task_files(directory):
        yield check_task(path, reference, evaluator)


def check_task(path: Path, reference: ReferenceOutputs, evaluator: Evaluator) -> TaskCheck:
    """Check one task file; never raises for a bad task."""
    try:
        task = load_task(path)
    except TaskFormatError as exc:
        return TaskCheck(str(path), "", (str(exc),))
    errors, warnings = _reference_problems(task, reference)
    if not errors:
        for impl in task.implementations:
            e = evaluator.evaluate(task, impl.source, seed=SEEDS[0])
            if not e.correct:
                errors.append(f"implementation {impl.name!r}: {e.status}: {e.message}\n{e.compile_log[-600:]}")
    if not task.implementations:
        warnings.append("no implementations: fine for training; the GPU speedup is then over the C reference")
    return TaskCheck(str(path), task.id, tuple(errors), tuple(warnings))


def _reference_problems(task: Task, reference: ReferenceOutputs) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    outputs = [a for a in task.args if a.role in ("out", "inout")]
    workdir = scratch_dir("cudaperf-check-")
    try:
        for config in task.correctness_configs:
            try:
                runs = [reference.expected(task, [Job(config, task_inputs(task, config, s))], s, workdir)[0]
                        for s in SEEDS]  # fmt: skip
            except (ReferenceError, ValueError) as exc:
                errors.append(f"configuration {dict(config)}: {exc}")
                continue
            for arg in outputs:
                values = [np.asarray(run[arg.name]) for run in runs]
                if arg.dtype.is_float and not all(np.all(np.isfinite(v)) for v in values):
                    errors.append(f"configuration {dict(config)}: the reference leaves non-finite values in "
                                  f"{arg.name} (outputs arrive filled with NaN: write every element)")  # fmt: skip
                    continue
                varies = any(np.ptp(v) > 0 for v in values) or not np.array_equal(values[0], values[1])
                if not varies:
                    warnings.append(f"configuration {dict(config)}: {arg.name} is the same constant for both "
                                    "seeds; a submission writing that constant passes")  # fmt: skip
                elif task.checker is None and all(compare(np.zeros_like(v), v, task.tolerance(arg.dtype)).ok
                                                  for v in values):  # fmt: skip
                    errors.append(f"configuration {dict(config)}: an all-zero {arg.name} passes the tolerance; "
                                  "tighten atol to the outputs' scale")  # fmt: skip
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return errors, warnings
