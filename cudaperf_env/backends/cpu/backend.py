"""The ``cpu`` backend: real CUDA C++ on the CPU through the project's runtime. No timing."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaperf_env.backends.base import Build, CallResult, Capabilities, Job, Worker
from cudaperf_env.backends.cpu import imports
from cudaperf_env.backends.cpu.compiler import build_cpu, ensure_prebuilt
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.cpu.racecheck import build_race_check, run_race_check
from cudaperf_env.backends.execute import call_once, run_jobs
from cudaperf_env.backends.harness import shim_first
from cudaperf_env.backends.sandbox import WorkerProcess
from cudaperf_env.source.screen import Finding
from cudaperf_env.tasks.schema import Task
from cudaperf_env.toolchain import initcode


@dataclass(frozen=True)
class CpuBackend:
    """Runs submissions with the CUDA-on-CPU runtime.

    Attributes:
        threads: Worker OS threads sharing the blocks (0: one per core).
        deterministic: One thread, blocks in order (reproducible float atomics).
        timeout_s: Wall-clock limit per configuration.
        build_timeout_s: Wall-clock limit for g++.
        sandbox_uid: When running as root, the submission runs as this user (default 65534,
            ``nobody``) so it cannot write outside its scratch directory; None keeps root.
        separate_memory: Close device memory to the entry's host code, as a GPU does (a host
            dereference of a device pointer is an ``illegal_address``); False only to measure its cost.
    """

    threads: int = 0
    deterministic: bool = False
    timeout_s: float = 10.0
    build_timeout_s: float = 60.0
    sandbox_uid: int | None = 65534
    separate_memory: bool = True
    name: str = "cpu"

    @property
    def capabilities(self) -> Capabilities:
        """None: the CPU runtime checks correctness; it neither times nor sanitizes."""
        return Capabilities()

    def build(self, task: Task, code: str, cancel: threading.Event | None = None) -> Build:
        passed = prepass(code, entry=task.entry if self.separate_memory else None)
        if passed.rejections:
            unsupported = tuple(Finding(r.line, r.construct, r.message) for r in passed.rejections)
            return Build(False, unsupported=unsupported)
        linked = ensure_prebuilt()  # one mode for the build and its symbol check's baseline
        # the shim before the submission: no macro of the submission reaches it
        # and no submitted code runs at load time (the pre-pass's __device__ variables aside)
        at_load = functools.partial(initcode.check, device_variables=passed.device_variables)
        unit = imports.unit_checker(linked)  # and imports from the system only what the runtime's headers do
        result = build_cpu(shim_first(task, passed.source, "cuda"), self.build_timeout_s, cancel,
                           check=imports.checker(linked), linked=linked,
                           object_check=lambda obj: at_load(obj) or unit(obj))  # fmt: skip
        imports.settle(linked)  # the baseline's build (a cold cache only) ends with this evaluation
        if result.refused.startswith(initcode.MESSAGE):
            return Build(False, log=result.log, unsupported=(Finding(0, "constructor", result.refused),))
        if result.refused:  # the symbol check: calls into the system the screen did not see
            return Build(False, log=result.log, unsupported=(Finding(0, "symbols", result.refused),))
        return Build(result.ok, result.library, result.log, (), result.seconds, result.cached)

    def race_build(self, task: Task, code: str, cancel: threading.Event | None = None) -> Build:
        """The race check's instrumented build of ``code`` (:meth:`race_check` runs it), made beside :meth:`build`."""
        result = build_race_check(task, code, self.build_timeout_s, cancel, linked=ensure_prebuilt())
        if result is None:
            return Build(False)
        return Build(result.ok, result.library, result.log, (), result.seconds, result.cached)

    def start_worker(self, workdir: Path) -> WorkerProcess:
        return WorkerProcess(workdir)

    def run(
        self, build: Build, task: Task, jobs: Sequence[Job], workdir: Path, worker: Worker | None = None
    ) -> list[CallResult]:
        assert build.library is not None, "run() needs a successful build"
        assert worker is None or isinstance(worker, WorkerProcess), "run() takes the worker start_worker() made"
        threads = self.threads or min(os.cpu_count() or 1, 8)
        return run_jobs(
            build.library, task, jobs, workdir, self.timeout_s, threads, self.deterministic, worker=worker,
            uid=self.sandbox_uid,
        )

    def rerun(self, task: Task, job: Job, workdir: Path, worker: Worker, tag: str) -> CallResult:
        """One more call of the library ``worker`` has loaded (after :meth:`run`), e.g. under another schedule.

        The runtime reads the kernel resources file again before the call's first launch when it changed.
        """
        assert isinstance(worker, WorkerProcess), "rerun() takes the worker run() used"
        return call_once(worker, task, job, workdir / f"buffers-{tag}.bin", self.timeout_s)

    def race_check(self, task: Task, build: Build, job: Job, workdir: Path, worker: Worker) -> CallResult | None:
        """``job`` once under the shadow-memory race detector (:mod:`cudaperf_env.backends.cpu.racecheck`),
        with the library :meth:`race_build` made; None when that build failed."""
        assert isinstance(worker, WorkerProcess), "race_check() takes the worker run() used"
        return run_race_check(build.library if build.ok else None, task, job, workdir, worker, self.timeout_s)
