"""Honest code is never refused by the checks behind the screen: the dataset's implementations build.

Two tasks per family (those with the most ``__device__``/``__constant__`` variables first), their
first two implementations, through the CPU backend's checked build (load-time code, unit imports,
library imports). ~95 s on a cold cache (248 builds).
"""

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.dataset.load import load_dataset


def _sample(per_family: int = 2):
    by_family = collections.defaultdict(list)
    for task in sorted(load_dataset(labels=False).values(), key=lambda t: t.id):
        if task.implementations:
            by_family[task.family].append(task)

    def variables(task):
        return -sum(("__constant__" in i.source) + ("__device__ " in i.source.split("__global__")[0])
                    for i in task.implementations)  # fmt: skip

    return {family: sorted(tasks, key=variables)[:per_family] for family, tasks in sorted(by_family.items())}


@pytest.mark.slow
def test_dataset_implementations_are_not_refused():
    backend = CpuBackend()
    cases = [(task, impl) for tasks in _sample().values() for task in tasks for impl in task.implementations[:2]]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # builds one per core at a time
        builds = list(pool.map(lambda case: backend.build(case[0], case[1].source), cases))
    refused = [(task.id, impl.name, build.unsupported[:1] or build.log[:200])
               for (task, impl), build in zip(cases, builds, strict=True) if not build.ok]  # fmt: skip
    assert len(cases) >= 200 and not refused, refused
