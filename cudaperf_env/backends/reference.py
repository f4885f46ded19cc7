"""Expected outputs from a task's reference (C, or PyTorch through ``torch_reference``), in a trusted process,
cached."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.backends.torch_reference import TorchReference, TorchReferenceError
from cudaperf_env.errors import CudaPerfError
from cudaperf_env.status import Status
from cudaperf_env.tasks.schema import Task
from cudaperf_env.toolchain.native import build_c_reference


class ReferenceError(CudaPerfError):
    """The task's reference failed to build or run: a bug in the task, not the submission."""


class ReferenceOutputs:
    """Computes and caches expected outputs (bounded by bytes, least recently used out).

    Args:
        max_bytes: Cache capacity.
        timeout_s: Time limit per configuration for the reference.
    """

    def __init__(self, max_bytes: int = 512 << 20, timeout_s: float = 60.0) -> None:
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self._cache: OrderedDict[tuple, dict[str, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # guards the cache and the lock table
        self._task_locks: dict[tuple, threading.Lock] = {}  # concurrent evaluations of a task share one computation
        self._torch_lock = threading.Lock()  # one trusted torch process, one request at a time
        self._torch: TorchReference | None = None  # started on the first PyTorch reference

    def expected(self, task: Task, jobs: Sequence[Job], seed: int, workdir: Path) -> list[dict[str, np.ndarray]]:
        """Every buffer's expected contents after the entry runs, per job (tasks are computed concurrently)."""
        with self._lock:
            task_lock = self._task_locks.setdefault((task.id, task.reference_source, seed), threading.Lock())
        with task_lock:
            return self._expected(task, jobs, seed, workdir)

    def _expected(self, task: Task, jobs: Sequence[Job], seed: int, workdir: Path) -> list[dict[str, np.ndarray]]:
        keys = [(task.id, task.reference_source, tuple(sorted(j.config.items())), seed) for j in jobs]
        with self._lock:
            found = {i: self._cache[k] for i, k in enumerate(keys) if k in self._cache}
        missing = [i for i in range(len(keys)) if i not in found]
        if missing:
            computed = self._compute(task, [jobs[i] for i in missing], workdir)
            with self._lock:
                for i, outputs in zip(missing, computed, strict=True):
                    found[i] = outputs
                    self._store(keys[i], outputs)
        with self._lock:
            for key in keys:
                if key in self._cache:
                    self._cache.move_to_end(key)
        return [found[i] for i in range(len(keys))]  # never read back from the cache: storing may evict

    def _compute(self, task: Task, jobs: Sequence[Job], workdir: Path) -> list[dict[str, np.ndarray]]:
        if task.reference_language == "pytorch":
            with self._torch_lock:
                self._torch = self._torch or TorchReference()
                try:
                    return self._torch.expected(task, jobs, workdir, self.timeout_s)
                except TorchReferenceError as exc:
                    raise ReferenceError(str(exc)) from None
        if task.reference_language != "c":
            raise ReferenceError(f"{task.id}: reference language {task.reference_language!r} is not supported yet")
        build = build_c_reference(wrap(task, task.reference_source, "c", "reference.c"))
        if not build.ok or build.library is None:
            raise ReferenceError(f"{task.id}: the C reference does not compile:\n{build.log}")
        results = run_jobs(build.library, task, jobs, workdir, self.timeout_s, deterministic=True)
        bad = [r for r in results if r.status != Status.OK or r.overruns]
        if bad or len(results) != len(jobs):
            why = bad[0].message if bad else "stopped early"
            raise ReferenceError(f"{task.id}: the C reference failed: {why} {bad[0].overruns if bad else ''}")
        return [dict(r.buffers) for r in results]

    def _store(self, key: tuple, outputs: Mapping[str, np.ndarray]) -> None:
        size = sum(a.nbytes for a in outputs.values())
        if size > self.max_bytes:
            return  # larger than the whole cache: recomputed when next needed
        self._cache[key] = dict(outputs)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, old = self._cache.popitem(last=False)
            self._bytes -= sum(a.nbytes for a in old.values())
