"""One GPU phase at a time per physical GPU, across threads and processes.

Concurrent evaluations compile in parallel, but a correctness run or a timing
must have the GPU to itself, or one submission's kernels inflate another's
times. Within a process a thread lock is enough; a vectorized env
(``gym.make_vec(..., vectorization_mode="async")``), several trainers' reward
workers or a labeller beside a training run are separate processes on the same
card. :class:`DeviceLock` holds both: the thread lock, then an exclusive
``flock`` on a file named after the card's identity (its UUID where NVML
reports it), so processes that see the card under different indices
(``CUDA_VISIBLE_DEVICES``) still take the same lock. ``flock`` locks die with
their process: a killed evaluation never leaves the GPU locked.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
from pathlib import Path
from types import TracebackType

LOCK_DIR_ENV = "CUDAPERF_GPU_LOCK_DIR"
"""Directory of the lock files (default: ``<tmp>/cudaperf-gpu-locks``); every process on a machine must agree."""


def visible_device(index: int, visible: str | None = None) -> str:
    """What ``CUDA_VISIBLE_DEVICES`` maps CUDA device ``index`` to: a physical index or a ``GPU-``/``MIG-`` id.

    Args:
        index: The CUDA device index the process uses.
        visible: The variable's value (default: read from the environment; unset: identity).
    """
    value = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if value is None or not value.strip():
        return str(index)
    entries = [e.strip() for e in value.split(",") if e.strip()]
    return entries[index] if 0 <= index < len(entries) else str(index)


def device_identity(index: int, visible: str | None = None) -> str:
    """A name of the physical GPU behind CUDA device ``index`` that is the same in every process.

    The card's UUID from NVML where it answers (``pynvml``), else the physical index or the id
    ``CUDA_VISIBLE_DEVICES`` gave; made safe as a file name.
    """
    entry = visible_device(index, visible)
    if entry.isdigit():
        entry = _nvml_uuid(int(entry)) or f"index-{entry}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", entry)


def _nvml_uuid(physical: int) -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(physical))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML, no driver, no such device: fall back to the index
        return None
    return uuid.decode() if isinstance(uuid, bytes) else str(uuid)


class DeviceLock:
    """A re-creatable context manager: the GPU ``identity`` exclusively, for this thread and process.

    Args:
        identity: The card's name (:func:`device_identity`); the lock file is ``<dir>/<identity>.lock``.
        directory: Where lock files live (default: ``$CUDAPERF_GPU_LOCK_DIR`` or ``<tmp>/cudaperf-gpu-locks``).
    """

    def __init__(self, identity: str, directory: str | Path | None = None) -> None:
        base = directory or os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "cudaperf-gpu-locks"
        self.path = Path(base) / f"{identity}.lock"
        self._thread_lock = threading.Lock()
        self._fd: int | None = None

    def __enter__(self) -> DeviceLock:
        self._thread_lock.acquire()
        try:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # waits for another process's GPU phase
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            self._thread_lock.release()
            raise
        self._fd = fd
        return self

    def _open(self) -> int:
        """The lock file, shared by every user (sticky world-writable folder); a per-user one if that is refused."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.parent.stat().st_uid == os.getuid():
                os.chmod(self.path.parent, 0o1777)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:  # another user's folder or file: lock among this user's processes
            self.path = self.path.parent.with_name(f"{self.path.parent.name}-{os.getuid()}") / self.path.name
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            self._thread_lock.release()

    def __getstate__(self) -> dict[str, object]:  # picklable (spawned env workers): the file, not the held state
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = Path(str(state["path"]))
        self._thread_lock = threading.Lock()
        self._fd = None

    def __repr__(self) -> str:
        return f"DeviceLock({str(self.path)!r})"
