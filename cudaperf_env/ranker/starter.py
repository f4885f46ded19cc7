"""The hand-written starter tasks with GPU labels: implementation pairs that no generator wrote.

The bundled C-to-CUDA tasks (``cudaperf tasks list``) carry hand-written
implementations; a GPU labeller stream of them (``benchmarks/results/starter_labels_h200.jsonl.gz``,
records by task id, as ``python -m cudaperf_env.datagen.label`` writes them) folds
into those tasks as labels, like the dataset's. A record whose digest no longer
matches its task (the task changed since it was timed) is left out, and so is a
record of a failed task.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cudaperf_env.dataset.gpu_labels import implementation_labels, read_stream, task_digest
from cudaperf_env.tasks import Task, load_tasks
from cudaperf_env.tasks.schema import TimingLabel


def labelled_starter_tasks(path: str | Path) -> dict[str, Task]:
    """The bundled C-to-CUDA tasks whose stream record in ``path`` matches their digest, with its labels.

    Raises:
        FileNotFoundError: No stream at ``path``.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"no starter label stream at {path}; the committed one is "
                                f"benchmarks/results/starter_labels_h200.jsonl.gz")  # fmt: skip
    stream = read_stream([path])
    out = {}
    for task in load_tasks(kind="c2cuda").values():
        record = stream.get(task.id)
        if not record or record.get("error") or record.get("digest") != task_digest(task):
            continue
        labels = implementation_labels(record)
        impls = tuple(replace(i, labels=tuple(TimingLabel(**label) for label in labels.get(i.name, [])))
                      for i in task.implementations)  # fmt: skip
        out[task.id] = replace(task, implementations=impls)
    return out
