"""Verified knob variants merged into the dataset's tasks as extra implementations (for the labeller and the ranker).

The variant data file (``tasks/data/dataset/variants/c2cuda-variants.jsonl.gz``,
written by ``cudaperf dataset variants``) holds one verified-correct variant per
line: its task, id (``<implementation>~<knob>=<value>``, the implementation's
name in the merged task), base implementation and the base's source digest,
kind, knob, value, tags and source. Merging appends a task's variants to its
implementations (strategies: the base's, ``variant:<kind>`` and the tags);
a variant whose base changed since it was verified (digest mismatch) is left out.

GPU labels of the merged tasks are label streams of the labeller
(``python -m cudaperf_env.datagen.label --source variants``) kept next to the
variant file as ``labels-<card>.jsonl.gz``; they fold into a merged task when its
digest (reference, configurations and every implementation, variants included)
matches, exactly as the dataset's own streams do. Where none matches, the base
implementations keep the dataset's labels and the variants have none.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cudaperf_env.dataset.gpu_labels import LABEL_FILES, fold_labels, read_stream
from cudaperf_env.dataset.load import DATA_FILE, load_records, load_splits
from cudaperf_env.errors import TaskNotFoundError
from cudaperf_env.tasks import Task, parse_task
from cudaperf_env.text import source_digest

VARIANTS_DIR = DATA_FILE.parent / "variants"
VARIANTS_FILE = VARIANTS_DIR / "c2cuda-variants.jsonl.gz"


def read_variants(path: str | Path = VARIANTS_FILE) -> list[dict[str, Any]]:
    """The variant records of a variant data file, in file order."""
    path = Path(path)
    if not path.is_file():
        raise TaskNotFoundError(f"no variant file at {path}; write one with `cudaperf dataset variants --out {path}`")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def merge_records(records: Iterable[Mapping[str, Any]], variants: Iterable[Mapping[str, Any]],
                  task_ids: Collection[str] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Copies of the data-file ``records`` with their variants appended as implementations (pure).

    Only tasks in ``task_ids`` (all when None) get variants; a variant whose base is
    missing, whose base source changed (``base_digest``) or whose id is taken is skipped.
    """
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for v in variants:
        by_task.setdefault(v["task"], []).append(v)
    out = []
    for record in records:
        merged = {**record, "implementations": [dict(i) for i in record["implementations"]]}
        extra = by_task.get(record["id"], []) if task_ids is None or record["id"] in task_ids else []
        bases = {i["name"]: i for i in record["implementations"]}
        names = set(bases)
        for v in extra:
            base = bases.get(v["base"])
            if base is None or v["id"] in names or v.get("base_digest") != source_digest(base["source"]):
                continue
            names.add(v["id"])
            merged["implementations"].append({
                "name": v["id"], "source": v["source"],
                "strategies": [*base.get("strategies", []), f"variant:{v['kind']}", *v["tags"]],
            })  # fmt: skip
        out.append(merged)
    return out


def variant_count(task: Task) -> int:
    """Implementations of ``task`` that are knob variants (their names carry ``~``)."""
    return sum("~" in i.name for i in task.implementations)


def label_progress(tasks: Iterable[Task]) -> dict[str, int]:
    """How far GPU labelling of ``tasks`` (merged with their variants) has come.

    Returns ``dataset`` and ``variants`` (implementations with GPU labels, the dataset's own
    and knob variants), ``labelled`` (their sum), ``implementations`` (all) and
    ``tasks_left`` (tasks with an implementation still unlabelled). For the shipped data:
    ``label_progress(load_variant_tasks().values())``.
    """
    counts = {"dataset": 0, "variants": 0, "labelled": 0, "implementations": 0, "tasks_left": 0}
    for task in tasks:
        labelled = [bool(i.labels) for i in task.implementations]
        counts["variants"] += sum(has for has, i in zip(labelled, task.implementations, strict=True) if "~" in i.name)
        counts["labelled"] += sum(labelled)
        counts["implementations"] += len(labelled)
        counts["tasks_left"] += not all(labelled)
    counts["dataset"] = counts["labelled"] - counts["variants"]
    return counts


def label_streams(variants: str | Path = VARIANTS_FILE) -> list[Path]:
    """The variant label streams next to a variant file."""
    return sorted(Path(variants).parent.glob(LABEL_FILES))


def load_variant_tasks(split: str | None = None, variants: str | Path = VARIANTS_FILE,
                       labels: Sequence[str | Path] | None = None, dataset: str | Path = DATA_FILE,
                       only_with_variants: bool = False, fold: bool = True) -> dict[str, Task]:  # fmt: skip
    """Tasks by id (all, or one split) with their verified variants as extra implementations.

    Args:
        split: ``train``, ``validation``, ``test`` or None for every task. Only tasks of
            the split get variants, so a held-out family never gains one through another split.
        variants: Variant data file.
        labels: Variant label streams to fold (default: ``labels-*.jsonl.gz`` next to ``variants``).
        dataset: The data file the variants belong to (its own labels are folded first).
        only_with_variants: Leave out the tasks that got no variant (the labeller's units).
        fold: Fold GPU labels at all (the labeller does not need them).
    """
    records = load_records(dataset, labels=fold)
    ids = set(load_splits(dataset)[split]) if split is not None else None
    if ids is not None:
        records = [r for r in records if r["id"] in ids]
    merged = merge_records(records, read_variants(variants), ids)
    if fold:
        fold_labels(merged, read_stream(label_streams(variants) if labels is None else labels))
    tasks = {r["id"]: parse_task(r, f"{variants}:{r['id']}") for r in merged}
    return {i: t for i, t in tasks.items() if variant_count(t) or not only_with_variants}
