"""What every execution backend provides: build a submission, run it on jobs."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cudaperf_env.backends.cuda.timing import Timing
from cudaperf_env.backends.execute import CallResult, Job
from cudaperf_env.backends.sandbox import Crash, WorkerProcess
from cudaperf_env.source.screen import Finding
from cudaperf_env.tasks.schema import Task


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


class Backend(Protocol):
    """An execution backend (``cpu`` or ``cuda``); the environment never knows which."""

    @property
    def name(self) -> str:
        """``cpu`` or ``cuda``: reported in ``info["backend"]``."""
        ...

    @property
    def measures_time(self) -> bool:
        """Whether runs are timed (speedup is NaN otherwise)."""
        ...

    def build(self, task: Task, code: str, cancel: threading.Event | None = None) -> Build:
        """Turn submission source into something :meth:`run` can execute (``cancel`` stops it early)."""
        ...

    def start_worker(self, workdir: Path) -> WorkerProcess:
        """Start (pre-warm) the worker that :meth:`run` will use."""
        ...

    def run(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: WorkerProcess | None = None
    ) -> list[CallResult]:
        """Run the build on each job in one worker; stop at the first failure."""
        ...

    def time(self, task: Task, candidate: Build, seed: int, workdir: Path, worker: WorkerProcess) -> Timing | Crash:
        """Time a correct candidate against the task's baseline (only if ``measures_time``)."""
        ...
