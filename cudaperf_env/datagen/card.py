"""The dataset card (markdown), rendered from the statistics and the build report (pure)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CardWords:
    """What differs between the cards of the two families."""

    title: str
    reference: str
    data_file: str
    labels: str
    rebuild: str
    verification: str
    normalized: str = "normalizing names and numeric literals, also inside `#define` lines"


WORDS = {
    "c2cuda": CardWords(
        title="C-to-CUDA", reference="C reference", data_file="c2cuda.jsonl.gz",
        labels="cudaperf_env/tasks/data/dataset/labels-<card>.jsonl.gz",
        rebuild="cudaperf dataset build --per-family {per_family} --seed {seed}",
        verification="(nvcc compile check, CUDA-on-CPU build, all shown and hidden configurations)"),
    "torch2cuda": CardWords(
        title="PyTorch-to-CUDA", reference="PyTorch reference", data_file="torch2cuda.jsonl.gz",
        labels="cudaperf_env/tasks/data/dataset/torch2cuda/labels-<card>.jsonl.gz",
        rebuild="cudaperf dataset build --kind torch2cuda --per-family {per_family} --seed {seed}",
        verification="(expected outputs from the PyTorch `Model` in a trusted CPU torch process; nvcc compile "
                     "check, CUDA-on-CPU build, all shown and hidden configurations)",
        normalized="normalizing local names and numeric literals, called functions kept"),
}  # fmt: skip
"""Card wording per task kind (``report["kind"]``; reports written before it was recorded are c2cuda's)."""


def _table(header: tuple[str, str], rows: Mapping[str, Any]) -> list[str]:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---:|"]
    lines += [f"| {key} | {value} |" for key, value in rows.items()]
    return lines


def _bar_chart(histogram: list[list[float]], width: int = 40) -> list[str]:
    """A text bar chart of ``[[lower edge, count]...]`` (the last bin is open)."""
    top = max((count for _, count in histogram), default=0) or 1
    edges = [lo for lo, _ in histogram]
    names = [f"{lo:g}x - {hi:g}x" for lo, hi in itertools.pairwise(edges)] + [f">= {edges[-1]:g}x"]
    pad = max(len(n) for n in names)
    return [f"{name:>{pad}} | {'#' * round(count / top * width):<{width}} {count}"
            for name, (_, count) in zip(names, histogram, strict=True)]  # fmt: skip


def _gpu_section(labels: Mapping[str, Any], tasks: int, words: CardWords) -> list[str]:
    if not labels["tasks"]:
        return ["Not measured yet: no implementation carries a GPU timing label. Run the labeller "
                "(`python -m cudaperf_env.datagen.label`) on a GPU machine and commit its stream as "
                f"`{words.labels}`."]  # fmt: skip
    q, b = labels["best_speedup_quantiles"], labels["baseline_perf_ms"]
    return [
        f"- Labelled: {labels['tasks']} of {tasks} tasks, every implementation on every configuration (shown, "
        f"hidden and perf), on {', '.join(labels['cards'])} (driver {', '.join(labels['drivers'])}, "
        f"{', '.join(labels['dates'])}) with the GPU backend's timing (L2 flushed and inputs restored before every "
        "call, implementations interleaved).",
        f"- Distinguishable beyond noise (fastest and slowest implementation on every perf configuration: disjoint "
        f"5-95% intervals of the median and more than 3% apart): {labels['distinguishable_tasks']} of "
        f"{labels['tasks']} tasks ({labels['distinguishable_tasks'] / labels['tasks']:.1%}); pairs of "
        f"implementations: {labels['distinguishable_pairs']} of {labels['pairs']}.",
        f"- Implementations whose outputs differed from the baseline's in some elements on the GPU (float sums "
        f"reassociated over perf-size inputs; kept, with the count in their labels): "
        f"{labels['implementations_mismatched']}.",
        f"- The baseline's time on the perf configurations: min {b['min']} ms, 1st percentile {b['p1']} ms, "
        f"median {b['median']} ms, max {b['max']} ms (a launch costs a few microseconds).",
        f"- Best implementation over the naive baseline (geometric mean over perf configurations): median "
        f"{q['p50']}x; 10th-90th percentile {q['p10']}x-{q['p90']}x; largest {q['p100']}x.",
        "",
        "Tasks by the speedup of their best implementation over the naive one:",
        "",
        "```text",
        *_bar_chart(labels["best_speedup_histogram"]),
        "```",
        "",
        "In the first bin the naive kernel is already (within 3%) the fastest; the ranker still has the slower "
        "strategies to learn from.",
        "",
        "Per family: labelled tasks, tasks distinguishable beyond noise, median speedup of the best implementation.",
        "",
        "| family | labelled | distinguishable | median best speedup |",
        "|---|---:|---:|---:|",
        *[f"| {name} | {f['tasks']} | {f['distinguishable']} | {f['median_best_speedup']}x |"
          for name, f in labels["per_family"].items()],
    ]


def render_card(stats: Mapping[str, Any], report: Mapping[str, Any], kind: str | None = None) -> str:
    """The card's markdown; every figure comes from ``stats`` or ``report``.

    Args:
        stats: :func:`cudaperf_env.dataset.stats.dataset_stats` of the shipped records.
        report: The builder's report (``build-report.json``).
        kind: The task kind whose wording the card takes (default: the report's, else ``c2cuda``).
    """
    words = WORDS[kind or report.get("kind", "c2cuda")]
    check, perf = stats["check_config_elements"], stats["perf_config_elements"]
    splits = stats["splits"]
    lines = [
        f"# Dataset card: CudaPerf {words.title} (generated)",
        "",
        "Generated by `cudaperf dataset build`; do not edit by hand (rebuild instead).",
        "",
        "## Summary",
        "",
        f"- Tasks: {stats['tasks']} in {stats['families']} families; {stats['implementations']} CUDA "
        f"implementations (at least {stats['min_implementations_per_task']} per task, each with strategy tags).",
        f"- Configurations: at least {stats['min_configs_per_task']} shown and "
        f"{stats['min_hidden_configs_per_task']} hidden per task, plus large `perf_configs` for GPU timing.",
        f"- Splits: train {splits['train']}, validation {splits['validation']}, test {splits['test']} "
        f"(test holds the whole families {', '.join(stats['test_families']) or 'none'} plus held-out tasks "
        "of the other families).",
        f"- GPU-labelled tasks: {stats['gpu_labelled_tasks']}.",
        f"- Shipped now: {report['per_family']} candidates per family before dedupe and verification; "
        "the builder scales to the paper-size set by raising `--per-family` and registering more families.",
        "",
        "## Tasks per family",
        "",
        *_table(("family", "tasks"), stats["per_family"]),
        "",
        "## Tasks per output dtype",
        "",
        *_table(("dtype", "tasks"), stats["per_dtype"]),
        "",
        "## Implementations per strategy tag",
        "",
        *_table(("strategy", "implementations"), stats["per_strategy"]),
        "",
        "## Configuration sizes (elements of the largest buffer)",
        "",
        "| configurations | min | median | max |",
        "|---|---:|---:|---:|",
        f"| correctness (shown + hidden, CPU-verified) | {check['min']} | {check['median']} | {check['max']} |",
        f"| perf (GPU timing only) | {perf['min']} | {perf['median']} | {perf['max']} |",
        "",
        "## Candidates, duplicates and drops",
        "",
        f"- Candidates generated: {report['candidates']}; duplicates removed (same {words.reference} after "
        f"{words.normalized}): {report['duplicates']}; kept after "
        f"verification: {report['kept']}.",
        "- Each family enumerates its structural variants (operators, dtypes, layouts, boundary rules, masks, output "
        "forms ...) in a spread order, so its first candidates differ in structure; constants and sizes are drawn "
        "per candidate from the seed.",
        "- Verification: schema (`parse_task`), spread of the reference outputs on the first configuration "
        f"(two input seeds), then every implementation through the real pipeline on the CPU backend "
        f"{words.verification}.",
        f"- Verified: {'yes' if report['verified'] else 'no (generator check only)'}; slowest implementation "
        f"run per configuration: {report['slowest_config_s']} s; build took {report['build_seconds']} s "
        f"with {report['workers']} worker processes.",
        "",
        *_table(("drop reason", "tasks"), report["drops"] or {"(none)": 0}),
        "",
        "## GPU timings and speedup distribution",
        "",
        *_gpu_section(stats["gpu_labels"], stats["tasks"], words),
        "",
        "## How to rebuild",
        "",
        "```bash",
        words.rebuild.format(per_family=report["per_family"], seed=report["seed"]),
        "```",
        "",
        "The build is seeded and deterministic: the same seed, families and `--per-family` give a "
        f"byte-identical `{words.data_file}` and `splits.json`. Compiler outputs are cached under "
        "`~/.cache/cudaperf`, so a rebuild mostly re-runs the kernels; from an empty cache every implementation is "
        "compiled twice (the nvcc check and the CUDA-on-CPU build), which then dominates the build time. "
        "`--families` and `--out` build a subset elsewhere (a quick check of one family, or warming the cache).",
        "",
    ]
    return "\n".join(lines)
