"""Build host shared libraries with gcc/g++, cached by content."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, evict, touch
from cudaperf_env.toolchain.confine import Confinement


@dataclass(frozen=True)
class BuildResult:
    """A built library, or why there is none.

    Attributes:
        ok: The library exists.
        library: Its path (in the build cache).
        log: Compiler diagnostics, sanitized and truncated.
        seconds: Wall time of the build (0 when cached).
        cached: Served from the cache.
        timed_out: The build hit its time limit.
        refused: Why the built code was refused by the build's ``check`` ("" if it was not).
    """

    ok: bool
    library: Path | None
    log: str
    seconds: float = 0.0
    cached: bool = False
    timed_out: bool = False
    refused: str = ""


def build_library(
    compiler: str,
    flags: list[str],
    source: str | Sequence[str],
    suffix: str,
    key_extra: str = "",
    libs: tuple[str, ...] = (),
    timeout_s: float = 60.0,
    memory_bytes: int = 4 << 30,
    cancel: threading.Event | None = None,
    confine: Confinement | None = None,
    visible: Sequence[Path] = (),
    check: Callable[[Path], str] | None = None,
    object_check: Callable[[Path], str] | None = None,
    objects: Sequence[Path] = (),
) -> BuildResult:
    """Compile ``source`` into a shared library with ``compiler flags``; reuse a cached build.

    Only successful builds that pass ``check`` are cached.

    Args:
        source: One translation unit, or several (compiled apart, linked together: e.g. the
            submission and the harness shim, so no macro of one reaches the other).
        confine: Compile confined (untrusted source): the compiler sees the toolchain, its
            private build folder and ``visible`` (read-only), nothing else.
        check: Called with the built library before it is cached (e.g. the symbol check,
            ``toolchain/symbols.py``); a non-empty answer refuses the build.
        object_check: Called with the compiled object of the first unit (kept by g++'s
            ``-save-temps=obj`` or nvcc's ``-keep``, :func:`kept_object`) before ``check`` (e.g. the
            load-time code check, ``toolchain/initcode.py``); a non-empty answer refuses the build.
        objects: Compiled objects linked in after the sources (:func:`compiled_object`'s, named by a
            digest of what made them); copied into the build folder, so a confined compiler reads them.
    """
    sources = [source] if isinstance(source, str) else list(source)
    checks = ("checked" if check else "") + ("+object" if object_check else "")
    key = digest("native/1", tools.version(compiler), *flags, *libs, key_extra, checks, *sources,
                 *(p.name for p in objects))  # fmt: skip
    library = cache_dir("builds") / f"{key}.so"
    if library.exists():
        touch(library)
        return BuildResult(True, library, "", 0.0, True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=cache_dir("tmp")))  # private: builds may race
    try:
        paths = [work / (f"source{suffix}" if k == 0 else f"source{k}{suffix}") for k in range(len(sources))]
        for path, text in zip(paths, sources, strict=True):
            path.write_text(text)
        for obj in objects:
            shutil.copyfile(obj, work / obj.name)
        out = work / "lib.so"
        keep, unit = kept_object(compiler, out, paths[0]) if object_check else ([], out)
        cmd = [compiler, *flags, *keep, *map(str, paths), *(str(work / o.name) for o in objects), "-o", str(out), *libs]
        result = tools.run_tool(cmd, work, timeout_s, memory_bytes, cancel=cancel, confine=confine, visible=visible)
        if result.ok and out.is_file() and not out.is_symlink():
            why = object_check(unit) if object_check else ""
            if not why and check:
                why = check(out)
            if why:
                return BuildResult(False, None, why, result.seconds, refused=why)
            adopt(out)
            out.replace(library)
            evict(library.parent)
            return BuildResult(True, library, result.output, result.seconds)
        log = result.output
        if result.timed_out:
            log = f"compilation did not finish within {timeout_s:g} s (killed)\n{log}"
        return BuildResult(False, None, log, result.seconds, timed_out=result.timed_out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compiled_object(compiler: str, flags: list[str], source: str, suffix: str, timeout_s: float = 60.0) -> Path | None:
    """``source`` compiled (``-c``) into an object, cached by content (never evicted: a few KB each); None
    when it does not compile. For a trusted unit linked into many libraries (the CUDA backend's call
    shim), so that each library compiles only its own unit: a new saxpy submission's nvcc build, median
    0.93 s against 1.78 with the shim compiled beside it (``benchmarks/gpu_build.py``, 2 cores, 2026-12-07)."""
    key = digest("object/1", tools.version(compiler), *flags, source)
    obj = cache_dir("objects") / f"{key}.o"
    if obj.is_file():
        return obj
    work = Path(tempfile.mkdtemp(prefix="object-", dir=cache_dir("tmp")))
    try:
        path = work / f"unit{suffix}"
        path.write_text(source)
        result = tools.run_tool([compiler, *flags, "-c", str(path), "-o", str(work / "unit.o")], work, timeout_s)
        if not result.ok or not (work / "unit.o").is_file():
            return None
        (work / "unit.o").replace(obj)  # whole or absent for a concurrent reader
        return obj
    finally:
        shutil.rmtree(work, ignore_errors=True)


def kept_object(compiler: str, out: Path, source: Path) -> tuple[list[str], Path]:
    """The flags that keep the compiled object of ``source`` in ``out``'s folder while ``compiler`` builds
    ``out``, and that object's path: nvcc's ``-keep`` leaves ``<unit>.o`` (its other intermediates
    too, removed with the folder), g++'s ``-save-temps=obj`` ``<out>-<unit>.o``."""
    if Path(compiler).name.startswith("nvcc"):
        return ["-keep", "-keep-dir", str(out.parent)], out.parent / f"{source.stem}.o"
    return ["-save-temps=obj"], out.parent / f"{out.name}-{source.stem}.o"


def adopt(path: Path) -> None:
    """Make a confined compiler's output the parent's (owner and mode) before it enters the cache."""
    if os.geteuid() == 0 and path.stat().st_uid != 0:
        os.chown(path, 0, 0)
    path.chmod(0o755)


def build_c_reference(source: str, timeout_s: float = 60.0) -> BuildResult:
    """Build a task's C reference (trusted) with gcc."""
    # -Bsymbolic: the entry binds to its own definition even when libc exports the same name
    flags = ["-std=c11", "-O2", "-fPIC", "-shared", "-Wl,-z,defs", "-Wl,-Bsymbolic"]
    return build_library(tools.host_compiler("gcc"), flags, source, ".c", libs=("-lm",), timeout_s=timeout_s)
