"""Build a pre-passed submission into a shared library with g++ and the CPU runtime.

Fixed flags (never the user's) and builds cached by content. The runtime's out-of-line code
(launch, block scheduler, fatal reports, set-up) is compiled once per runtime version and
compiler, into a *runtime object* linked into every submission, beside a precompiled header
that leaves only its declarations in the submission (``CUDAPERF_PREBUILT_RUNTIME``, see
``include/cudaperf/config.h``): a submission's g++ then compiles little more than the
submission itself. The first build on a cold cache is header-only (the fastest first
build); one detached, low-priority process then prebuilds both files (:func:`prebuild`),
and every later build links them, waiting for them while the prebuild is under way.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, write_atomic
from cudaperf_env.toolchain.native import BuildResult, build_library

INCLUDE_DIR = Path(__file__).parent / "include"
SHIM_DIR = INCLUDE_DIR / "shim"
RUNTIME_HEADER = "cudaperf/cuda_cpu.h"
# Identical for the precompiled header, the runtime object and every build, or g++ ignores
# the PCH (and the object would not match the submission's view of the runtime).
BASE_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-pthread", "-w", "-fno-strict-aliasing", "-fstack-clash-protection")
# The macro is defined inside the precompiled header, not before it (a macro defined before a
# PCH's include makes g++ ignore the PCH).
PCH_WRAPPER = f"#define CUDAPERF_PREBUILT_RUNTIME 1\n#include <{RUNTIME_HEADER}>\n"
RUNTIME_OBJECT_SOURCE = f"#define CUDAPERF_RUNTIME_OBJECT 1\n#include <{RUNTIME_HEADER}>\n"
LINK_FLAGS = ("-shared", "-Wl,-z,defs", "-Wl,-Bsymbolic")  # the entry binds to its own definition
PREBUILD_TIMEOUT_S = 600.0
PREBUILD_START_GRACE_S = 15.0  # a detached builder takes the lock within this time of its start


@lru_cache(maxsize=1)
def runtime_version() -> str:
    """Hash of every runtime header: part of each cache key."""
    files = sorted(p for p in INCLUDE_DIR.rglob("*") if p.is_file())
    return digest(*(f"{p.relative_to(INCLUDE_DIR)}\0".encode() + p.read_bytes() for p in files))[:16]


def include_flags() -> list[str]:
    return ["-I", str(SHIM_DIR), "-I", str(INCLUDE_DIR)]


@dataclass(frozen=True)
class PrebuiltRuntime:
    """The prebuilt runtime of one compiler and runtime version (its files may not exist yet).

    Attributes:
        folder: Its cache folder, named by a digest of the compiler's version, the runtime
            headers, the flags and the two generated sources.
    """

    folder: Path

    @property
    def header(self) -> Path:
        """Force-included into submissions; its ``.gch`` lies beside it."""
        return self.folder / "cudaperf_pch.h"

    @property
    def gch(self) -> Path:
        return self.folder / "cudaperf_pch.h.gch"

    @property
    def runtime_object(self) -> Path:
        return self.folder / "cudaperf_runtime.o"

    def ready(self) -> bool:
        """Whether submissions can be linked with it (every file written whole)."""
        return self.gch.exists() and self.runtime_object.exists() and self.header.exists()


@lru_cache(maxsize=1)
def _prebuilt_key() -> str:
    compiler = tools.host_compiler("g++")
    parts = (tools.version(compiler), runtime_version(), *BASE_FLAGS, PCH_WRAPPER, RUNTIME_OBJECT_SOURCE)
    return digest("prebuilt-runtime/1", *parts)[:16]


def prebuilt_runtime() -> PrebuiltRuntime:
    """Where the prebuilt runtime for this compiler, runtime and cache directory lives."""
    return PrebuiltRuntime(cache_dir("runtime", _prebuilt_key()))


def prebuild(timeout_s: float = PREBUILD_TIMEOUT_S) -> bool:
    """Build the precompiled header and the runtime object where missing; whether both exist.

    Safe from any number of threads and processes at once: one holds the folder's lock and
    builds (both compilers in parallel), the others return False at once; every file appears
    whole (written aside, then renamed). A failure is logged to ``prebuild.log`` in the folder
    (builds then stay header-only; delete the folder to try again).
    """
    runtime = prebuilt_runtime()
    if runtime.ready():
        return True
    with open(runtime.folder / "lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another process is building it
        if not runtime.ready():
            _build_prebuilt(runtime, timeout_s)
    return runtime.ready()


def _build_prebuilt(runtime: PrebuiltRuntime, timeout_s: float) -> None:
    compiler = tools.host_compiler("g++")
    common = [compiler, *BASE_FLAGS, *include_flags()]
    if not runtime.header.exists() or runtime.header.read_text() != PCH_WRAPPER:
        write_atomic(runtime.header, PCH_WRAPPER.encode())
    source = runtime.folder / "cudaperf_runtime.cpp"
    write_atomic(source, RUNTIME_OBJECT_SOURCE.encode())
    jobs = []
    if not runtime.gch.exists():
        jobs.append(([*common, "-x", "c++-header", str(runtime.header)], runtime.gch))
    if not runtime.runtime_object.exists():
        jobs.append(([*common, "-c", str(source)], runtime.runtime_object))
    with ThreadPoolExecutor(max_workers=2) as pool:
        logs = list(pool.map(lambda job: _compile_to(job[0], job[1], timeout_s), jobs))
    failures = [log for log in logs if log]
    if failures:
        write_atomic(runtime.folder / "prebuild.log", "\n\n".join(failures).encode())


def _compile_to(command: list[str], target: Path, timeout_s: float) -> str:
    """Run ``command -o <temporary>`` and rename the output to ``target``; the log on failure."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    os.close(fd)
    try:
        result = tools.run_tool([*command, "-o", tmp], target.parent, timeout_s)
        if result.ok and os.path.getsize(tmp) > 0:
            os.replace(tmp, target)
            return ""
        return f"{shlex.join(command)}\n{result.output}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _prebuild_pending(runtime: PrebuiltRuntime) -> bool:
    """Whether a prebuild of ``runtime`` is under way in some process (or was started just now)."""
    if (runtime.folder / "prebuild.log").exists():
        return False
    with open(runtime.folder / "lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    try:  # a detached builder takes the lock only once its interpreter has started
        return time.time() - (runtime.folder / "prebuild.started").stat().st_mtime < PREBUILD_START_GRACE_S
    except FileNotFoundError:
        return False


def _wait_for_prebuild(runtime: PrebuiltRuntime, limit_s: float, cancel: threading.Event | None) -> bool:
    """Wait while a prebuild is under way; whether the runtime is ready."""
    deadline = time.monotonic() + limit_s
    while not runtime.ready() and _prebuild_pending(runtime) and time.monotonic() < deadline:
        if cancel is not None and cancel.is_set():
            break
        time.sleep(0.05)
    return runtime.ready()


@lru_cache(maxsize=16)
def _start_prebuild(folder: str) -> None:
    """Run :func:`prebuild` in a detached process at the lowest priority, once per folder.

    Detached (the shell exits at once, the builder is nobody's child) so that it finishes
    even when this process exits right after its first step; niced so that it takes only
    the CPU time the evaluations leave idle.
    """
    Path(folder, "prebuild.started").touch()
    code = "from cudaperf_env.backends.cpu.compiler import prebuild; prebuild()"
    script = 'nice -n 19 "$0" -c "$1" </dev/null >/dev/null 2>&1 &'
    with contextlib.suppress(OSError):
        subprocess.run(["sh", "-c", script, sys.executable, code], check=False, timeout=30,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def build_cpu(translation_unit: str, timeout_s: float = 60.0, cancel: threading.Event | None = None) -> BuildResult:
    """Compile a complete translation unit (pre-passed code + harness shim) for the CPU runtime.

    Links the prebuilt runtime when it is ready, waiting for it while a prebuild is under way
    (in any process: a header-only build would cost 1.6 CPU-s and slow the prebuild down).
    Else (the first build on a cold cache) compiles the whole runtime into this library
    (header-only), then starts :func:`prebuild` in the background. Both give the same
    behaviour; the cache key (the flags name the runtime's files) keeps their builds apart.
    """
    runtime = prebuilt_runtime()
    ready = runtime.ready() or _wait_for_prebuild(runtime, timeout_s, cancel)
    linked = ["-include", str(runtime.header), str(runtime.runtime_object)] if ready else ["-include", RUNTIME_HEADER]
    flags = [*BASE_FLAGS, *include_flags(), *linked, *LINK_FLAGS, "-x", "c++"]
    result = build_library(
        tools.host_compiler("g++"),
        flags,
        translation_unit,
        ".cpp",
        key_extra=runtime_version(),
        libs=("-lm",),
        timeout_s=timeout_s,
        cancel=cancel,
    )
    # Started after this build, which it would slow down even niced (2 cores, measured). Not
    # again after a failure (prebuild.log): the same compiler and headers would fail the same way.
    if not ready and not (runtime.folder / "prebuild.log").exists():
        _start_prebuild(str(runtime.folder))
    return result
