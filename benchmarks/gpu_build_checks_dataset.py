"""Do honest dataset implementations pass the GPU build's unit checks? (``backends/cuda/backend.build_gpu``)

Builds the first ``--per-family`` implementations of every family of a shipped dataset with nvcc for
``sm_90`` (no GPU needed) and prints each refused or failed build and the counts. Use a cold cache
(``CUDAPERF_CACHE_DIR`` pointing at an empty folder): a cached build is not checked again.

Run::

    CUDAPERF_CACHE_DIR=$(mktemp -d) python benchmarks/gpu_build_checks_dataset.py --per-family 10
    CUDAPERF_CACHE_DIR=$(mktemp -d) python benchmarks/gpu_build_checks_dataset.py --kind torch2cuda --per-family 2
"""

from __future__ import annotations

import argparse
import collections
from concurrent.futures import ThreadPoolExecutor

from cudaperf_env.backends.cuda.backend import build_gpu
from cudaperf_env.dataset.load import data_file, load_dataset
from cudaperf_env.tasks import Task


def sample(kind: str, per_family: int) -> list[tuple[Task, str, str]]:
    """The first ``per_family`` implementations of each family, in task-id order."""
    chosen: dict[str, list[tuple[Task, str, str]]] = collections.defaultdict(list)
    for task in sorted(load_dataset(path=data_file(kind), labels=False).values(), key=lambda t: t.id):
        for impl in task.implementations:
            if len(chosen[task.family]) < per_family:
                chosen[task.family].append((task, impl.name, impl.source))
    return [item for items in chosen.values() for item in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="c2cuda", help="c2cuda or torch2cuda")
    parser.add_argument("--per-family", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="builds at a time")
    args = parser.parse_args()
    builds = sample(args.kind, args.per_family)
    print(f"{len(builds)} builds", flush=True)

    def build(item: tuple[Task, str, str]) -> tuple[str, str, bool, str]:
        task, name, source = item
        result = build_gpu(task, source, "sm_90")
        why = result.unsupported[0].message if result.unsupported else ("" if result.ok else result.log[-300:])
        return task.id, name, result.ok, why

    counts: collections.Counter[str] = collections.Counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        for task_id, name, ok, why in pool.map(build, builds):
            counts["accepted" if ok else "refused or failed"] += 1
            if not ok:
                print(f"{task_id} {name}: {why}", flush=True)
    print(dict(counts))


if __name__ == "__main__":
    main()
