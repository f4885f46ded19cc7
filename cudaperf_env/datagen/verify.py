"""Verification of one generated task: schema, output spread, every implementation on the CPU backend.

Runs inside a worker process of the builder's pool; pure apart from the
compilers, the CPU runtime and scratch directories.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.execute import Job
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.backends.reference import ReferenceError, ReferenceOutputs
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import Task, parse_task
from cudaperf_env.toolchain.cache import scratch_dir

DROP_REASONS = ("schema", "reference_failed", "non_finite_output", "near_constant", "implementation_failed",
                "slow_on_cpu")  # fmt: skip


@dataclass(frozen=True)
class VerifyOptions:
    """Limits of the verification of one task.

    Attributes:
        seed: Seed of the input values.
        timeout_s: CPU-backend limit per configuration (a hang becomes a drop, not a stall).
        max_config_s: Slowest accepted run of one implementation on one configuration (CI budget).
        min_spread: Smallest accepted std / mean(|value|) of the reference outputs.
    """

    seed: int = 7
    timeout_s: float = 30.0
    max_config_s: float = 1.5
    min_spread: float = 1e-6

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.max_config_s <= 0 or self.min_spread < 0:
            raise ValueError("timeout_s and max_config_s must be positive, min_spread non-negative")


@dataclass(frozen=True)
class Verdict:
    """Outcome of verifying one task.

    Attributes:
        task_id: The task.
        family: Its family.
        ok: Kept in the dataset.
        reason: One of :data:`DROP_REASONS` when dropped, else ``""``.
        detail: What failed (implementation, status, message).
        seconds: Wall time of the verification.
        slowest_config_s: Slowest implementation run on one configuration.
    """

    task_id: str
    family: str
    ok: bool
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0
    slowest_config_s: float = 0.0


def verify_task(data: dict[str, Any], options: VerifyOptions) -> Verdict:
    """Check ``data`` (a generated task mapping) end to end; never raises for a bad task."""
    started = time.perf_counter()
    task_id, family = str(data.get("id")), str(data.get("family"))

    def drop(reason: str, detail: str, slowest: float = 0.0) -> Verdict:
        return Verdict(task_id, family, False, reason, detail[:500], time.perf_counter() - started, slowest)

    try:
        task = parse_task(data, task_id)
    except TaskFormatError as exc:
        return drop("schema", str(exc))
    reference = ReferenceOutputs()
    try:
        values = _first_config_outputs(task, reference, options.seed)
    except ReferenceError as exc:
        return drop("reference_failed", str(exc))
    if not np.all(np.isfinite(values)):
        return drop("non_finite_output", f"{int(np.sum(~np.isfinite(values)))} non-finite reference outputs")
    spread = float(np.std(values) / (np.mean(np.abs(values)) + 1e-30))
    if values.size < 2 or spread < options.min_spread:
        return drop("near_constant", f"reference outputs have spread {spread:.3g} (std / mean |value|)")
    evaluator = Evaluator(CpuBackend(threads=1, timeout_s=options.timeout_s), reference=reference)
    slowest = 0.0
    for implementation in task.implementations:
        result = evaluator.evaluate(task, implementation.source, options.seed)
        runs = max(len(result.configs), 1)
        slowest = max(slowest, result.seconds.get("run", 0.0) / runs)
        if not result.correct:
            detail = f"{implementation.name}: {result.status}: {result.message}\n{result.compile_log[-300:]}"
            return drop("implementation_failed", detail, slowest)
    if slowest > options.max_config_s:
        return drop("slow_on_cpu", f"an implementation took {slowest:.2f} s per configuration", slowest)
    return Verdict(task_id, family, True, seconds=time.perf_counter() - started, slowest_config_s=slowest)


def _first_config_outputs(task: Task, reference: ReferenceOutputs, seed: int) -> np.ndarray:
    """Every output value of the reference on the first configuration, for two input seeds."""
    outputs = [a.name for a in task.args if a.role in ("out", "inout")]
    values = []
    workdir = scratch_dir("cudaperf-verify-")
    try:
        for s in (seed, seed + 1):
            job = Job(task.configs[0], task_inputs(task, task.configs[0], s))
            expected = reference.expected(task, [job], s, workdir)[0]
            values += [np.asarray(expected[name], dtype=np.float64).ravel() for name in outputs]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return np.concatenate(values)
