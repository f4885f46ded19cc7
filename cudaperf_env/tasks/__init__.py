"""Tasks: the schema, loading and validation, and the bundled task files."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.tasks.loader import load_task, load_task_dir, parse_task
from cudaperf_env.tasks.schema import Arg, Implementation, Task, Tolerance

BUNDLED_DIR = Path(__file__).parent / "data"

__all__ = [
    "Arg",
    "BUNDLED_DIR",
    "Implementation",
    "Task",
    "Tolerance",
    "find_task",
    "load_task",
    "load_task_dir",
    "load_tasks",
    "parse_task",
]


@lru_cache(maxsize=8)
def _load_dir_cached(directory: str) -> dict[str, Task]:
    return load_task_dir(directory)


def load_tasks(task_dir: str | Path | None = None, kind: str | None = None) -> dict[str, Task]:
    """Tasks by id from ``task_dir`` (default: the bundled set), optionally of one kind."""
    tasks = _load_dir_cached(str(Path(task_dir or BUNDLED_DIR).resolve()))
    return {k: t for k, t in tasks.items() if kind is None or t.kind == kind}


def find_task(id_or_path: str, task_dir: str | Path | None = None) -> Task:
    """A task by id (from ``task_dir`` or the bundled set) or by the path of its file."""
    if id_or_path.endswith((".yaml", ".yml")) or Path(id_or_path).is_file():
        return load_task(id_or_path)
    tasks = load_tasks(task_dir)
    if id_or_path in tasks:
        return tasks[id_or_path]
    close = [t for t in tasks if id_or_path.split("/")[-1] in t]
    hint = f" Did you mean {', '.join(close[:3])}?" if close else " `cudaperf tasks list` shows the ids."
    raise TaskNotFoundError(f"no task {id_or_path!r}.{hint}")
