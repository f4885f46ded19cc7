"""GPU timing labels as data: the labeller's records, their noise tests, and how they fold into the dataset.

The labeller (``datagen/label.py``, on a GPU machine) writes one JSON record per task
to a stream. Streams committed next to the data file as ``labels-<card>.jsonl.gz``
are folded into the records' ``implementations[].labels`` when the dataset loads,
for the tasks whose content digest still matches (a rebuilt task is unlabelled
until it is timed again). Everything here is pure or plain file reading: no GPU.

One label is one implementation timed on one configuration::

    {"card": "NVIDIA H200", "driver": "580.159.04", "date": "2026-11-30",
     "kind": "perf", "config": {"N": 33554432}, "median_ms": 0.21,
     "lo_ms": 0.209, "hi_ms": 0.212, "trials": 5, "mismatched": 0}

``lo_ms``/``hi_ms`` bound the median (5-95% bootstrap); ``mismatched`` counts output
elements that differed from the baseline's beyond the task's tolerance on the device
(float sums reassociated over millions of elements do; timings of such an
implementation are kept, the count says how far it strays).
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cudaperf_env.tasks.schema import Task

LABEL_FILES = "labels-*.jsonl.gz"
"""Label streams shipped next to a data file."""

DEADBAND = 0.03
"""Timings closer than this (relative) are never told apart, whatever their intervals."""


def record_digest(record: Mapping[str, Any]) -> str:
    """Content hash of what a task's labels depend on: reference, configurations, implementations.

    Takes the task as stored (a data-file record); :func:`task_digest` gives the same
    hash for the parsed task.
    """
    content = {
        "reference": record["reference"]["source"],
        "configs": [record["configs"], record.get("hidden_configs", []), record.get("perf_configs", [])],
        "impls": [(i["name"], i["source"]) for i in record["implementations"]],
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=dict).encode()).hexdigest()[:20]


def task_digest(task: Task) -> str:
    """:func:`record_digest` of a parsed task."""
    return record_digest({
        "reference": {"source": task.reference_source},
        "configs": task.configs, "hidden_configs": task.hidden_configs, "perf_configs": task.perf_configs,
        "implementations": [{"name": i.name, "source": i.source} for i in task.implementations],
    })  # fmt: skip


def read_stream(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """Label records by task id from JSONL streams (``.gz`` too); later lines win; missing files skipped."""
    records: dict[str, dict[str, Any]] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            continue
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    records[record["task"]] = record
    return records


def median_interval(samples: Sequence[float], resamples: int = 400) -> tuple[float, float, float]:
    """Median and its 5%-95% bootstrap interval (pure; seeded)."""
    x = np.asarray(samples, float)
    rng = np.random.default_rng(0)
    boot = np.median(rng.choice(x, (resamples, x.size)), axis=1)
    return float(np.median(x)), float(np.quantile(boot, 0.05)), float(np.quantile(boot, 0.95))


def distinguishable(a: Mapping[str, float], b: Mapping[str, float], deadband: float = DEADBAND) -> bool:
    """Two timings differ beyond noise: disjoint intervals and medians further apart than ``deadband``."""
    fast, slow = sorted((a, b), key=lambda t: t["median_ms"])
    return fast["hi_ms"] < slow["lo_ms"] and slow["median_ms"] > fast["median_ms"] * (1 + deadband)


def perf_summary(record: Mapping[str, Any], deadband: float = DEADBAND) -> dict[str, Any]:
    """Per task, over its perf configurations: pairs of implementations told apart, and speedups.

    A task is *distinguishable* when its fastest and slowest implementations differ
    beyond noise on every perf configuration (the ranker has pairs to learn from).
    """
    perf = [c for c in record["configs"] if c["kind"] == "perf" and not c.get("mismatches")]
    pairs = told = 0
    extremes = []
    for c in perf:
        timings = list(c["impls"].values())
        for a, b in itertools.combinations(timings, 2):
            pairs += 1
            told += distinguishable(a, b, deadband)
        ordered = sorted(timings, key=lambda t: t["median_ms"])
        extremes.append(distinguishable(ordered[0], ordered[-1], deadband))
    return {"pairs": pairs, "distinguishable_pairs": told, "distinguishable": bool(extremes) and all(extremes)}


def best_speedup(record: Mapping[str, Any], baseline: str) -> float:
    """Geometric mean over perf configurations of baseline time / best implementation time."""
    ratios = [c["impls"][baseline]["median_ms"] / min(t["median_ms"] for t in c["impls"].values())
              for c in record["configs"] if c["kind"] == "perf" and baseline in c["impls"]]  # fmt: skip
    return float(np.exp(np.mean(np.log(ratios)))) if ratios else math.nan


def perf_medians(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{task: {impl: ms}}``: geometric mean over perf configurations (``structure_vs_speed --times``)."""
    out = {}
    for r in records:
        perf = [c for c in r["configs"] if c["kind"] == "perf"]
        if not perf or r.get("error"):
            continue
        names = perf[0]["impls"].keys()
        out[r["task"]] = {n: float(np.exp(np.mean([np.log(c["impls"][n]["median_ms"]) for c in perf])))
                          for n in names}  # fmt: skip
    return out


def implementation_labels(stream_record: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The labels of each implementation in one labeller record (see the module docstring)."""
    where = {"card": stream_record.get("device", {}).get("name") or "", "driver": stream_record.get("driver", ""),
             "date": stream_record.get("date", "")}  # fmt: skip
    labels: dict[str, list[dict[str, Any]]] = {}
    for c in stream_record["configs"]:
        for name, t in c["impls"].items():
            mismatched = sum(m["count"] for m in c.get("mismatches", {}).get(name, []))
            labels.setdefault(name, []).append({
                **where, "kind": c["kind"], "config": c["config"], "median_ms": t["median_ms"], "lo_ms": t["lo_ms"],
                "hi_ms": t["hi_ms"], "trials": t["trials"], "mismatched": mismatched,
            })  # fmt: skip
    return labels


def fold_labels(records: Iterable[dict[str, Any]], streams: Mapping[str, Mapping[str, Any]]) -> int:
    """Set ``implementations[].labels`` of every record whose stream entry matches its digest.

    Records without a matching, error-free entry keep the labels they carry. An
    implementation the labeller dropped (``dropped``: it did not build or load on the GPU)
    gets no labels. Returns the number of records labelled from ``streams``.
    """
    folded = 0
    for record in records:
        entry = streams.get(record["id"])
        if not entry or entry.get("error") or entry.get("digest") != record_digest(record):
            continue
        labels = implementation_labels(entry)
        names = {i["name"] for i in record["implementations"]}
        if labels.keys() - names or names - labels.keys() - entry.get("dropped", {}).keys():
            continue
        for impl in record["implementations"]:
            impl["labels"] = labels.get(impl["name"], [])  # none for one the labeller dropped
        folded += 1
    return folded


def record_timings(record: Mapping[str, Any]) -> dict[str, Any]:
    """A data-file record's labels regrouped as a labeller record (``configs`` of ``impls``).

    So the noise tests above apply to the shipped labels as well as to a fresh stream.
    """
    configs: dict[str, dict[str, Any]] = {}
    for impl in record["implementations"]:
        for label in impl.get("labels", []):
            key = json.dumps([label["kind"], label["config"]], sort_keys=True)
            c = configs.setdefault(key, {"kind": label["kind"], "config": label["config"], "impls": {},
                                         "mismatches": {}})  # fmt: skip
            c["impls"][impl["name"]] = label
            if label["mismatched"]:
                c["mismatches"][impl["name"]] = label["mismatched"]
    return {"task": record["id"], "configs": list(configs.values())}
