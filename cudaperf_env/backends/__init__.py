"""Execution backends: ``cpu`` (CUDA on the CPU runtime), ``cuda`` (real GPU), ``auto``."""

from __future__ import annotations

import functools
import logging
import shutil

from cudaperf_env.backends.base import Backend, Build
from cudaperf_env.errors import BackendUnavailableError

BACKENDS = ("cpu", "cuda", "auto")
_log = logging.getLogger("cudaperf_env")

__all__ = ["BACKENDS", "Backend", "Build", "gpu_available", "make_backend"]


def gpu_available() -> bool:
    """Whether an NVIDIA driver is visible (``nvidia-smi`` on PATH answers)."""
    return shutil.which("nvidia-smi") is not None and _nvidia_smi_ok()


def make_backend(name: str = "auto", **options: object) -> Backend:
    """The backend called ``name`` with ``options`` (e.g. ``timeout_s=5``).

    ``auto`` picks ``cuda`` where a usable GPU backend exists, else ``cpu`` with a
    one-line notice.
    """
    from cudaperf_env.backends.cpu.backend import CpuBackend
    from cudaperf_env.backends.cuda.backend import CudaBackend

    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; expected one of: {', '.join(BACKENDS)}")
    if name == "auto":
        name = "cuda" if gpu_available() else "cpu"
        if name == "cpu":
            _notice_cpu_fallback()
    if name == "cuda":
        if not gpu_available():
            raise BackendUnavailableError(
                "backend='cuda' needs an NVIDIA GPU with its driver (nvidia-smi found none); "
                "use backend='cpu' (correctness only) or backend='auto'"
            )
        return CudaBackend(**options)  # type: ignore[arg-type]  # options are CudaBackend fields
    return CpuBackend(**options)  # type: ignore[arg-type]  # options are CpuBackend fields


@functools.cache
def _notice_cpu_fallback() -> None:
    """Said once per process, not on every ``gym.make`` (vector envs make many)."""
    _log.warning("cudaperf: no usable GPU; using the cpu backend (correctness only, no timing)")


def _nvidia_smi_ok() -> bool:
    import subprocess

    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
