"""Load a shipped dataset (C-to-CUDA, PyTorch-to-CUDA, or any file the builder wrote) as tasks, whole or by split."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from cudaperf_env.dataset.gpu_labels import LABEL_FILES, fold_labels, read_stream
from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.tasks import Task, parse_task

DATA_FILE = Path(__file__).resolve().parents[1] / "tasks" / "data" / "dataset" / "c2cuda.jsonl.gz"
# The shipped data file of each task kind; each has its own splits.json and build report next to it.
DATA_FILES = {"c2cuda": DATA_FILE, "torch2cuda": DATA_FILE.parent / "torch2cuda" / "torch2cuda.jsonl.gz"}
SPLITS = ("train", "validation", "test")


def data_file(kind: str) -> Path:
    """The shipped data file of task ``kind`` (``c2cuda`` or ``torch2cuda``).

    Raises:
        ValueError: ``kind`` has no shipped dataset.
    """
    if kind not in DATA_FILES:
        raise ValueError(f"no dataset for kind {kind!r}; expected one of {', '.join(sorted(DATA_FILES))}")
    return DATA_FILES[kind]


def load_records(path: str | Path = DATA_FILE, labels: bool = True) -> list[dict[str, Any]]:
    """The raw task mappings of a data file (with provenance and ``labels``), in file order.

    With ``labels``, the GPU label streams next to the file (``labels-*.jsonl.gz``) are
    folded into ``implementations[].labels`` for the tasks whose digest they match.
    """
    path = Path(path)
    if not path.is_file():
        raise TaskNotFoundError(f"no dataset file at {path}; build one with `cudaperf dataset build --out {path}`")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if labels:
        fold_labels(records, read_stream(sorted(path.parent.glob(LABEL_FILES))))
    return records


def load_splits(path: str | Path = DATA_FILE) -> dict[str, list[str]]:
    """The ``splits.json`` written next to a data file."""
    splits = Path(path).parent / "splits.json"
    if not splits.is_file():
        raise TaskNotFoundError(f"no splits file at {splits}; rebuild with `cudaperf dataset build --out {path}`")
    return json.loads(splits.read_text(encoding="utf-8"))


@lru_cache(maxsize=4)
def _tasks(path: str, labels: bool) -> dict[str, Task]:
    return {r["id"]: parse_task(r, f"{path}:{r['id']}") for r in load_records(path, labels)}


def load_dataset(split: str | None = None, path: str | Path = DATA_FILE, labels: bool = True) -> dict[str, Task]:
    """Tasks by id: the whole dataset, or one split (``train``, ``validation``, ``test``).

    Parsed once per file and cached; every call returns a fresh dict of the same
    (frozen) tasks. With ``labels``, implementations carry their GPU timing labels
    where measured; without, loading takes about half as long (the environment
    does not need them).

    Raises:
        ValueError: ``split`` is not one of the splits.
        TaskNotFoundError: the data or splits file is missing.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)} (or None for all tasks)")
    tasks = _tasks(str(Path(path).resolve()), labels)
    if split is None:
        return dict(tasks)
    return {i: tasks[i] for i in load_splits(path)[split]}


def find_task(id_or_path: str, task_dir: str | Path | None = None) -> Task:
    """A task by file path, by id among the starter tasks (or ``task_dir``), or by id in the dataset."""
    from cudaperf_env.tasks import find_task as find_starter

    try:
        return find_starter(id_or_path, task_dir)
    except TaskNotFoundError:
        if task_dir is not None:
            raise
        kind = id_or_path.split("/", 1)[0]  # ids are "<kind>/<name>"
        dataset = load_dataset(path=DATA_FILES.get(kind, DATA_FILE), labels=True)
        if id_or_path in dataset:
            return dataset[id_or_path]
        raise
