"""Figures of a dataset (pure): counts per family, dtype and strategy, configuration sizes, labels, splits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from cudaperf_env.tasks.expressions import evaluate


def output_dtype(record: Mapping[str, Any]) -> str:
    """The dtype of a task's first ``out``/``inout`` buffer (its "dtype" in the statistics)."""
    return next(a["dtype"] for a in record["args"] if a["role"] in ("out", "inout"))


def largest_buffer(record: Mapping[str, Any], config: Mapping[str, int]) -> int:
    """Elements of the task's largest buffer under ``config``."""
    sizes = [1]
    for arg in record["args"]:
        if arg["role"] != "scalar":
            count = 1
            for dim in arg["shape"]:
                count *= int(evaluate(dim, config))
            sizes.append(count)
    return max(sizes)


def is_gpu_labelled(record: Mapping[str, Any]) -> bool:
    """Every implementation of the task carries at least one GPU timing label."""
    return all(impl.get("labels") for impl in record["implementations"])


def dataset_stats(records: Sequence[Mapping[str, Any]], splits: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Statistics of ``records`` (task mappings as shipped) and their ``splits``.

    Returns:
        A JSON-ready dict with at least ``tasks, families, min_configs_per_task,
        min_implementations_per_task, gpu_labelled_tasks, splits``.
    """
    check = [largest_buffer(r, c) for r in records for c in [*r["configs"], *r.get("hidden_configs", [])]]
    perf = [largest_buffer(r, c) for r in records for c in r.get("perf_configs", [])]
    strategies = Counter(s for r in records for i in r["implementations"] for s in i["strategies"])
    return {
        "tasks": len(records),
        "families": len({r["family"] for r in records}),
        "implementations": sum(len(r["implementations"]) for r in records),
        "min_configs_per_task": min((len(r["configs"]) for r in records), default=0),
        "min_hidden_configs_per_task": min((len(r.get("hidden_configs", [])) for r in records), default=0),
        "min_implementations_per_task": min((len(r["implementations"]) for r in records), default=0),
        "gpu_labelled_tasks": sum(is_gpu_labelled(r) for r in records),
        "splits": {name: len(splits.get(name, [])) for name in ("train", "validation", "test")},
        "test_families": sorted(splits.get("test_families", [])),
        "per_family": dict(sorted(Counter(r["family"] for r in records).items())),
        "per_dtype": dict(sorted(Counter(output_dtype(r) for r in records).items())),
        "per_strategy": dict(sorted(strategies.items())),
        "check_config_elements": _spread(check),
        "perf_config_elements": _spread(perf),
    }


def _spread(values: Sequence[int]) -> dict[str, int]:
    ordered = sorted(values)
    if not ordered:
        return {"min": 0, "median": 0, "max": 0}
    return {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}
