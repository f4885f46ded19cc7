"""A task's trusted input generator: a C function that fills the inputs no named distribution describes.

The task file gives ``generator: {source: ..., entry: NAME}``; the function receives the seed,
then the entry's scalars (by value) and its ``in``/``inout`` buffers (writable), in the entry's
order, and must write every element of every buffer::

    void make_mesh(unsigned long long seed, int n, float* vertices, int* triangles);

It is built with gcc like the C reference and runs like it, in a worker of its own. Scalars drawn
per episode still come from their ``init``; buffers the generator fills override their ``init``.
:func:`task_inputs` is what every caller uses in place of ``make_inputs``.
"""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.backends.reference import ReferenceError
from cudaperf_env.status import Status
from cudaperf_env.tasks.dtypes import DTYPES
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.schema import Arg, Config, Task
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.native import build_c_reference

SEED = "cudaperf_seed"


class GeneratorError(ReferenceError):
    """The task's generator failed to build, crashed or left elements unwritten: a bug in the task."""


def generator_task(task: Task, seed: int) -> Task:
    """The generator's call as a task: the seed first, scalars kept, input buffers as outputs to fill."""
    assert task.generator is not None
    args = [Arg(SEED, "scalar", DTYPES["uint64"], value=seed & (2**63 - 1))]
    args += [replace(a, role="out", init={}) if a.is_buffer else a for a in task.args if a.role != "out"]
    return replace(task, id=f"{task.id}#generator", entry=task.generator.entry, args=tuple(args),
                   reference_source=task.generator.source, implementations=(), baseline="")  # fmt: skip


class GeneratedInputs:
    """Runs generators and keeps their latest results (bounded by bytes, least recently used out)."""

    def __init__(self, max_bytes: int = 256 << 20, timeout_s: float = 60.0) -> None:
        self.max_bytes, self.timeout_s = max_bytes, timeout_s
        self._cache: OrderedDict[tuple, dict[str, np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, task: Task, config: Config, seed: int) -> dict[str, np.ndarray]:
        """``make_inputs`` with the generator's buffers in place of their ``init`` (copies: callers may write)."""
        inputs = make_inputs(task, config, seed)
        if task.generator is None:
            return inputs
        key = (task.id, task.generator.source, tuple(sorted(config.items())), seed)
        with self._lock:
            if key not in self._cache:
                self._store(key, self._run(task, config, seed, inputs))
            self._cache.move_to_end(key)
            generated = self._cache[key]
        return {**inputs, **{k: v.copy() for k, v in generated.items()}}

    def _run(self, task: Task, config: Config, seed: int, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        view = generator_task(task, seed)
        build = build_c_reference(wrap(view, view.reference_source, "c", "generator.c"))
        if not build.ok or build.library is None:
            raise GeneratorError(f"{task.id}: the input generator does not compile:\n{build.log[-1000:]}")
        workdir = scratch_dir("cudaperf-generator-")
        try:
            scalars = {a.name: inputs[a.name] for a in task.args if not a.is_buffer and a.name in inputs}
            results = run_jobs(build.library, view, [Job(config, scalars)], workdir, self.timeout_s,
                               deterministic=True)  # fmt: skip
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if not results or results[0].status != Status.OK or results[0].overruns:
            why = results[0].message or f"wrote past {results[0].overruns}" if results else "no result"
            raise GeneratorError(f"{task.id}: the input generator failed under {dict(config)}: {why}")
        out = {a.name: results[0].buffers[a.name] for a in task.args if a.role in ("in", "inout")}
        for arg in task.args:
            if arg.role in ("in", "inout") and arg.dtype.is_float and not np.all(np.isfinite(out[arg.name])):
                raise GeneratorError(f"{task.id}: the input generator left non-finite values in {arg.name} "
                                     f"under {dict(config)} (write every element)")  # fmt: skip
        return out

    def _store(self, key: tuple, values: dict[str, np.ndarray]) -> None:
        self._cache[key] = values
        while sum(a.nbytes for v in self._cache.values() for a in v.values()) > self.max_bytes and len(self._cache) > 1:
            self._cache.popitem(last=False)


task_inputs = GeneratedInputs()
"""The inputs of ``task`` under ``config`` for ``seed``: its distributions, then its generator if it has one."""
