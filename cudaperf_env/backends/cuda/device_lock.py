"""Per physical GPU: timings one at a time and alone; correctness runs side by side.

Concurrent evaluations compile in parallel; their GPU phases come in two kinds.
A timing must have the card to itself, or another submission's kernels inflate
its times. A correctness run only needs the card: several runs may share it
(each worker has its own CUDA context, so one run's fault never reaches another;
a run that is slowed by the others stays far inside its time limit, ``budget.py``:
2 s plus 1,000 times the baseline). So :class:`DeviceLock` is a readers-writer
lock: ``with lock:`` holds the card exclusively (timing), ``with lock.shared():``
beside other shared holders (correctness runs, sanitizers). A waiting exclusive
holder goes first: shared holders that come after it wait, so a timing never
starves behind a stream of runs.

Across threads and processes alike: a vectorized env (``gym.make_vec(...,
vectorization_mode="async")``), several trainers' reward workers or a labeller
beside a training run are separate processes on the same card. Every holding is
an ``flock`` on its own open file (``flock`` conflicts between open files, in one
process as between processes), named after the card's identity (its UUID where
NVML reports it), so processes that see the card under different indices
(``CUDA_VISIBLE_DEVICES``) still take the same lock; a second file is the
turnstile that gives a waiting exclusive holder its turn. ``flock`` locks die
with their process: a killed evaluation never leaves the GPU locked.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
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
    """A re-creatable, picklable lock of the GPU ``identity``: ``with lock:`` exclusively, ``with lock.shared():`` not.

    Not re-entrant: a thread that holds it in either mode must not take it again (the second
    holding would wait for the first).

    Args:
        identity: The card's name (:func:`device_identity`); the lock file is ``<dir>/<identity>.lock``.
        directory: Where lock files live (default: ``$CUDAPERF_GPU_LOCK_DIR`` or ``<tmp>/cudaperf-gpu-locks``).
    """

    def __init__(self, identity: str, directory: str | Path | None = None) -> None:
        base = directory or os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "cudaperf-gpu-locks"
        self.path = Path(base) / f"{identity}.lock"
        self._held = threading.local()  # this thread's exclusive holdings, innermost last

    @contextmanager
    def hold(self, exclusive: bool = True) -> Iterator[DeviceLock]:
        """Hold the card: alone (``exclusive``), or beside other shared holders."""
        fd = self._acquire(exclusive)
        try:
            yield self
        finally:
            _unlock(fd)

    def shared(self) -> AbstractContextManager[DeviceLock]:
        """Hold the card beside other shared holders (correctness runs); waits while it is held exclusively."""
        return self.hold(exclusive=False)

    def _acquire(self, exclusive: bool) -> int:
        gate = self._open(".turnstile")  # held while waiting, so later holders queue behind a waiting one
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fd = self._open(".lock")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            except BaseException:
                os.close(fd)
                raise
        finally:
            _unlock(gate)
        return fd

    def waited_on(self) -> bool:
        """Whether a holder waits for the card now (a waiting one holds the turnstile until it has the card)."""
        gate = self._open(".turnstile")
        try:
            fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(gate)
            return True
        _unlock(gate)
        return False

    def __enter__(self) -> DeviceLock:
        holding = self.hold(exclusive=True)
        holding.__enter__()
        self._stack().append(holding)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stack().pop().__exit__(kind, value, tb)

    def _stack(self) -> list[AbstractContextManager[DeviceLock]]:
        if not hasattr(self._held, "stack"):
            self._held.stack = []
        return self._held.stack

    def _open(self, suffix: str) -> int:
        """The lock file (``.lock``) or turnstile, shared by every user (sticky world-writable folder);
        per user if that is refused."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.parent.stat().st_uid == os.getuid():
                os.chmod(self.path.parent, 0o1777)
            return os.open(self.path.with_suffix(suffix), os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:  # another user's folder or file: lock among this user's processes
            self.path = self.path.parent.with_name(f"{self.path.parent.name}-{os.getuid()}") / self.path.name
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path.with_suffix(suffix), os.O_RDWR | os.O_CREAT, 0o600)

    def __getstate__(self) -> dict[str, object]:  # picklable (spawned env workers): the file, not the held state
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = Path(str(state["path"]))
        self._held = threading.local()

    def __repr__(self) -> str:
        return f"DeviceLock({str(self.path)!r})"


def _unlock(fd: int) -> None:
    """Release a lock and close its file; closing alone leaves it held by a copy of ``fd`` in a forked child."""
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class SharedHold:
    """The card held shared through long GPU work that no grader does (a trainer's generation or optimization).

    Such work would otherwise run beside a timing and slow it. Held shared, it keeps timings out
    until it calls :meth:`let_through` (between token steps, between micro-batches), which, when a
    timing waits, lets go of the card and takes it again after the timing: the work pauses for
    the timing instead of running beside it. Correctness runs share the card with it as with each other.

    Usage: ``with SharedHold(backend.gpu_lock, drain=torch.cuda.synchronize) as hold: ...; hold.let_through()``

    Args:
        lock: The card's lock.
        drain: Called before letting go (GPU work is queued: ``torch.cuda.synchronize`` waits for it to finish).
    """

    def __init__(self, lock: DeviceLock, drain: Callable[[], object] | None = None) -> None:
        self.lock, self.drain = lock, drain
        self._fd: int | None = None

    def __enter__(self) -> SharedHold:
        self._fd = self.lock._acquire(exclusive=False)
        return self

    def let_through(self) -> bool:
        """Let a waiting exclusive holder have the card, then hold it again; whether one was waiting."""
        if self._fd is None or not self.lock.waited_on():
            return False
        if self.drain is not None:
            self.drain()
        self._release()
        self._fd = self.lock._acquire(exclusive=False)
        return True

    def _release(self) -> None:
        if self._fd is not None:
            _unlock(self._fd)
            self._fd = None

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._release()
