"""Locate the compilers and run them with time, memory and output limits."""

from __future__ import annotations

import contextlib
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from cudaperf_env.errors import ToolchainError
from cudaperf_env.text import sanitize, truncate
from cudaperf_env.toolchain.confine import Confinement, chown_for, namespace_init

COMPILER_ENV = {"LC_ALL": "C", "LANG": "C"}  # ASCII diagnostics, no curly quotes
# Compilers running at once in this process, whatever the number of environments or
# evaluation threads: more than the cores only slows every build down.
COMPILE_JOBS = int(os.environ.get("CUDAPERF_COMPILE_JOBS", "0")) or os.cpu_count() or 1
_compile_slots = threading.BoundedSemaphore(COMPILE_JOBS)


@dataclass(frozen=True)
class ToolResult:
    """What a compiler run produced.

    Attributes:
        returncode: Exit status (negative for a signal; -9 after a time-out kill).
        output: stdout and stderr together, sanitized and truncated.
        seconds: Wall time.
        timed_out: Whether the time limit killed it.
    """

    returncode: int
    output: str
    seconds: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


@lru_cache(maxsize=1)
def nvcc() -> str:
    """Path of nvcc: ``$CUDAPERF_NVCC``, the pip-installed ``nvidia-cuda-nvcc`` wheel, or PATH."""
    candidates = [os.environ.get("CUDAPERF_NVCC", "")]
    try:
        import nvidia  # the namespace package of the nvidia-* wheels

        for root in nvidia.__path__:
            candidates += sorted(str(p) for p in Path(root).glob("cu*/bin/nvcc"))
    except ImportError:
        pass
    candidates.append(shutil.which("nvcc") or "")
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise ToolchainError(
        "nvcc not found: install the project (`pip install -e .` brings the nvidia-cuda-nvcc "
        "wheel) or set CUDAPERF_NVCC to an nvcc executable."
    )


@lru_cache(maxsize=4)
def host_compiler(name: str = "g++") -> str:
    """Path of the host C/C++ compiler (``$CUDAPERF_CXX`` / ``$CUDAPERF_CC`` override)."""
    override = os.environ.get("CUDAPERF_CXX" if name == "g++" else "CUDAPERF_CC")
    path = override or shutil.which(name)
    if not path:
        raise ToolchainError(f"{name} not found: install it (Debian: apt-get install g++).")
    return path


@lru_cache(maxsize=8)
def version(path: str) -> str:
    """First line of ``path --version`` (part of every build cache key)."""
    out = subprocess.run([path, "--version"], capture_output=True, text=True, env=_env(), check=False)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return lines[-1] if "nvcc" in path and lines else (lines[0] if lines else "unknown")


def release(version_line: str) -> tuple[int, int] | None:
    """``(major, minor)`` from a line of ``nvcc --version`` (``Build cuda_13.5.r13.5/...``, ``release 13.5``)."""
    m = re.search(r"(?:cuda_|release |V)(\d+)\.(\d+)", version_line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def runtime_release(header: str) -> tuple[int, int] | None:
    """``(major, minor)`` from ``#define CUDART_VERSION 13050`` in ``cuda_runtime_api.h`` text (pure)."""
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", header)
    return (int(m.group(1)) // 1000, int(m.group(1)) % 1000 // 10) if m else None


@lru_cache(maxsize=8)
def check_toolkit(nvcc_path: str) -> None:
    """Raise :class:`ToolchainError` when nvcc and the runtime headers it sees are of different releases.

    nvcc rejects such a pair in every submission that includes a CCCL header (cooperative
    groups among them) with "CUDA compiler and CUDA toolkit headers are incompatible".
    """
    header = Path(nvcc_path).resolve().parent.parent / "include" / "cuda_runtime_api.h"
    if not header.is_file():
        return  # a system toolkit laid out differently: nvcc finds its own headers
    compiler, runtime = release(version(nvcc_path)), runtime_release(header.read_text(errors="replace"))
    if compiler and runtime and compiler != runtime:
        c, r = ".".join(map(str, compiler)), ".".join(map(str, runtime))
        raise ToolchainError(
            f"nvcc {c} ({nvcc_path}) and the CUDA runtime headers {r} ({header}) are from different releases, "
            f"so nvcc would refuse every CCCL header. Install matching wheels, e.g. "
            f"`pip install 'nvidia-cuda-runtime=={c}.*'` (or `pip install 'nvidia-cuda-nvcc=={r}.*' "
            f"'nvidia-nvvm=={r}.*' 'nvidia-cuda-crt=={r}.*'` if another package pins the runtime), "
            "or point CUDAPERF_NVCC at a complete toolkit."
        )


def run_tool(
    cmd: list[str],
    cwd: str | Path,
    timeout_s: float,
    memory_bytes: int = 8 << 30,
    max_output_chars: int = 8000,
    cancel: threading.Event | None = None,
    confine: Confinement | None = None,
    visible: Sequence[str | Path] = (),
) -> ToolResult:
    """Run a compiler in its own process group with limits; never raises on its failure.

    Setting ``cancel`` kills the compiler early (its result is then a time-out). At most
    ``COMPILE_JOBS`` compilers run at once; waiting for a slot does not count against
    ``timeout_s``. Temporary files go to ``cwd`` (``TMPDIR``), which the caller removes.

    Args:
        confine: Run it confined (untrusted source: see ``toolchain/confine.py``): it sees the
            toolchain, ``cwd`` (writable, given to its user) and ``visible`` (read-only) only.
    """
    while not _compile_slots.acquire(timeout=0.05):
        if cancel is not None and cancel.is_set():
            return ToolResult(-9, "cancelled while waiting for a compiler slot", 0.0, True)
    try:
        if confine is not None:
            limits = replace(confine.limits, memory_bytes=memory_bytes, file_bytes=512 << 20,
                             cpu_seconds=max(1, math.ceil(timeout_s)) * 2)  # fmt: skip
            confined = replace(confine, limits=limits).wrap(cmd, cwd=cwd, ro=visible)
            chown_for(confined.uid, Path(cwd))
            if confined.mode != "off":
                return _run_limited(confined.argv, cwd, timeout_s, None, max_output_chars, cancel)
        return _run_limited(cmd, cwd, timeout_s, memory_bytes, max_output_chars, cancel)
    finally:
        _compile_slots.release()


def _run_limited(
    cmd: list[str], cwd: str | Path, timeout_s: float, memory_bytes: int | None, max_output_chars: int,
    cancel: threading.Event | None,
) -> ToolResult:  # fmt: skip
    """``memory_bytes`` None: the command sets its own limits (a confinement launcher)."""
    start = time.perf_counter()

    def limits() -> None:
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 20, 512 << 20))

    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**_env(), "TMPDIR": str(cwd)},  # nvcc's intermediates: removed with cwd, time-outs included
        start_new_session=True,
        preexec_fn=limits,
    )
    timed_out, deadline = False, start + timeout_s
    while True:
        wait = deadline - time.perf_counter()
        try:
            raw, _ = proc.communicate(timeout=max(0.0, min(wait, 0.05)) if cancel else max(0.0, wait))
            break
        except subprocess.TimeoutExpired:
            if time.perf_counter() >= deadline or (cancel is not None and cancel.is_set()):
                timed_out = True
                _kill_group(proc)
                raw, _ = proc.communicate()
                break
    text = shorten_paths(sanitize(raw[: 4 * max_output_chars].decode("utf-8", "replace")), cwd)
    return ToolResult(proc.returncode, truncate(text, max_output_chars), time.perf_counter() - start, timed_out)


def shorten_paths(text: str, cwd: str | Path | None = None) -> str:
    """Compiler output without where this machine keeps things: the CUDA toolkit as ``<cuda>/``, the
    (random) work folder dropped, so that the same source gets the same diagnostics on any machine."""
    for prefix in _toolkit_prefixes():
        text = text.replace(prefix, "<cuda>/")
    if cwd is not None:
        for folder in {str(cwd).rstrip("/"), os.path.realpath(cwd).rstrip("/")} - {""}:  # never "/" itself
            text = text.replace(folder + "/", "")
    return text


@lru_cache(maxsize=1)
def _toolkit_prefixes() -> tuple[str, ...]:
    """How diagnostics name nvcc's toolkit (``<bin>/../`` for its own headers, and its root), longest first.

    A root shared with the system (``/usr``, ``/``) is left alone: its headers are not all the toolkit's."""
    try:
        path = nvcc()
    except ToolchainError:
        return ()
    prefixes = set()
    for bin_dir in {os.path.dirname(path), os.path.dirname(os.path.realpath(path))}:
        prefixes.add(bin_dir + "/../")
        root = os.path.dirname(bin_dir)
        if root not in ("/", "/usr", "/usr/local"):
            prefixes.add(root + "/")
    return tuple(sorted(prefixes, key=len, reverse=True))


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the process group and, for a confined command, its PID namespace (whatever left the group)."""
    init = namespace_init(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    if init is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(init, signal.SIGKILL)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")}
    env.setdefault("PATH", os.defpath)
    # nvcc from the wheel finds its host compiler on PATH; keep the interpreter's bin dir there.
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env["PATH"]])
    return {**env, **COMPILER_ENV}
