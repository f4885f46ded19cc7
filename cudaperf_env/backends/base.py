"""The backend seam: shared value types, the protocol every backend implements, optional capabilities.

The evaluator (``cudaperf_env/evaluate.py``) imports this module and nothing else from
``backends/``: it asks a backend for its :class:`Capabilities` (timing, sanitizers)
rather than testing concrete types, so a new backend plugs in without touching it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from cudaperf_env.source.inline_extension import InlineExtension
from cudaperf_env.source.screen import Finding
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.extension import ExtensionBuild


@dataclass(frozen=True)
class Build:
    """A submission built for a backend, or why not.

    Attributes:
        ok: Built; ``library`` is set.
        library: The shared library to load in a worker.
        log: Build diagnostics.
        unsupported: Constructs this backend cannot run, by line (then ``ok`` is False).
        seconds: Build wall time (0 if cached).
        cached: Served from the build cache.
    """

    ok: bool
    library: Path | None = None
    log: str = ""
    unsupported: tuple[Finding, ...] = ()
    seconds: float = 0.0
    cached: bool = False


@dataclass(frozen=True)
class Job:
    """One configuration to run and the input values to run it on."""

    config: Config
    inputs: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class CallResult:
    """One configuration's run.

    Attributes:
        status: ``Status.OK``, ``RUNTIME_ERROR`` or ``TIMEOUT``.
        message: Why it failed ("" when ok).
        crash_kind: For crashes, the runtime's fatal kind (``deadlock``, ...) or ``signal``.
        buffers: Every buffer's contents after the call, by argument name.
        overruns: Buffers whose bytes past the end were written.
        seconds: Wall time of the call inside the worker.
        stdout: What the code printed.
    """

    status: Status
    message: str = ""
    crash_kind: str = ""
    buffers: Mapping[str, np.ndarray] = field(default_factory=dict)
    overruns: tuple[str, ...] = ()
    seconds: float = 0.0
    stdout: str = ""


@dataclass(frozen=True)
class Crash:
    """How a worker ended when it did not answer.

    Attributes:
        kind: ``timeout``, a fatal kind from the runtime (``deadlock``,
            ``illegal_address``, ...), ``signal``, ``exit`` or ``protocol``.
        message: One-paragraph explanation for the agent.
        stderr: Tail of the worker's standard error.
    """

    kind: str
    message: str
    stderr: str = ""


class Worker(Protocol):
    """A started worker process, as the evaluator sees it: something to kill at the end."""

    def kill(self) -> None:
        """Kill the worker and everything it started."""
        ...


class SpeedEstimate(Protocol):
    """Medians and a speedup with its lower confidence bound."""

    @property
    def candidate_ms(self) -> float: ...
    @property
    def baseline_ms(self) -> float: ...
    @property
    def speedup(self) -> float: ...
    @property
    def speedup_lcb(self) -> float: ...


class TimingResult(Protocol):
    """A backend's speed verdict on a correct submission (what the evaluator reads of it)."""

    @property
    def estimate(self) -> SpeedEstimate: ...
    @property
    def flags(self) -> tuple[str, ...]: ...
    @property
    def mismatch(self) -> str: ...
    @property
    def device(self) -> Mapping[str, object]: ...
    @property
    def per_config(self) -> Sequence[SpeedEstimate]: ...
    @property
    def phases(self) -> Mapping[str, float]: ...
    @property
    def c_reference_ms(self) -> Sequence[float]: ...
    @property
    def speedup_bound(self) -> float:
        """Finite when timing stopped early: the speedup is at most this (below the reward's floor)."""
        ...
    @property
    def baseline(self) -> str:
        """What the speedup is over: ``"implementation"`` or ``"c_reference"`` (a task without a baseline)."""
        ...


class Timer(Protocol):
    """Capability: times a correct candidate against the task's baseline (or its C reference without one)."""

    def time(self, task: Task, candidate: Build, seed: int, workdir: Path, worker: Worker) -> TimingResult | Crash:
        """The timing verdict, or the crash that ended it."""
        ...


class Sanitizer(Protocol):
    """Capability: runs a correct build under memory/race checkers."""

    def sanitize(self, build: Build, task: Task, job: Job, workdir: Path) -> str:
        """The first finding, or "" when clean."""
        ...


class ModelRunner(Protocol):
    """Capability: runs KernelBench-mode submissions, Python defining ``ModelNew`` (``backends/cuda/kernelbench.py``).

    The evaluator calls :meth:`build`, :meth:`start_worker`, :meth:`load`, :meth:`run`, then (where the
    backend times) :meth:`time`; the worker holds the submission's module between calls.
    """

    def build(self, extensions: Sequence[InlineExtension], cancel: threading.Event | None = None) -> ExtensionBuild:
        """Build (or find cached) the extensions the screen read from the submission."""
        ...

    def start_worker(self, workdir: Path) -> Worker:
        """Start the confined torch worker (it makes its device context while the build runs)."""
        ...

    def load(self, source: str, build: ExtensionBuild, worker: Worker) -> str:
        """Run the submission's module in the worker; "" once ``ModelNew`` is ready, else why not."""
        ...

    def run(self, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker) -> list[CallResult]:
        """One forward per job, every buffer back (``rejected`` for a run-time rule broken); stop at a failure."""
        ...

    def time(self, task: Task, workdir: Path, worker: Worker) -> TimingResult | Crash:
        """The timing verdict on the correct ``ModelNew``, or the crash that ended it (kind ``refused``: a rule
        broken)."""
        ...


class Preparer(Protocol):
    """Capability: makes ahead what grading any reply to a task needs and no reply changes (a timing's inputs)."""

    def prepare(self, task: Task) -> None:
        """Make it now (kept for the evaluations of ``task`` to come); raises what making it raised."""
        ...


class AloneRunner(Protocol):
    """Runs a build with the device to itself, where ordinary runs share it with other evaluations' runs."""

    def run_alone(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker
    ) -> list[CallResult]:
        """:meth:`Backend.run` with nothing else on the device."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond building and running.

    Attributes:
        timer: Times submissions (None: speed is not measured, as on the CPU backend).
        sanitizer: Runs sanitizers on correct submissions (None: not available or not enabled).
        kernelbench: Runs KernelBench-mode submissions (None: native mode only; the mode needs a GPU).
        alone: Runs share the device with other evaluations' runs, and this runs one with the device
            to itself: a run that ran out of device memory beside others may have lost it to them, so
            it is judged alone again (None: runs never share the device).
        preparer: Makes a task's reply-independent grading inputs ahead (``Evaluator.prepare``;
            None: nothing of the backend's own to make).
    """

    timer: Timer | None = None
    sanitizer: Sanitizer | None = None
    kernelbench: ModelRunner | None = None
    alone: AloneRunner | None = None
    preparer: Preparer | None = None


class Backend(Protocol):
    """An execution backend (``cpu`` or ``cuda``); the environment never knows which."""

    @property
    def name(self) -> str:
        """``cpu`` or ``cuda``: reported in ``info["backend"]``."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """The optional capabilities this backend has."""
        ...

    def build(self, task: Task, code: str, cancel: threading.Event | None = None) -> Build:
        """Turn submission source into something :meth:`run` can execute (``cancel`` stops it early)."""
        ...

    def start_worker(self, workdir: Path) -> Worker:
        """Start (pre-warm) the worker that :meth:`run` will use."""
        ...

    def run(self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker) -> list[CallResult]:
        """Run the build on each job in ``worker``; stop at the first failure."""
        ...
