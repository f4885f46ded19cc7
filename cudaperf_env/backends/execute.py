"""Run a built library on a task's configurations in one untrusted worker process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from cudaperf_env.backends.base import CallResult, Crash, Job
from cudaperf_env.backends.buffers import BufferFile
from cudaperf_env.backends.sandbox import FATAL_KINDS, WorkerProcess
from cudaperf_env.tasks.schema import Task


def run_jobs(
    library: Path,
    task: Task,
    jobs: Sequence[Job],
    workdir: Path,
    timeout_s: float,
    threads: int = 0,
    deterministic: bool = False,
    memory_bytes: int = 8 << 30,
    worker: WorkerProcess | None = None,
    uid: int | None = None,
) -> list[CallResult]:
    """Load ``library`` in a worker and call the entry once per job; stop at the first failure.

    Args:
        worker: An already started worker to use (pre-warmed while compiling); a fresh
            one otherwise (then killed at the end; a given worker is the caller's to kill).
        uid: When running as root, the user the submission runs as (e.g. 65534, nobody): it
            then cannot write outside ``workdir``. The library and buffers are made readable to it.
    """
    if uid is not None and os.geteuid() == 0:
        library = _share_with(uid, library, workdir)
    proc = worker or WorkerProcess(workdir)
    try:
        load = {"op": "load", "lib": str(library), "name": "candidate", "threads": threads,
                "deterministic": deterministic, "memory_bytes": memory_bytes, "uid": uid}  # fmt: skip
        reply = proc.request(load, timeout_s)
        if isinstance(reply, Crash) or not reply.get("ok"):
            return [_failure(reply, proc)]
        return _call_each(proc, task, jobs, workdir, timeout_s)
    finally:
        if worker is None:
            proc.kill()


def _share_with(uid: int, library: Path, workdir: Path) -> Path:
    """Copy the library into ``workdir`` and open both to ``uid`` (buffer files follow the dir's mode)."""
    shared = workdir / "submission.so"
    shutil.copyfile(library, shared)
    shared.chmod(0o755)
    os.chown(workdir, uid, -1)  # the worker may create its scratch files here, nowhere else
    return shared


def _call_each(
    proc: WorkerProcess, task: Task, jobs: Sequence[Job], workdir: Path, timeout_s: float
) -> list[CallResult]:
    results: list[CallResult] = []
    for index, job in enumerate(jobs):
        result = call_once(proc, task, job, workdir / f"buffers-{index}.bin", timeout_s)
        results.append(result)
        if result.status != "ok":
            break
    return results


def call_once(
    proc: WorkerProcess, task: Task, job: Job, path: Path, timeout_s: float, lib: str = "candidate"
) -> CallResult:
    """One call of the loaded library ``lib`` on ``job``'s inputs, in a fresh buffer file."""
    buffers = BufferFile(path, task, job.config, job.inputs)
    try:
        call = {"op": "call", "lib": lib, "file": str(buffers.path), "size": buffers.size,
                "guards": list(buffers.guards), "args": buffers.request_args(task, job.config)}  # fmt: skip
        reply = proc.request(call, timeout_s)
        if isinstance(reply, Crash) or not reply.get("ok"):
            return _failure(reply, proc)
        device_overruns = [task.args[i].name for i in reply.get("overrun_args", [])]
        ok = reply["code"] == 0
        return CallResult(
            status="ok" if ok else "runtime_error",
            message="" if ok else f"CUDA error {reply['error']}",
            buffers=buffers.snapshot(),
            overruns=tuple(dict.fromkeys(buffers.overruns() + device_overruns)),
            seconds=float(reply["seconds"]),
            stdout=proc.stdout_text(),
        )
    finally:
        buffers.close()


def _failure(reply: dict | Crash, proc: WorkerProcess) -> CallResult:
    stdout = proc.stdout_text()
    if isinstance(reply, Crash):
        status = "timeout" if reply.kind == "timeout" else "runtime_error"
        message = reply.message
        if reply.kind in FATAL_KINDS.values():
            message = f"{reply.kind.replace('_', ' ')}: {message}"
        return CallResult(status, message, reply.kind, stdout=stdout)
    return CallResult("runtime_error", str(reply.get("error", "unknown worker error")), "load", stdout=stdout)
