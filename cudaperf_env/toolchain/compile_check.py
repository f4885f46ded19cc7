"""The authoritative compile check: ``nvcc -cubin -Xptxas -v`` for the target GPU.

Runs on every backend (no GPU needed), so the CPU backend never accepts code that
nvcc rejects, and reports per-kernel resources (registers, shared memory,
spills, barriers) for feedback and structural features.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, evict, touch, write_atomic
from cudaperf_env.toolchain.confine import Confinement

DEFAULT_ARCH = "sm_90"
_FUNCTION = re.compile(r"Compiling entry function '([^']+)' for")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    name: str
    registers: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0


@dataclass(frozen=True)
class CompileReport:
    """Outcome of the compile check.

    Attributes:
        ok: nvcc accepted the code.
        log: Compiler diagnostics (errors and warnings), sanitized; ptxas info lines removed.
        kernels: Resources per kernel (demangled names).
        seconds: Wall time (0 when served from cache).
        cached: Whether the report came from the cache.
        timed_out: The compile hit its time limit.
        cubin: Path of the compiled cubin in the cache (None on failure), for SASS analysis.
        arch: The target architecture, e.g. ``sm_90``.
    """

    ok: bool
    log: str
    kernels: tuple[KernelResources, ...] = field(default_factory=tuple)
    seconds: float = 0.0
    cached: bool = False
    timed_out: bool = False
    cubin: str | None = None
    arch: str = DEFAULT_ARCH


def compile_check(
    source: str, arch: str = DEFAULT_ARCH, timeout_s: float = 60.0, cancel: threading.Event | None = None
) -> CompileReport:
    """Compile ``source`` (a complete .cu translation unit) to a cubin for ``arch``."""
    nvcc = tools.nvcc()
    flags = ["-arch=" + arch, "-cubin", "-Xptxas", "-v", "-std=c++17", "-O3", "-lineinfo"]
    key = digest("compile_check/3", tools.version(nvcc), *flags, source)  # /3: paths shortened
    entry = cache_dir("compile_check") / f"{key}.json"
    cubin = entry.with_suffix(".cubin")
    cached = _cached(entry, cubin)
    if cached is not None:
        return cached
    work = Path(tempfile.mkdtemp(prefix="check-", dir=cache_dir("tmp")))  # private: checks may race
    try:
        (work / "submission.cu").write_text(source)
        result = tools.run_tool([nvcc, *flags, "submission.cu", "-o", "out.cubin"], work, timeout_s, cancel=cancel,
                                confine=Confinement())  # fmt: skip
        out = work / "out.cubin"
        if result.ok and out.is_file() and not out.is_symlink():
            out.chmod(0o644)
            out.replace(cubin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log, kernels = parse_ptxas(result.output)
    if result.timed_out:
        log = f"compilation did not finish within {timeout_s:g} s (killed)\n" + log
    report = CompileReport(
        result.ok, log, kernels, result.seconds, False, result.timed_out, str(cubin) if result.ok else None, arch
    )
    if not result.timed_out:  # a time-out may be load or cancellation: not cached
        write_atomic(entry, json.dumps({**asdict(report), "cached": False}).encode())
        evict(entry.parent)
    return report


def _cached(entry: Path, cubin: Path) -> CompileReport | None:
    """The cached report, if it is there whole (a successful one with its cubin: the two are evicted apart)."""
    try:
        data = json.loads(entry.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if data.get("ok") and not cubin.exists():
        return None
    touch(entry)
    touch(cubin)
    kernels = tuple(KernelResources(**k) for k in data.pop("kernels"))
    return CompileReport(**{**data, "kernels": kernels, "cached": True, "seconds": 0.0})


def parse_ptxas(output: str) -> tuple[str, tuple[KernelResources, ...]]:
    """Split nvcc output into diagnostics and per-kernel resources."""
    kernels: list[dict] = []
    diagnostics = []
    for line in output.splitlines():
        if "ptxas info" not in line and not _PROPS.search(line):
            if line.strip():
                diagnostics.append(line)
            continue
        if m := _FUNCTION.search(line):
            kernels.append({"name": m.group(1)})
        elif kernels and (m := _PROPS.search(line)):
            kernels[-1].update(stack_bytes=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif kernels and (m := _USED.search(line)):
            kernels[-1].update(registers=int(m[1]), barriers=int(m[2] or 0), shared_bytes=int(m[3] or 0))
    names = demangle([k["name"] for k in kernels])
    resources = tuple(KernelResources(**{**k, "name": n}) for k, n in zip(kernels, names, strict=True))
    return "\n".join(diagnostics), resources


def demangle(names: list[str]) -> list[str]:
    """Demangle C++ symbol names with c++filt when available (else unchanged)."""
    return list(_demangled(tuple(names))) if names else names


@lru_cache(maxsize=1024)
def _demangled(names: tuple[str, ...]) -> tuple[str, ...]:
    """Memoized: most submissions name the same kernels, and c++filt is a process (6 ms) on the step's path."""
    filt = shutil.which("c++filt")
    if not filt:
        return names
    out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True, check=False)
    lines = tuple(out.stdout.splitlines())
    return lines if len(lines) == len(names) else names
