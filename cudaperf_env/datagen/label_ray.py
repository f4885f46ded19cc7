"""GPU timing labels on a Ray cluster: one labelling actor per GPU, one stream of records.

``python -m cudaperf_env.datagen.label --ray auto`` (or an address) runs :func:`label_tasks`:
each actor is a :class:`~cudaperf_env.datagen.label.Labeller` on its one GPU timing chunks of
tasks; the driver appends their records to the stream as the single-machine labeller does, so
``--done`` resumes either. Needs ``pip install 'cudaperf-env[ray]'``.
"""

from __future__ import annotations

import collections
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudaperf_env.datagen.label import Labeller, LabelOptions
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.tasks.schema import Task

LabellerFactory = Callable[..., Any]
"""Makes a labeller from ``(devices, options, build_jobs=)`` with ``run(tasks, out, deadline) -> records``."""


class _LabelActor:
    """The remote side: a labeller timing on this actor's one visible GPU."""

    def __init__(self, options: LabelOptions | None, cache_dir: str | None, labeller: LabellerFactory,
                 cpus: int) -> None:  # fmt: skip
        if cache_dir:
            os.environ["CUDAPERF_CACHE_DIR"] = cache_dir
        self.labeller = labeller([0], options, build_jobs=cpus)  # Ray makes the actor's GPU device 0

    def label(self, tasks: Sequence[Task], deadline: float) -> list[dict[str, Any]]:
        """Label ``tasks`` (none started after the wall-clock ``deadline``) and return their records."""
        with tempfile.TemporaryDirectory() as folder:
            return list(self.labeller.run(tasks, Path(folder) / "labels.jsonl", deadline))


def label_tasks(tasks: Sequence[Task], out: str | Path, *, address: str | None = None, num_actors: int | None = None,
                options: LabelOptions | None = None, chunk: int = 16, deadline: float = math.inf,
                progress: Callable[[dict[str, Any]], None] | None = None, cache_root: str | None = None,
                max_restarts: int = 1, init_kwargs: Mapping[str, Any] | None = None,
                labeller: LabellerFactory = Labeller) -> tuple[list[dict[str, Any]], list[str]]:  # fmt: skip
    """Label ``tasks`` on every GPU of a Ray cluster, appending each record to ``out`` as it comes.

    Tasks go out in chunks of ``chunk``, in their order (the caller's: ``label_order``, ``cheapest_first``), one
    chunk per actor at a time, so two labellers never time on one GPU. No chunk starts after
    ``deadline`` (wall-clock seconds, as ``time.time()``), and each actor's labeller starts no task
    after it. A chunk whose actor died is not labelled: its task ids come back second, and the same
    command run again (with the stream as ``--done``) labels them; Ray restarts the actor
    (``max_restarts``) and it takes the next chunk.

    Returns:
        The records written now, and the ids of the tasks left unlabelled by a failed actor.
    """
    try:
        import ray
    except ImportError as exc:
        raise BackendUnavailableError(f"labelling on Ray needs ray: pip install 'cudaperf-env[ray]' ({exc})") from exc

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, **dict(init_kwargs or {}))
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    count = num_actors or gpus
    if count < 1 or not gpus:
        raise RuntimeError("labelling needs GPUs and this Ray cluster has none")
    cpus = max(1, int(resources.get("CPU", 1)) // gpus)  # each actor's share of the compilers and input writers
    root = cache_root or os.environ.get("CUDAPERF_CACHE_DIR") or os.path.expanduser("~/.cache/cudaperf")
    remote: Any = ray.remote(_LabelActor).options(num_gpus=1, num_cpus=cpus, max_restarts=max_restarts,
                                                  max_task_retries=0)  # fmt: skip
    actors = [remote.remote(options, os.path.join(root, f"label-actor-{i}"), labeller, cpus) for i in range(count)]
    ordered, size = list(tasks), max(1, chunk)
    waiting = collections.deque(ordered[k : k + size] for k in range(0, len(ordered), size))
    running: dict[Any, tuple[int, Sequence[Task]]] = {}
    records: list[dict[str, Any]] = []
    failed: list[str] = []

    def start(actor: int) -> None:
        if waiting and time.time() < deadline:
            work = waiting.popleft()
            running[actors[actor].label.remote(work, deadline)] = (actor, work)

    try:
        with open(out, "a", encoding="utf-8") as sink:
            for i in range(count):
                start(i)
            while running:
                [ref], _ = ray.wait(list(running), num_returns=1)
                actor, work = running.pop(ref)
                try:
                    done = ray.get(ref)
                except Exception:  # noqa: BLE001  (a dead actor: its chunk is left for the next run)
                    failed.extend(t.id for t in work)
                    done = []
                for record in done:
                    sink.write(json.dumps(record) + "\n")
                    sink.flush()
                    records.append(record)
                    if progress:
                        progress(record)
                start(actor)
    finally:
        for handle in actors:
            ray.kill(handle, no_restart=True)
    return records, failed
