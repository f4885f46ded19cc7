"""Argument buffers in a shared file: guard pages between them, poison and canaries.

Layout of the file (P = page size)::

    [guard P][buf0 ....... | canary to page end][guard P][buf1 ... | canary][guard P]

Every buffer starts page-aligned (so cudaMalloc-like alignment for vector loads)
right after a guard page, so a write before its start faults; the bytes from its
end to the next guard page are a canary the parent checks, so an off-by-one
write past the end fails the step even when it does not fault.
"""

from __future__ import annotations

import contextlib
import mmap
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


class BufferFile:
    """The shared file holding one call's buffers, owned by the trusted parent."""

    def __init__(self, path: Path, task: Task, config: Config, inputs: Mapping[str, np.ndarray]) -> None:
        self.path = path
        self.scalars = scalar_values(task, config, inputs)  # drawn per episode where the task says so
        self.slots, self.guards, self.size = layout(task, config)
        with open(path, "wb") as f:
            f.truncate(self.size)
        path.chmod(0o666)  # the worker may run as another (unprivileged) user
        with open(path, "r+b") as f:
            self._mem = mmap.mmap(f.fileno(), self.size)
        self._view = np.frombuffer(self._mem, dtype=np.uint8)
        for slot in self.slots:
            end = slot.offset + slot.nbytes
            self._view[end : slot.canary_end] = _canary(end, slot.canary_end)
            region = self.array(slot)
            region[:] = inputs[slot.arg.name] if slot.arg.role in ("in", "inout") else poison_value(slot.arg)

    def array(self, slot: Slot) -> np.ndarray:
        """A live view of ``slot``'s elements."""
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
        del self._view
        with contextlib.suppress(BufferError):  # a caller still holds a view; the GC unmaps it later
            self._mem.close()
        self.path.unlink(missing_ok=True)


def _canary(start: int, end: int) -> np.ndarray:
    """The canary bytes for file offsets ``[start, end)`` (the pattern is anchored at offset 0)."""
    phase = start % CANARY.size
    return _CANARY_RUN[phase : phase + end - start]


def _round_up(x: int, to: int) -> int:
    return (x + to - 1) // to * to
