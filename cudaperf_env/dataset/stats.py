"""Figures of a dataset (pure): counts per family, dtype and strategy, configuration sizes, labels, splits."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cudaperf_env.dataset.gpu_labels import best_speedup, perf_summary, record_timings
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


SPEEDUP_BINS = (1.0, 1.03, 1.5, 2, 4, 8, 16, 32, 64, 128)
"""Lower edges of the best-over-baseline speedup histogram (the first bin: within the noise deadband)."""


def label_stats(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures of the GPU timing labels of ``records``: where measured, noise, best-implementation speedups."""
    labelled = [r for r in records if is_gpu_labelled(r)]
    timings = [record_timings(r) for r in labelled]
    summaries = [perf_summary(t) for t in timings]
    best = [best_speedup(t, r["baseline"]) for t, r in zip(timings, labelled, strict=True)]
    speedups = sorted(x for x in best if not math.isnan(x))
    labels = [label for r in labelled for i in r["implementations"] for label in i["labels"]]
    edges = [*SPEEDUP_BINS, math.inf]
    families: dict[str, dict[str, Any]] = {}
    for r, summary, speedup in zip(labelled, summaries, best, strict=True):
        family = families.setdefault(r["family"], {"tasks": 0, "distinguishable": 0, "speedups": []})
        family["tasks"] += 1
        family["distinguishable"] += summary["distinguishable"]
        family["speedups"].append(speedup)
    per_family = {name: {"tasks": f["tasks"], "distinguishable": f["distinguishable"],
                         "median_best_speedup": round(float(np.nanmedian(f["speedups"])), 2)}
                  for name, f in sorted(families.items())}  # fmt: skip
    return {
        "tasks": len(labelled),
        "cards": sorted({label["card"] for label in labels}),
        "drivers": sorted({label["driver"] for label in labels}),
        "dates": sorted({label["date"] for label in labels}),
        "distinguishable_tasks": sum(s["distinguishable"] for s in summaries),
        "pairs": sum(s["pairs"] for s in summaries),
        "distinguishable_pairs": sum(s["distinguishable_pairs"] for s in summaries),
        "implementations_mismatched": sum(any(label["mismatched"] for label in i["labels"])
                                          for r in labelled for i in r["implementations"]),  # fmt: skip
        "best_speedup_quantiles": {f"p{q}": round(float(np.quantile(speedups, q / 100)), 2) if speedups else 0.0
                                   for q in (10, 25, 50, 75, 90, 100)},  # fmt: skip
        "best_speedup_histogram": [[lo, sum(lo <= x < hi for x in speedups)] for lo, hi in itertools.pairwise(edges)],
        "per_family": per_family,
        "baseline_perf_ms": _quantiles([label["median_ms"] for r in labelled for i in r["implementations"]
                                        if i["name"] == r["baseline"] for label in i["labels"]
                                        if label["kind"] == "perf"]),  # fmt: skip
    }


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    """Min, 1st percentile, median and max (4 significant digits); zeros when empty."""
    if not values:
        return {"min": 0.0, "p1": 0.0, "median": 0.0, "max": 0.0}
    q = np.quantile(values, [0, 0.01, 0.5, 1])
    return {k: float(f"{v:.4g}") for k, v in zip(("min", "p1", "median", "max"), q, strict=True)}


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
        "gpu_labels": label_stats(records),
    }


def _spread(values: Sequence[int]) -> dict[str, int]:
    ordered = sorted(values)
    if not ordered:
        return {"min": 0, "median": 0, "max": 0}
    return {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}
