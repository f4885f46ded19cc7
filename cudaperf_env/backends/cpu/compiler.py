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
import shutil
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
from cudaperf_env.toolchain.native import BuildResult, build_library, library_path

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
        """Whether all of it exists (every file is written whole)."""
        return self.gch.exists() and self.linkable()

    def linkable(self) -> bool:
        """Whether submissions can be linked with it: the runtime object and the header exist.

        Without its ``.gch`` (still being built) g++ reads the header as text: the same
        declarations, an equivalent build, 1 CPU-s instead of 0.2 (saxpy).
        """
        return self.runtime_object.exists() and self.header.exists()


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
    return _prebuild(runtime, timeout_s, with_pch=True) and runtime.ready()


def _prebuild(runtime: PrebuiltRuntime, timeout_s: float, with_pch: bool) -> bool:
    """Under the folder's lock, build the runtime object (and the PCH) where missing; False when
    another thread or process holds the lock, else whether the files were built."""
    with open(runtime.folder / "lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        compiler = tools.host_compiler("g++")
        common = [compiler, *BASE_FLAGS, *include_flags()]
        if not runtime.header.exists() or runtime.header.read_text() != PCH_WRAPPER:
            write_atomic(runtime.header, PCH_WRAPPER.encode())
        source = runtime.folder / "cudaperf_runtime.cpp"
        if not source.exists():
            write_atomic(source, RUNTIME_OBJECT_SOURCE.encode())
        jobs = []
        if with_pch and not runtime.gch.exists():
            jobs.append(([*common, "-x", "c++-header", str(runtime.header)], runtime.gch))
        if not runtime.runtime_object.exists():
            jobs.append(([*common, "-c", str(source)], runtime.runtime_object))
        with ThreadPoolExecutor(max_workers=2) as pool:
            logs = list(pool.map(lambda job: _compile_to(job[0], job[1], timeout_s), jobs))
        failures = [log for log in logs if log]
        if failures:
            write_atomic(runtime.folder / "prebuild.log", "\n\n".join(failures).encode())
        return not failures


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


@lru_cache(maxsize=16)
def _start_prebuild(folder: str) -> None:
    """Run :func:`prebuild` in a detached process at the lowest priority, once per folder.

    Detached (the shell exits at once, the builder is nobody's child) so that it finishes
    even when this process exits right after its first step; niced so that it takes only
    the CPU time the evaluations leave idle.
    """
    del folder  # the cache key: one start per cache folder and process
    code = "from cudaperf_env.backends.cpu.compiler import prebuild; prebuild()"
    script = 'nice -n 19 "$0" -c "$1" </dev/null >/dev/null 2>&1 &'
    with contextlib.suppress(OSError):
        subprocess.run(["sh", "-c", script, sys.executable, code], check=False, timeout=30,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def build_cpu(translation_unit: str, timeout_s: float = 60.0, cancel: threading.Event | None = None) -> BuildResult:
    """Compile a complete translation unit (pre-passed code + harness shim) for the CPU runtime.

    Links the prebuilt runtime object (and uses its precompiled header once that exists). On a
    cold cache the runtime object is built beside this build's own compile, then both are
    linked; the precompiled header follows in a detached, low-priority process. Should the
    runtime object fail to build, the whole runtime is compiled into this library
    (header-only): the same behaviour, a separate cache entry.
    """
    compiler = tools.host_compiler("g++")
    runtime = prebuilt_runtime()
    flags = [*BASE_FLAGS, *include_flags(), "-include", str(runtime.header), str(runtime.runtime_object)]
    flags += [*LINK_FLAGS, "-x", "c++"]

    def build(flags: list[str]) -> BuildResult:
        return build_library(compiler, flags, translation_unit, ".cpp", runtime_version(), ("-lm",), timeout_s,
                             cancel=cancel)  # fmt: skip

    if runtime.linkable() or library_path(compiler, flags, translation_unit, runtime_version(), ("-lm",)).exists():
        result = build(flags)
    elif (cold := _build_cold(runtime, translation_unit, flags, timeout_s, cancel)) is not None:
        result = cold
    else:
        result = build([*BASE_FLAGS, *include_flags(), "-include", RUNTIME_HEADER, *LINK_FLAGS, "-x", "c++"])
    if not runtime.ready() and runtime.linkable() and not (runtime.folder / "prebuild.log").exists():
        _start_prebuild(str(runtime.folder))  # after this build, which it would slow down (2 cores)
    return result


def _build_cold(
    runtime: PrebuiltRuntime, translation_unit: str, flags: list[str], timeout_s: float, cancel: threading.Event | None
) -> BuildResult | None:
    """Compile the submission while the runtime object is built (here, or by whoever holds the
    lock), then link the two into the library :func:`build_library` would make of ``flags``;
    None when the runtime object could not be built."""
    compiler = tools.host_compiler("g++")
    library = library_path(compiler, flags, translation_unit, runtime_version(), ("-lm",))
    if not runtime.header.exists():  # before the compile that includes it (the object's thread writes it too)
        write_atomic(runtime.header, PCH_WRAPPER.encode())
    with ThreadPoolExecutor(max_workers=1) as pool:
        made = pool.submit(_runtime_object, runtime, timeout_s, cancel)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=cache_dir("tmp")))  # private: builds may race
        try:
            source = work / "source.cpp"
            source.write_text(translation_unit)
            compile_flags = [f for f in flags if f not in (*LINK_FLAGS, str(runtime.runtime_object))]
            compiled = tools.run_tool([compiler, *compile_flags, "-c", str(source), "-o", "sub.o"], work,
                                      timeout_s, 4 << 30, cancel=cancel)  # fmt: skip
            if not made.result():
                return None
            if not compiled.ok:
                log = compiled.output
                if compiled.timed_out:
                    log = f"compilation did not finish within {timeout_s:g} s (killed)\n{log}"
                return BuildResult(False, None, log, compiled.seconds, timed_out=compiled.timed_out)
            # The order of the one-command build: the runtime object, then the submission's.
            link = [compiler, *BASE_FLAGS, *LINK_FLAGS, str(runtime.runtime_object), "sub.o", "-o", "lib.so", "-lm"]
            linked = tools.run_tool(link, work, timeout_s, 4 << 30, cancel=cancel)
            if not linked.ok:
                return BuildResult(False, None, compiled.output + linked.output, compiled.seconds + linked.seconds)
            (work / "lib.so").replace(library)
            return BuildResult(True, library, compiled.output, compiled.seconds + linked.seconds)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _runtime_object(runtime: PrebuiltRuntime, timeout_s: float, cancel: threading.Event | None) -> bool:
    """Build the runtime object, or wait while another thread or process builds it; whether it exists."""
    deadline = time.monotonic() + timeout_s
    while not runtime.linkable() and time.monotonic() < deadline and not (cancel is not None and cancel.is_set()):
        if (runtime.folder / "prebuild.log").exists():
            break
        if not _prebuild(runtime, timeout_s, with_pch=False):
            time.sleep(0.05)  # another holds the lock: it is building the object
    return runtime.linkable()
