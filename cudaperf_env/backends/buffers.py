"""Argument buffers in a shared file: guard pages between them, poison and canaries.

Layout of the file (P = page size)::

    [guard P][buf0 ....... | canary to page end][guard P][buf1 ... | canary][guard P]

Every buffer starts page-aligned (so cudaMalloc-like alignment for vector loads)
right after a guard page, so a write before its start faults; the bytes from its
end to the next guard page are a canary the parent checks, so an off-by-one
write past the end fails the step even when it does not fault.

The parent never maps the file: it writes the inputs with ``pwrite`` and reads the
results back with ``pread`` into its own memory (:meth:`BufferFile.read_back`), so a
worker that truncates or grows the file gets a clear verdict instead of killing the
parent with SIGBUS. The file is created exclusively, never through a link.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cudaperf_env.tasks.inputs import scalar_values
from cudaperf_env.tasks.schema import Arg, Config, Task

PAGE = mmap.PAGESIZE
# Canary bytes, repeated over the whole file: a signalling NaN as float32 (reads past
# the end spoil results) that arithmetic never reproduces (it quiets NaNs), so an
# overrun that writes NaN-propagated values is still seen.
CANARY = np.frombuffer(b"\xff\xff\xbf\xff", dtype=np.uint8)
_CANARY_RUN = np.resize(CANARY, PAGE + CANARY.size)  # enough for any tail, at any phase
INT_POISON_BYTE = 0xA5


@dataclass(frozen=True)
class Slot:
    """Where one buffer lives in the file."""

    arg: Arg
    offset: int
    nbytes: int
    count: int

    @property
    def canary_end(self) -> int:
        return _round_up(self.offset + self.nbytes, PAGE)


def layout(task: Task, config: Config) -> tuple[tuple[Slot, ...], tuple[int, ...], int]:
    """Slots, guard-page offsets and total size for ``task``'s buffers under ``config``."""
    slots, guards, offset = [], [0], PAGE
    for arg in task.args:
        if arg.is_buffer:
            count = arg.numel(config)
            slot = Slot(arg, offset, count * arg.dtype.itemsize, count)
            slots.append(slot)
            guards.append(slot.canary_end)
            offset = guards[-1] + PAGE
    return tuple(slots), tuple(guards), offset


def poison_value(arg: Arg) -> np.ndarray:
    """One element of the poison written into ``out`` buffers: NaN or a byte pattern."""
    if arg.dtype.is_float:
        return np.array([np.nan], dtype=arg.dtype.numpy)
    return np.frombuffer(bytes([INT_POISON_BYTE]) * arg.dtype.itemsize, dtype=arg.dtype.numpy)


class BufferResized(Exception):
    """The worker changed the buffer file's size: its contents cannot be trusted."""


class BufferFile:
    """The shared file holding one call's buffers, owned by the trusted parent.

    The parent's copy of the contents lives in its own memory: written to the file when
    made, refreshed from it by :meth:`read_back` after the call.
    """

    def __init__(self, path: Path, task: Task, config: Config, inputs: Mapping[str, np.ndarray]) -> None:
        self.path = path
        self.scalars = scalar_values(task, config, inputs)  # drawn per episode where the task says so
        self.slots, self.guards, self.size = layout(task, config)
        self._view = np.zeros(self.size, dtype=np.uint8)
        for slot in self.slots:
            end = slot.offset + slot.nbytes
            self._view[end : slot.canary_end] = _canary(end, slot.canary_end)
            region = self.array(slot)
            region[:] = inputs[slot.arg.name] if slot.arg.role in ("in", "inout") else poison_value(slot.arg)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(path, flags, 0o600)
        try:
            os.fchmod(self._fd, 0o666)  # the worker may run as another (unprivileged) user
            os.ftruncate(self._fd, self.size)
            _pwrite_all(self._fd, self._view)
        except BaseException:  # a full file system, say: no half-written file is left behind
            self.close()
            raise

    def read_back(self) -> None:
        """Refresh the parent's copy from the file after a call.

        Raises:
            BufferResized: The file no longer has its size (the worker truncated or grew it).
        """
        if os.fstat(self._fd).st_size != self.size:
            raise BufferResized(f"the buffer file was resized to {os.fstat(self._fd).st_size} bytes")
        data = bytearray(self.size)
        if _pread_into(self._fd, data) != self.size:
            raise BufferResized("the buffer file shrank while it was read")
        self._view = np.frombuffer(data, dtype=np.uint8)

    def array(self, slot: Slot) -> np.ndarray:
        """A view of ``slot``'s elements in the parent's copy."""
        raw = self._view[slot.offset : slot.offset + slot.nbytes]
        return raw.view(slot.arg.dtype.numpy)

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of every buffer's current contents, by argument name."""
        return {slot.arg.name: self.array(slot).copy() for slot in self.slots}

    def overruns(self) -> list[str]:
        """Names of buffers whose canary (bytes past the end) was written."""
        bad = []
        for slot in self.slots:
            end = slot.offset + slot.nbytes
            if not np.array_equal(self._view[end : slot.canary_end], _canary(end, slot.canary_end)):
                bad.append(slot.arg.name)
        return bad

    def request_args(self, task: Task, config: Config) -> list[dict]:
        """The ``args`` list of a worker ``call`` request."""
        offsets = {s.arg.name: s.offset for s in self.slots}
        sizes = {s.arg.name: s.nbytes for s in self.slots}
        args: list[dict[str, object]] = []
        for arg in task.args:
            if arg.is_buffer:
                args.append({"ptr": offsets[arg.name], "bytes": sizes[arg.name]})
            else:
                args.append({"scalar": arg.dtype.name, "value": self.scalars[arg.name]})
        return args

    def close(self) -> None:
        """Close the parent's descriptor and remove the file."""
        self._close_fd()
        self.path.unlink(missing_ok=True)

    def _close_fd(self) -> None:
        fd, self._fd = getattr(self, "_fd", -1), -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:  # a dropped BufferFile keeps its file (GPU input sets) but not its descriptor
        self._close_fd()


def _pwrite_all(fd: int, data: np.ndarray) -> None:
    view, offset = memoryview(data.data).cast("B"), 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset : offset + (256 << 20)], offset)


def _pread_into(fd: int, data: bytearray) -> int:
    """Fill ``data`` from the file's start; the bytes read (fewer when the file is shorter)."""
    view, offset = memoryview(data), 0
    while offset < len(view):
        got = os.preadv(fd, [view[offset : offset + (256 << 20)]], offset)
        if got <= 0:
            break
        offset += got
    return offset


def _canary(start: int, end: int) -> np.ndarray:
    """The canary bytes for file offsets ``[start, end)`` (the pattern is anchored at offset 0)."""
    phase = start % CANARY.size
    return _CANARY_RUN[phase : phase + end - start]


def _round_up(x: int, to: int) -> int:
    return (x + to - 1) // to * to
