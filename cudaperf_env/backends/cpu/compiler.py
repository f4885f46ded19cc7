"""Build a pre-passed submission into a shared library with g++ and the CPU runtime.

Fixed flags (never the user's) and builds cached by content. The runtime's out-of-line code
(launch, block scheduler, fatal reports, set-up) is compiled once per runtime version and
compiler, into a *runtime object* linked into every submission, beside a precompiled header
that leaves only its declarations in the submission (``CUDAPERF_PREBUILT_RUNTIME``, see
``include/cudaperf/config.h``): a submission's g++ then compiles little more than the
submission itself. The race-check build (``racecheck``) shares both. The CPU backend builds
them first on a cold cache (:func:`ensure_prebuilt`); other callers of :func:`build_cpu` on a
cold cache build header-only, the first of them starting one detached, low-priority process
that prebuilds both files (:func:`prebuild`), and every build after links them.
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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, write_atomic
from cudaperf_env.toolchain.confine import Confinement
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
# The race-check build (include/cudaperf/racecheck.h): ThreadSanitizer's instrumentation calls the
# runtime's own detector, which defines every __tsan_ entry point: -static-libtsan pulls nothing in
# (nor -static-libubsan: bounds.h defines the bounds check's handlers).
# -g1: line tables, so that a race names the source lines. -U__SANITIZE_THREAD__: the headers are
# read as in the ordinary build (instrumentation is applied to the code, whatever the macros), so
# both builds share one precompiled header (g++ refuses a PCH where that macro differs).
# -fsanitize=bounds: every index into an array of known size checked (include/cudaperf/bounds.h).
# -fno-gnu-unique: a template kernel's __shared__ arrays (function statics of a template) would be
# STB_GNU_UNIQUE symbols, which the dynamic linker binds process-wide to the first library that
# defines them: the candidate loaded before in the same worker, whose memory the detector does not watch.
RACECHECK_FLAGS = ("-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-g1", "-U__SANITIZE_THREAD__",
                   "-fsanitize=bounds", "-fno-sanitize-recover=bounds", "-fno-gnu-unique")  # fmt: skip
RACECHECK_LINK_FLAGS = ("-static-libtsan", "-static-libubsan")
# The precompiled header carries line tables for the race-check build's -g1; builds without -g use
# it all the same (and emit no debug information).
PCH_FLAGS = ("-g1",)
PREBUILD_TIMEOUT_S = 600.0
# Builds whose unit is checked (``object_check``): every variable in a section of its own, so that
# a relocation to it names it (toolchain/initcode.py).
CHECKED_FLAGS = ("-fdata-sections",)
# The host arena (include/cudaperf/host_arena.h): the submission's references to the allocator go to
# the runtime's __wrap_<symbol> (linker --wrap), the runtime object's own are renamed __real_<symbol>
# (objcopy, once per prebuild), which the linker binds to the real allocator.
ARENA_SYMBOLS = (
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
    "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
)  # fmt: skip
ARENA_LINK_FLAGS = tuple(f"-Wl,--wrap={name}" for name in ARENA_SYMBOLS)


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
    parts = (tools.version(compiler), runtime_version(), *BASE_FLAGS, *PCH_FLAGS, PCH_WRAPPER, RUNTIME_OBJECT_SOURCE)
    return digest("prebuilt-runtime/4", *parts, *ARENA_SYMBOLS)[:16]  # /4: the object's allocator calls renamed


def prebuilt_runtime() -> PrebuiltRuntime:
    """Where the prebuilt runtime for this compiler, runtime and cache directory lives."""
    return PrebuiltRuntime(cache_dir("runtime", _prebuilt_key()))


def prebuild(timeout_s: float = PREBUILD_TIMEOUT_S, wait: bool = False) -> bool:
    """Build the precompiled header and the runtime object where missing; whether both exist.

    Safe from any number of threads and processes at once: one holds the folder's lock and
    builds (the two files at once, one compiler each), the others return False at once, or with
    ``wait`` wait for it to finish; every file appears whole (written aside, then renamed). A
    failure is logged to ``prebuild.log`` in the folder (builds then stay header-only; delete the
    folder to try again).
    """
    runtime = prebuilt_runtime()
    return _prebuild(runtime, timeout_s, wait) and runtime.ready()


def ensure_prebuilt(timeout_s: float = PREBUILD_TIMEOUT_S) -> bool:
    """Whether builds can link the prebuilt runtime, building it first (and waiting for whoever builds it) on a
    cold cache: the mode the CPU backend builds submissions in.

    A step on a cold cache then costs the runtime's two files (built at once: ~3 CPU-s, the
    precompiled header) and small builds; header-only it would compile the runtime into each of
    its builds (submission, race check, symbol-check baseline) and leave the next steps to do the
    same until a background prebuild caught up (docs/cpu-backend.md, step latency). False only
    where the prebuild failed (``prebuild.log``): builds are then header-only.
    """
    runtime = prebuilt_runtime()
    if not runtime.ready() and not (runtime.folder / "prebuild.log").exists():
        prebuild(timeout_s, wait=True)
    return runtime.linkable()


def _prebuild(runtime: PrebuiltRuntime, timeout_s: float, wait: bool = False) -> bool:
    """Under the folder's lock, build the runtime object and the PCH where missing; False when another
    thread or process holds the lock (and not ``wait``), else whether both exist."""
    with open(runtime.folder / "lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        if runtime.ready():  # built by the holder waited for
            return True
        compiler = tools.host_compiler("g++")
        common = [compiler, *BASE_FLAGS, *include_flags()]
        if not runtime.header.exists() or runtime.header.read_text() != PCH_WRAPPER:
            write_atomic(runtime.header, PCH_WRAPPER.encode())
        source = runtime.folder / "cudaperf_runtime.cpp"
        if not source.exists():
            write_atomic(source, RUNTIME_OBJECT_SOURCE.encode())
        # The longer first (the object: 0.9 CPU-s, the PCH 0.5 since config.h pre-includes few standard
        # headers): on a cold step nvcc holds one compiler slot, and builds need both files.
        jobs = []
        after: list[str] = []
        if not runtime.runtime_object.exists():
            jobs.append(([*common, "-c", str(source)], runtime.runtime_object))
            objcopy = shutil.which("objcopy") or "objcopy"  # binutils, beside g++'s ld
            after = [objcopy, *(f"--redefine-sym={name}=__real_{name}" for name in ARENA_SYMBOLS)]
        if not runtime.gch.exists():
            jobs.append(([*common, *PCH_FLAGS, "-x", "c++-header", str(runtime.header)], runtime.gch))
        with ThreadPoolExecutor(max_workers=2) as pool:
            logs = list(pool.map(lambda job: _compile_to(job[0], job[1], timeout_s,
                                                         after if job[1] == runtime.runtime_object else None), jobs))
        failures = [log for log in logs if log]
        if failures:
            write_atomic(runtime.folder / "prebuild.log", "\n\n".join(failures).encode())
        return not failures


def _compile_to(command: list[str], target: Path, timeout_s: float, after: list[str] | None = None) -> str:
    """Run ``command -o <temporary>`` (then ``after <temporary>``, when given) and rename the output to
    ``target``; the log on failure."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    os.close(fd)
    try:
        result = tools.run_tool([*command, "-o", tmp], target.parent, timeout_s)
        if result.ok and after:
            command = after
            result = tools.run_tool([*after, tmp], target.parent, timeout_s)
        if result.ok and os.path.getsize(tmp) > 0:
            os.chmod(tmp, 0o644)  # confined builds (users of their own) read it
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


def compile_unit(source: str, linked: bool, timeout_s: float = 300.0, keep_inline: bool = False) -> bytes | None:
    """The object a submission's unit ``source`` (trusted: e.g. a baseline) compiles to in mode ``linked``,
    with the flags of :func:`build_cpu`'s checked builds; None when it does not compile.

    ``keep_inline`` emits every inline function the headers define (``-fkeep-inline-functions``, which
    a precompiled header ignores: the header is then read as text, ~9 CPU-s).
    """
    runtime = prebuilt_runtime()
    header = str(runtime.header) if linked and not keep_inline else RUNTIME_HEADER
    extra = ["-fkeep-inline-functions"] + (["-DCUDAPERF_PREBUILT_RUNTIME=1"] if linked else []) if keep_inline else []
    with tempfile.TemporaryDirectory(prefix="unit-", dir=cache_dir("tmp")) as folder:
        path, obj = Path(folder) / "source.cpp", Path(folder) / "source.o"
        path.write_text(source)
        cmd = [tools.host_compiler("g++"), *BASE_FLAGS, *CHECKED_FLAGS, *extra, *include_flags(), "-include", header,
               "-x", "c++", "-c", str(path), "-o", str(obj)]  # fmt: skip
        result = tools.run_tool(cmd, folder, timeout_s)
        return obj.read_bytes() if result.ok and obj.is_file() else None


def build_cpu(translation_unit: str | Sequence[str], timeout_s: float = 60.0, cancel: threading.Event | None = None,
              check: Callable[[Path], str] | None = None, racecheck: bool = False,
              linked: bool | None = None,
              object_check: Callable[[Path], str] | None = None) -> BuildResult:  # fmt: skip
    """Compile a complete translation unit (pre-passed code + harness shim), or several, for the CPU runtime.

    Links the prebuilt runtime object once it exists (with its precompiled header once that
    exists too: the same build, one cache entry). Before that (a cold cache, or while the
    prebuild runs) the whole runtime is compiled into this library (header-only): the least
    CPU time a build can take without it, the same behaviour, a separate cache entry. The
    first such build starts :func:`prebuild` in a detached, low-priority process. The compiler
    runs confined; ``check`` and ``object_check`` (see ``toolchain/native.build_library``; the latter
    with every variable in a section of its own, so that a reference names it) may refuse what it built.
    ``racecheck`` adds :data:`RACECHECK_FLAGS` (a separate cache entry). ``linked`` fixes the mode
    (True: link the prebuilt runtime, which must be :meth:`~PrebuiltRuntime.linkable`; False:
    header-only); None takes the prebuilt runtime where it is linkable.
    """
    compiler = tools.host_compiler("g++")
    runtime = prebuilt_runtime()
    if runtime.linkable() if linked is None else linked:
        runtime_flags = ["-include", str(runtime.header), str(runtime.runtime_object), *ARENA_LINK_FLAGS]
    else:
        runtime_flags = ["-include", RUNTIME_HEADER]
    race = [*RACECHECK_FLAGS, *RACECHECK_LINK_FLAGS] if racecheck else []
    sections = list(CHECKED_FLAGS) if object_check else []
    flags = [*BASE_FLAGS, *sections, *race, *include_flags(), *runtime_flags, *LINK_FLAGS, "-x", "c++"]
    result = build_library(compiler, flags, translation_unit, ".cpp", runtime_version(), ("-lm",), timeout_s,
                           cancel=cancel, confine=Confinement(), visible=(runtime.folder,), check=check,
                           object_check=object_check)  # fmt: skip
    # Started after this build, which it would slow down even niced (2 cores, measured). Not
    # again after a failure (prebuild.log): the same compiler and headers would fail the same way.
    if not runtime.ready() and not (runtime.folder / "prebuild.log").exists():
        _start_prebuild(str(runtime.folder))
    return result
