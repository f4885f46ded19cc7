"""The CPU backend's race check: one configuration run with the shadow-memory race detector.

The submission is built again with ThreadSanitizer's instrumentation feeding the runtime's own
detector (``include/cudaperf/racecheck.h``, CUDA's happens-before rules), loaded beside the
candidate in the same worker, and called once on the smallest configuration with one worker
thread. The same build checks every index into an array of known size (``include/cudaperf/bounds.h``)
and, through pointers too, accesses past the last static ``__shared__`` array (a zone linked in after
them, :data:`SHARED_REDZONE`): either ends the call with the fatal kind ``out_of_bounds``. The build
(:func:`build_race_check`) needs only the source: the evaluation starts it
beside the ordinary build and waits for it only when the race check runs (:func:`run_race_check`).
A race ends the call with the fatal kind ``race``; :func:`describe_race` turns the runtime's
report (argument positions, byte offsets, code offsets) into buffer names, element indices and
source lines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from cudaperf_env.backends.base import CallResult, Job
from cudaperf_env.backends.cpu.compiler import build_cpu
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.execute import call_once
from cudaperf_env.backends.harness import shim_first
from cudaperf_env.backends.sandbox import WorkerProcess
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Task
from cudaperf_env.toolchain.native import BuildResult

LIBRARY_NAME = "racecheck"
# A unit of its own linked after the submission's (no macro of the submission reaches it): its
# thread-local zone is laid out after every __shared__ array of the submission, template kernels'
# included, and the detector reports any access to it (racecheck.h, kSharedRedzoneBytes).
SHARED_REDZONE = ('extern "C" char* cudaperf_shared_redzone_at() {\n'
                  "  static thread_local char zone[4096];\n  return zone;\n}\n")  # fmt: skip
_ARGUMENT = re.compile(r"argument #(\d+) at byte (-?\d+)")
_CODE = re.compile(r" \(code offset (0x[0-9a-f]+)\)")


def build_race_check(
    task: Task, code: str, timeout_s: float, cancel: threading.Event | None = None, linked: bool | None = None
) -> BuildResult | None:
    """The submission's instrumented build; None when the CPU backend refuses its source (the ordinary
    build says why). Cancelled with ``cancel`` (the evaluation ended before its race check); ``linked``
    as for :func:`~cudaperf_env.backends.cpu.compiler.build_cpu`."""
    passed = prepass(code, entry=task.entry)
    if passed.rejections:
        return None
    units = [shim_first(task, passed.source, "cuda"), SHARED_REDZONE]
    return build_cpu(units, timeout_s, cancel, racecheck=True, linked=linked)


def run_race_check(
    built: Path | None, task: Task, job: Job, workdir: Path, worker: WorkerProcess, timeout_s: float
) -> CallResult | None:
    """Run ``job`` once under the race detector in ``worker`` with ``built``, the library
    :func:`build_race_check` made; None when there is none (the instrumented build failed).

    The caller writes the kernel resources file with ``racecheck 1`` first
    (:func:`cudaperf_env.backends.launch_limits.write_resources`).
    """
    if built is None:
        return None
    library = workdir / "racecheck.so"  # the worker's user may read its directory only
    shutil.copyfile(built, library)
    library.chmod(0o755)
    load = {"op": "load", "lib": str(library), "name": LIBRARY_NAME, "threads": 1, "deterministic": True,
            "memory_bytes": 8 << 30, "uid": 65534 if os.geteuid() == 0 else None}  # fmt: skip
    reply = worker.request(load, timeout_s)
    if not isinstance(reply, dict) or not reply.get("ok"):
        return None
    result = call_once(worker, task, job, workdir / "buffers-racecheck.bin", timeout_s, lib=LIBRARY_NAME)
    if result.crash_kind == "race" or result.message.startswith("race"):
        return CallResult(Status.RUNTIME_ERROR, describe_race(result.message, task, library), "race")
    if result.crash_kind == "out_of_bounds":  # past the last __shared__ array: code offsets to lines
        return CallResult(Status.RUNTIME_ERROR, describe_race(result.message, task, library), "out_of_bounds")
    return result


def describe_race(message: str, task: Task, library: Path | None = None) -> str:
    """The runtime's race report with buffer names, element indices and (where known) source lines."""
    args = task.args

    def argument(m: re.Match[str]) -> str:
        index, byte = int(m.group(1)), int(m.group(2))
        if 0 <= index < len(args) and args[index].is_buffer:
            size = args[index].dtype.itemsize
            return f"`{args[index].name}[{byte // size}]`"
        return m.group(0)

    text = _ARGUMENT.sub(argument, message)
    offsets = _CODE.findall(text)
    lines = _source_lines(library, offsets) if library is not None and offsets else {}
    return _CODE.sub(lambda m: f" ({lines[m.group(1)]})" if lines.get(m.group(1)) else "", text)


def _source_lines(library: Path, offsets: list[str]) -> dict[str, str]:
    """``{offset: "line N"}`` from the race-check library's line table (addr2line)."""
    tool = shutil.which("addr2line")
    if tool is None:
        return {}
    try:
        out = subprocess.run([tool, "-e", str(library), *offsets], capture_output=True, text=True, timeout=10,
                             check=False).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for offset, where in zip(offsets, out, strict=False):
        name, _, line = where.rpartition(":")
        line = line.split()[0] if line else ""
        if name.endswith("submission.cu") and line.isdigit():
            found[offset] = f"line {line}"
    return found
