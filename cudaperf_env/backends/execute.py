"""Run a built library on a task's configurations in one untrusted worker process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from cudaperf_env.backends.base import CallResult, Crash, Job
from cudaperf_env.backends.buffers import BufferFile, BufferResized
from cudaperf_env.backends.sandbox import FATAL_KINDS, UnsafeWorkdir, WorkerProcess
from cudaperf_env.status import Status
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
        uid: Where the worker is not confined (``CUDAPERF_CONFINE=off``) and runs as root, the
            user it drops to before loading the submission (e.g. 65534, nobody). A confined worker
            has a user of its own already.
    """
    try:
        proc = worker or WorkerProcess(workdir)
    except UnsafeWorkdir as exc:  # a link planted where the harness works: refuse, follow nothing
        return [CallResult(Status.RUNTIME_ERROR, f"the harness's folder was tampered with ({exc})", "protocol")]
    drop = uid if proc.uid is None else None
    owner = proc.uid if proc.uid is not None else uid
    if owner is not None and os.geteuid() == 0:
        library = _share_with(owner, library, workdir)
    io_dir(workdir)
    try:
        load = {"op": "load", "lib": str(library), "name": "candidate", "threads": threads,
                "deterministic": deterministic, "memory_bytes": memory_bytes, "uid": drop}  # fmt: skip
        reply = proc.request(load, timeout_s)
        if isinstance(reply, Crash) or not reply.get("ok"):
            return [_failure(reply, proc)]
        return _call_each(proc, task, jobs, workdir, timeout_s)
    finally:
        if worker is None:
            proc.kill()


def _share_with(uid: int, library: Path, workdir: Path) -> Path:
    """Copy the library into a parent-owned folder of ``workdir`` and open ``workdir`` to ``uid``."""
    shared = io_dir(workdir) / "submission.so"
    shared.unlink(missing_ok=True)
    shutil.copyfile(library, shared, follow_symlinks=False)
    shared.chmod(0o755)
    os.chown(workdir, uid, -1)  # the worker may create its scratch files here, nowhere else
    return shared


def io_dir(workdir: Path) -> Path:
    """``workdir/io``: the parent's folder for buffer files and libraries, which the worker can read
    but not change (no links planted where the parent writes as root). Made before the submission runs."""
    folder = workdir / "io"
    if not folder.is_dir() or folder.is_symlink() or folder.stat().st_uid != os.geteuid():
        if folder.is_symlink() or folder.exists():
            folder.rename(workdir / f".stale-{os.urandom(4).hex()}")  # planted by the worker: set aside
        folder.mkdir(mode=0o755)
    return folder


def _call_each(
    proc: WorkerProcess, task: Task, jobs: Sequence[Job], workdir: Path, timeout_s: float
) -> list[CallResult]:
    results: list[CallResult] = []
    for index, job in enumerate(jobs):
        result = call_once(proc, task, job, io_dir(workdir) / f"buffers-{index}.bin", timeout_s)
        results.append(result)
        if result.status != Status.OK:
            break
    return results


def call_once(
    proc: WorkerProcess, task: Task, job: Job, path: Path, timeout_s: float, lib: str = "candidate"
) -> CallResult:
    """One call of the loaded library ``lib`` on ``job``'s inputs, in a fresh buffer file.

    Its ``stdout`` is what this call printed alone (so the feedback can leave out what the
    hidden configurations printed, their sizes among it).
    """
    start = proc.stdout_size()
    buffers = BufferFile(path, task, job.config, job.inputs)
    try:
        call = {"op": "call", "lib": lib, "file": str(buffers.path), "size": buffers.size,
                "guards": list(buffers.guards), "args": buffers.request_args(task, job.config)}  # fmt: skip
        reply = proc.request(call, timeout_s)
        if isinstance(reply, Crash) or not reply.get("ok"):
            return _failure(reply, proc, start)
        checked = call_reply(reply, len(task.args))
        if isinstance(checked, str):
            proc.kill()
            return CallResult(Status.RUNTIME_ERROR, checked, "protocol", stdout=proc.stdout_text(start=start))
        code, error, seconds, overrun_args = checked
        try:
            buffers.read_back()
        except BufferResized as exc:
            proc.kill()
            why = f"{exc}: a submission may not touch the harness's files"
            return CallResult(Status.RUNTIME_ERROR, why, "protocol", stdout=proc.stdout_text(start=start))
        device_overruns = [task.args[i].name for i in overrun_args]
        return CallResult(
            status=Status.OK if code == 0 else Status.RUNTIME_ERROR,
            message="" if code == 0 else f"CUDA error {error}",
            buffers=buffers.snapshot(),
            overruns=tuple(dict.fromkeys(buffers.overruns() + device_overruns)),
            seconds=seconds,
            stdout=proc.stdout_text(start=start),
        )
    finally:
        buffers.close()


def call_reply(reply: dict, n_args: int) -> tuple[int, str, float, list[int]] | str:
    """A ``call`` reply's fields, type-checked (pure): ``(code, error, seconds, overrun_args)``, or
    why the reply is malformed (then the worker is not to be believed: a ``runtime_error``)."""
    code, error, seconds = reply.get("code"), reply.get("error", ""), reply.get("seconds", 0.0)
    overruns = reply.get("overrun_args", [])
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(error, str):
        return "the worker sent a malformed reply (code/error): a submission may not forge the harness's replies"
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds >= 0:
        return "the worker sent a malformed reply (seconds): a submission may not forge the harness's replies"
    if not isinstance(overruns, list) or not all(isinstance(i, int) and 0 <= i < n_args for i in overruns):
        return "the worker sent a malformed reply (overrun_args): a submission may not forge the harness's replies"
    return code, error[:2000], float(seconds), overruns


def _failure(reply: dict | Crash, proc: WorkerProcess, start: int = 0) -> CallResult:
    stdout = proc.stdout_text(start=start)
    if isinstance(reply, Crash):
        status = Status.TIMEOUT if reply.kind == "timeout" else Status.RUNTIME_ERROR
        message = reply.message
        if reply.kind in FATAL_KINDS.values():
            message = f"{reply.kind.replace('_', ' ')}: {message}"
        return CallResult(status, message, reply.kind, stdout=stdout)
    why = str(reply.get("error", "unknown worker error"))[:2000]
    return CallResult(Status.RUNTIME_ERROR, why, "load", stdout=stdout)
