"""Labelling rate on one GPU: the labeller's options against the options of the shipped labels, same run.

Times a sample of ``--tasks`` dataset tasks once per variant, each with a fresh labeller
(input processes, worker) after one shared build of the implementations, and reports
per variant: tasks per second, the projected time for the whole dataset, where the
stream's time went (upload, trials, output check by configuration kind; library
loads; waiting for inputs), and whether the labels agree with the baseline's
(implementation pairs told apart by both, ordered the same way).

    python benchmarks/label_rate.py --tasks 100 --out benchmarks/results/label_rate.json

The sample is systematic over the per-task stream time of the shipped labels (every
k-th task in that order): the labelling cost is heavy-tailed (a few percent of the tasks
take most of the time), so the sample's mean cost, and the projection, match the
whole dataset's, which the first tasks of a random order would not.

Variants:
    baseline: the options the shipped labels were measured with (``BASELINE``).
    baseline_pageable: the same with plain (pageable) uploads, no page-locking.
    default: ``LabelOptions()``.
    default_pageable: ``LabelOptions()`` with pageable uploads.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import os
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.datagen.label import Labeller, LabelOptions, label_order
from cudaperf_env.dataset.gpu_labels import LABEL_FILES, distinguishable, perf_summary, read_stream
from cudaperf_env.dataset.load import DATA_FILE, load_dataset

SHIPPED_TIMING = TimingOptions(warmup=2, min_trials=5, max_trials=40, budget_s=1.0, target_rse=0.02, input_sets=1)
BASELINE = LabelOptions(timing=SHIPPED_TIMING, small_timing=SHIPPED_TIMING, worker_tasks=120)
PAGEABLE = 1 << 62
DEFAULT_VARIANTS = "baseline,default"
VARIANTS = {
    "baseline": BASELINE,
    "baseline_pageable": dataclasses.replace(BASELINE, pin_above_bytes=PAGEABLE),
    "default": LabelOptions(),
    "default_pageable": LabelOptions(pin_above_bytes=PAGEABLE),
}


def cost_sample(tasks: list, shipped: dict, n: int) -> list:
    """Every k-th task by its shipped stream time (unlabelled ones count as free), in labelling order."""
    by_cost = sorted(tasks, key=lambda t: (shipped.get(t.id, {}).get("seconds", 0.0), t.id))
    step = len(by_cost) / n
    return label_order([by_cost[int(k * step + step / 2)] for k in range(n)])


def summarize(records: list[dict], wall_s: float, total_tasks: int) -> dict:
    """Rate, projection and the stream's time by part, from one variant's records (pure)."""
    parts: Counter = Counter()
    for r in records:
        for c in r["configs"]:
            for phase, seconds in c["phases"].items():
                parts[f"{'perf' if c['kind'] == 'perf' else 'small'}.{phase}"] += seconds
            parts["requests"] += c.get("request_s", 0.0)
        for key in ("seconds", "load_s", "wait_s", "worker_start_s"):
            parts[key] += r.get(key, 0.0)
    labelled = [r for r in records if not r["error"]]
    summaries = [perf_summary(r) for r in labelled]
    return {
        "tasks": len(records),
        "errors": len(records) - len(labelled),
        "wall_s": round(wall_s, 1),
        "tasks_per_s": round(len(records) / wall_s, 3),
        "projected_dataset_min": round(total_tasks / (len(records) / wall_s) / 60, 1),
        # a full run is stream-bound once the pipeline has filled (waits here are the first tasks')
        "projected_dataset_min_stream": round(total_tasks * parts["seconds"] / max(1, len(records)) / 60, 1),
        "stream_s": {k: round(v, 1) for k, v in sorted(parts.items())},
        "distinguishable_tasks": sum(s["distinguishable"] for s in summaries),
        "distinguishable_pairs": sum(s["distinguishable_pairs"] for s in summaries),
        "pairs": sum(s["pairs"] for s in summaries),
    }


def agreement(reference: list[dict], other: list[dict]) -> dict:
    """Perf-configuration pairs told apart in both label sets, and the share ordered alike (pure)."""
    by_task = {r["task"]: r for r in reference if not r["error"]}
    both = same = 0
    for r in other:
        ref = by_task.get(r["task"])
        if ref is None or r["error"]:
            continue
        for a, b in zip(ref["configs"], r["configs"], strict=True):
            if a["kind"] != "perf":
                continue
            for x, y in itertools.combinations(sorted(a["impls"]), 2):
                if distinguishable(a["impls"][x], a["impls"][y]) and distinguishable(b["impls"][x], b["impls"][y]):
                    both += 1
                    same += (a["impls"][x]["median_ms"] < a["impls"][y]["median_ms"]) == (
                        b["impls"][x]["median_ms"] < b["impls"][y]["median_ms"])  # fmt: skip
    return {"pairs_told_apart_by_both": both, "ordered_alike": round(same / both, 4) if both else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--labels-dir", default=None, help="keep each variant's stream here (default: a temp dir)")
    parser.add_argument("--out", default="benchmarks/results/label_rate.json")
    args = parser.parse_args()

    console = Console()
    dataset = load_dataset(labels=False)
    shipped = read_stream(sorted(DATA_FILE.parent.glob(LABEL_FILES)))
    tasks = cost_sample(list(dataset.values()), shipped, args.tasks)
    shipped_s = sum(shipped[t.id]["seconds"] for t in tasks if t.id in shipped)
    console.print(f"{len(tasks)} tasks; their shipped stream time {shipped_s:.0f} s, "
                  f"{shipped_s / len(tasks):.2f} s per task (whole dataset: "
                  f"{sum(r.get('seconds', 0) for r in shipped.values()) / max(1, len(shipped)):.2f})")  # fmt: skip
    folder = Path(args.labels_dir or os.environ.get("TMPDIR", "/tmp")) / "label_rate"
    folder.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    builder = Labeller((args.device,), BASELINE)
    try:  # one build for every variant (content-cached), chunked exactly as Labeller.run chunks
        step = BASELINE.bundle_tasks
        list(builder.builds.map(builder._build, [tasks[k : k + step] for k in range(0, len(tasks), step)]))
    finally:
        builder.close()
    build_s = time.perf_counter() - started
    console.print(f"built {sum(len(t.implementations) for t in tasks)} implementations in {build_s:.0f} s")

    results, records = {}, {}
    for name in args.variants.split(","):
        out = folder / f"{name}.jsonl"
        out.unlink(missing_ok=True)
        labeller = Labeller((args.device,), VARIANTS[name])
        began = time.perf_counter()
        try:
            with Progress(console=console) as bar:
                job = bar.add_task(name, total=len(tasks))
                records[name] = labeller.run(tasks, out, progress=lambda r, job=job: bar.advance(job))
        finally:
            labeller.close()
        results[name] = summarize(records[name], time.perf_counter() - began, len(dataset))
        results[name]["load_average_1min"] = round(os.getloadavg()[0], 1)
        driver = labeller.driver
    first = next(iter(records))
    for name in records:
        results[name]["agreement_with_" + first] = agreement(records[first], records[name])

    device = next((r.get("device", {}) for rs in records.values() for r in rs if r.get("device")), {})
    report = {"card": device.get("name"), "driver": driver, "date": datetime.date.today().isoformat(),
              "cores": os.cpu_count(), "sample_tasks": len(tasks), "dataset_tasks": len(dataset),
              "sample_shipped_stream_s_per_task": round(shipped_s / len(tasks), 3),
              "build_s": round(build_s, 1), "variants": results}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")

    table = Table(title=f"labelling {len(tasks)} tasks on {report['card']} ({report['cores']} cores, {report['date']})")
    table.add_column("variant")
    for column in ("tasks/s", "dataset (min)", "stream-bound (min)", "perf upload s", "perf trials s",
                   "perf check s", "small s", "waiting s", "distinguishable", "ordered alike"):  # fmt: skip
        table.add_column(column, justify="right")
    for name, r in results.items():
        s = r["stream_s"]
        small = sum(v for k, v in s.items() if k.startswith("small."))
        alike = r["agreement_with_" + first]
        table.add_row(name, f"{r['tasks_per_s']:.2f}", f"{r['projected_dataset_min']:.1f}",
                      f"{r['projected_dataset_min_stream']:.1f}",
                      f"{s.get('perf.upload_s', 0):.0f}", f"{s.get('perf.trials_s', 0):.0f}",
                      f"{s.get('perf.check_s', 0):.0f}", f"{small:.0f}", f"{s.get('wait_s', 0):.0f}",
                      f"{r['distinguishable_tasks']}/{r['tasks'] - r['errors']}",
                      f"{alike['ordered_alike']} of {alike['pairs_told_apart_by_both']}")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main()
