"""The timing configurations' input sets: made once per task and configuration, kept within a size bound.

A timing configuration is sized to fill the GPU (a 268M-element input is 268 MB),
and each is timed over several input sets (``TimingOptions.input_sets``), so a
task's sets take up to a few GB of the private tmpfs folder the sandboxed worker
reads them from. They do not depend on the episode's seed (the agent never sees
them), so repeated evaluations of a task reuse them; but a training run meets
thousands of tasks, and tmpfs is memory. :class:`PerfInputs` keeps the least
recently used sets within ``max_bytes`` (``$CUDAPERF_PERF_INPUTS_MAX_BYTES``,
default 8 GiB) and within the folder's free space, and never evicts the sets it is
about to return.

A set that cannot be made (the folder full) leaves no file behind: the next
evaluation of the task tries again instead of finding a half-made set's files.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from cudaperf_env.backends.buffers import BufferFile, layout
from cudaperf_env.backends.generator import task_inputs
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.tasks.schema import Config, Task
from cudaperf_env.toolchain.cache import scratch_dir

MAX_BYTES_ENV = "CUDAPERF_PERF_INPUTS_MAX_BYTES"
DEFAULT_MAX_BYTES = 8 << 30
RESERVE_BYTES = 256 << 20
"""Free space left in the folder's file system for everything else there (evaluations' scratch folders)."""
PERF_SEED = 1000
"""Input set ``k`` of a timing configuration is drawn with seed ``PERF_SEED + k``."""

Key = tuple[str, int]


def max_bytes() -> int:
    """The size bound of one process's input sets (``$CUDAPERF_PERF_INPUTS_MAX_BYTES``, default 8 GiB)."""
    value = os.environ.get(MAX_BYTES_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_BYTES


class PerfInputs:
    """Input sets of the timing configurations, by ``(task id, configuration index)``; thread-safe.

    Files live in a private tmpfs folder removed when this object is collected or the
    process exits. Sets are made ahead of a timing, outside the card's lock
    (``CudaBackend.prepare``), and each key's sets by one thread while the others wait for
    them; a timing that finds its sets made never waits behind the making of another's. The
    sets a timing reads are leased (:meth:`lease`): eviction passes over them, so making
    other sets meanwhile never pulls files from under a running timing.

    Args:
        limit: Bound on the bytes of all sets kept (default :func:`max_bytes`).
    """

    def __init__(self, limit: int | None = None) -> None:
        self.folder = scratch_dir("cudaperf-perf-")
        self.folder.chmod(0o755)  # read by confined workers, which run as users of their own
        self.limit = limit or max_bytes()
        self._sets: OrderedDict[Key, list[BufferFile]] = OrderedDict()
        self._lock = threading.Lock()  # guards the tables below, never held while a set is made
        self._makers: dict[Key, threading.Lock] = {}  # one thread makes a key's sets
        self._leases: Counter[Key] = Counter()
        self._reserved = 0  # bytes of the sets being made now
        weakref.finalize(self, shutil.rmtree, self.folder, True)

    @property
    def bytes(self) -> int:
        """The bytes of the sets kept now."""
        return sum(f.size for files in self._sets.values() for f in files)

    def sets(self, task: Task, index: int, config: Config, count: int) -> list[BufferFile]:
        """The ``count`` input sets of ``task``'s timing configuration ``index`` (``config``), made if missing.

        Raises:
            BackendUnavailableError: The folder has no room for them even with every other set evicted.
        """
        return self._get(task, index, config, count, lease=False)

    @contextmanager
    def lease(self, task: Task, index: int, config: Config, count: int) -> Iterator[list[BufferFile]]:
        """:meth:`sets`, kept (never evicted) until the block ends: a timing reads them inside it."""
        files = self._get(task, index, config, count, lease=True)
        try:
            yield files
        finally:
            with self._lock:
                self._leases[(task.id, index)] -= 1

    def clear(self) -> None:
        """Remove every set kept (a process done with this backend gives the memory back at once)."""
        with self._lock:
            while self._sets:
                self._drop(next(iter(self._sets)))

    def _get(self, task: Task, index: int, config: Config, count: int, lease: bool) -> list[BufferFile]:
        key = (task.id, index)
        with self._lock:
            maker = self._makers.setdefault(key, threading.Lock())
        with maker:
            with self._lock:
                if key in self._sets:
                    return self._take(key, lease)
                need = count * layout(task, config)[2]
                self._evict(need)
                self._reserved += need
            try:
                made = self._make(task, config, count, key, need)
            finally:
                with self._lock:
                    self._reserved -= need
            with self._lock:
                self._sets[key] = made
                return self._take(key, lease)

    def _take(self, key: Key, lease: bool) -> list[BufferFile]:
        self._sets.move_to_end(key)
        self._leases[key] += lease
        return self._sets[key]

    def _evict(self, need: int) -> None:
        """Drop the least recently used sets no timing holds until ``need`` more bytes fit the bound and the
        free space (counting the sets other threads are making)."""
        while (self.bytes + self._reserved + need > self.limit
               or self._free() < need + self._reserved + RESERVE_BYTES):  # fmt: skip
            victim = next((k for k in self._sets if not self._leases[k]), None)
            if victim is None:
                return
            self._drop(victim)

    def _drop(self, key: Key) -> None:
        for f in self._sets.pop(key):
            f.close()

    def _free(self) -> int:
        return shutil.disk_usage(self.folder).free

    def _make(self, task: Task, config: Config, count: int, key: Key, need: int) -> list[BufferFile]:
        made: list[BufferFile] = []
        try:
            for k in range(count):
                path = self.folder / f"{abs(hash(key))}-{k}.bin"
                made.append(BufferFile(path, task, config, task_inputs(task, config, PERF_SEED + k)))
        except BaseException as error:
            for f in made:
                f.close()
            if isinstance(error, OSError) and error.errno == errno.ENOSPC:
                raise BackendUnavailableError(
                    f"no room for the timing inputs of {task.id} ({need / 2**30:.2f} GiB) in {self.folder} "
                    f"({self._free() / 2**30:.2f} GiB free with no other input set kept): give its file system "
                    f"more space (a container's --shm-size) or time smaller configurations"
                ) from error
            raise
        return made
