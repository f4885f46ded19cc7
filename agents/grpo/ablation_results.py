"""The ablation's results: held-out metrics of each start and final checkpoint, intervals over seeds, curves.

Pure where it can be: :func:`headline`, :func:`mean_ci` and :func:`comparisons` take numbers,
reports and results; :func:`arm_result` reads the evaluation directories the driver wrote
(one ``report.json`` and ``trajectories.jsonl`` per checkpoint and seed, with every held-out
split in them, as ``cudaperf evaluate`` writes them) and the runs' ``metrics.jsonl``.

Two kinds of interval. ``summary`` is over seeds (a Student t interval of each seed's figure:
none for one seed, wide for two). ``comparisons`` pair two checkpoints on the same held-out
tasks of the same seeds (each task's samples, pooled over seeds): the difference of pass@1 and
of fast_1 with an interval from resampling whole tasks and an exact sign test
(:func:`cudaperf_env.comparison.paired_difference`), so even one seed says how much a
difference could be chance.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.grpo.logbook import read_metrics
from agents.metrics import is_fast
from agents.records import TurnRecord, read_records
from agents.report import best_by_turn
from cudaperf_env.comparison import paired_difference

METRICS = ("pass_at_1", "fast_1", "fast_1_5", "geomean_speedup")

PAIRED = ("pass_at_1", "fast_1")
"""Metrics compared sample by sample (each a per-sample credit: correct; correct and faster than the baseline)."""

REFERENCE_ARM = "speedup_only"
"""The arm every other arm is compared with: the reward of correctness and speedup alone."""

# Two-sided 95% Student t quantiles by degrees of freedom (n - 1); beyond the table, the normal's 1.96.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}

CURVE_KEYS = ("reward/total", "pass_rate/trajectory", "time/eval_wait_share")

STEP_TIMES = ("time/step_s", "time/generation_s", "time/evaluation_s", "time/optimization_s", "time/eval_wait_s",
              "time/eval_wait_share")  # fmt: skip


def headline(report: dict[str, Any]) -> dict[str, Any]:
    """pass@1, fast_1, fast_1.5, geomean speedup and correct-by-turn of one evaluation report."""
    return {
        "pass_at_1": report["pass_at_k"].get("1"),
        "fast_1": report["fast_p"].get("1.0"),
        "fast_1_5": report["fast_p"].get("1.5"),
        "geomean_speedup": report["geomean_speedup"],
        "correct_by_turn": [row["correct_by_turn"] for row in report["per_turn"]],
        "tasks": report["tasks"],
    }


def mean_ci(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean and 95% Student-t interval of the measured values (None skipped); no interval for one value."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return {"mean": None, "ci95": None, "n": 0}
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return {"mean": mean, "ci95": None, "n": 1}
    half = T95.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
    return {"mean": mean, "ci95": [mean - half, mean + half], "n": len(xs)}


def evaluation(directory: Path, splits: Sequence[str]) -> dict[str, Any] | None:
    """Held-out metrics over all ``splits`` together, plus each split's; None until the evaluation is done.

    ``directory`` holds the one ``report.json`` that ``cudaperf evaluate --split A --split B``
    wrote (its ``per_split`` section; with one split, the report is that split's).
    """
    path = directory / "report.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text(encoding="utf-8"))
    parts = report.get("per_split") or ({splits[0]: report} if len(splits) == 1 else {})
    if any(s not in parts for s in splits):
        return None
    trajectories = directory / "trajectories.jsonl"
    samples = sample_credits(trajectories) if trajectories.is_file() else {}
    return {**headline(report), "per_split": {s: headline(parts[s]) for s in splits}, "samples": samples}


def sample_credits(path: Path) -> dict[str, list[list[int]]]:
    """Each task's samples as ``[correct, fast_1]`` (0/1), in trajectory order, at the trajectory's best turn.

    A trajectory counts as the report counts it (:func:`agents.report.best_by_turn` at the last turn).
    """
    turns: dict[tuple[str, int], list[TurnRecord]] = {}
    for record in read_records(path):
        turns.setdefault((record.task_id, record.trajectory), []).append(record)
    last = max((r.turn for rs in turns.values() for r in rs), default=1)
    credits: dict[str, list[list[int]]] = {}
    for (task, _), records in sorted(turns.items()):
        correct, speedup = best_by_turn(sorted(records, key=lambda r: r.turn), last)
        credits.setdefault(task, []).append([int(correct), int(is_fast(correct, speedup, 1.0))])
    return credits


def compare(a: Sequence[dict[str, Any] | None], b: Sequence[dict[str, Any] | None],
            seeds: Sequence[int]) -> dict[str, Any] | None:  # fmt: skip
    """Checkpoints a against b (evaluations of the same ``seeds``, in order) on the tasks and samples both have.

    Sample ``i`` of a task in a is paired with sample ``i`` of it in b (independent draws: under equal
    per-task chances, a win and a loss are equally likely, so the sign test holds); a task of one seed
    is one resampling group. None where no seed has both evaluations with samples.
    """
    credits_a: list[list[int]] = []
    credits_b: list[list[int]] = []
    groups, used = [], []
    for seed, ea, eb in zip(seeds, a, b, strict=True):
        if not (ea and eb and ea.get("samples") and eb.get("samples")):
            continue
        used.append(seed)
        for task in sorted(ea["samples"].keys() & eb["samples"].keys()):
            pairs = list(zip(ea["samples"][task], eb["samples"][task], strict=False))
            credits_a += [x for x, _ in pairs]
            credits_b += [y for _, y in pairs]
            groups += [f"{seed}/{task}"] * len(pairs)
    if not groups:
        return None
    out: dict[str, Any] = {"seeds": used, "tasks": len(set(groups)), "samples": len(groups)}
    for column, metric in enumerate(PAIRED):
        out[metric] = paired_difference([x[column] for x in credits_a], [y[column] for y in credits_b], groups)
    return out


def comparisons(arms: Sequence[dict[str, Any]], reference: str = REFERENCE_ARM) -> list[dict[str, Any]]:
    """Each arm's final against its start model, and against the reference arm's final, paired by seed and task."""
    by_name = {arm["name"]: arm for arm in arms}
    out = []
    for arm in arms:
        seeds = [e["seed"] for e in arm["per_seed"]]
        finals = [e["final"] for e in arm["per_seed"]]
        found = compare(finals, [e["start"] for e in arm["per_seed"]], seeds)
        if found:
            out.append({"a": arm["name"], "b": "start", **found})
        if arm["name"] != reference and reference in by_name:
            theirs = {e["seed"]: e["final"] for e in by_name[reference]["per_seed"]}
            found = compare(finals, [theirs.get(s) for s in seeds], seeds)
            if found:
                out.append({"a": arm["name"], "b": reference, **found})
    return out


def step_times(run_dir: Path) -> dict[str, Any]:
    """Mean wall time per step (generation, evaluation, optimization) and share spent waiting for evaluation."""
    rows = read_metrics(run_dir / "metrics.jsonl")
    out: dict[str, Any] = {"steps_logged": len(rows)}
    for key in STEP_TIMES:
        vals = [r[key] for r in rows if r.get(key) is not None]
        out[key.split("/", 1)[1]] = sum(vals) / len(vals) if vals else None
    return out


def arm_result(name: str, preset: str, ranker: bool, seeds: Sequence[int], steps: int, runs: Path, evals: Path,
               splits: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    """One arm's entry of ``grpo_ablation.json``: per seed start/final held-out metrics, intervals over seeds."""
    per_seed: list[dict[str, Any]] = []
    for seed in seeds:
        run = runs / name / f"seed-{seed}"
        per_seed.append({"seed": seed, "start": evaluation(evals / "start" / f"seed-{seed}", splits),
                         "final": evaluation(evals / name / f"seed-{seed}", splits),
                         "step_times": step_times(run), "curve": curve(run)})  # fmt: skip
    return {"name": name, "preset": preset, "ranker": ranker, "seeds": list(seeds), "steps": steps,
            "per_seed": per_seed, "summary": summarize(per_seed)}  # fmt: skip


def summarize(per_seed: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and interval over seeds of each final metric and of its change from the start model."""
    summary: dict[str, Any] = {"final": {}, "delta": {}}
    for metric in METRICS:
        finals = [s["final"][metric] if s["final"] else None for s in per_seed]
        deltas = [s["final"][metric] - s["start"][metric] if _both(s, metric) else None for s in per_seed]
        summary["final"][metric] = mean_ci(finals)
        summary["delta"][metric] = mean_ci(deltas)
    return summary


def merge_arm(earlier: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``now``'s arm with the seeds it did not measure taken from ``earlier`` (the same arm, another session).

    A seed this run measured anything of (an evaluation or a logged step) keeps this run's entry.
    """
    kept = {e["seed"]: e for e in now["per_seed"] if measured(e)}
    for entry in earlier["per_seed"]:
        kept.setdefault(entry["seed"], entry)
    for entry in now["per_seed"]:
        kept.setdefault(entry["seed"], entry)
    per_seed = [kept[s] for s in sorted(kept)]
    return {**now, "seeds": sorted(kept), "per_seed": per_seed, "summary": summarize(per_seed)}


def measured(entry: dict[str, Any]) -> bool:
    """Whether a per-seed entry holds any measurement."""
    return bool(entry["start"] or entry["final"] or entry["step_times"].get("steps_logged"))


def _both(seed_entry: dict[str, Any], metric: str) -> bool:
    start, final = seed_entry["start"], seed_entry["final"]
    return bool(start and final and start[metric] is not None and final[metric] is not None)


def curve(run_dir: Path) -> list[dict[str, Any]]:
    """The run's :data:`CURVE_KEYS` per logged step (kept in the results, so merged sessions plot together)."""
    return [{"step": int(row["step"]), **{k: row.get(k) for k in CURVE_KEYS}}
            for row in read_metrics(run_dir / "metrics.jsonl")]  # fmt: skip


def plot_curves(arms: Sequence[dict[str, Any]], path: Path, keys: Sequence[str] = CURVE_KEYS) -> Path:
    """Training curves of the results' arms: each key against step, one line per arm (mean over its seeds)."""
    from matplotlib.ticker import MaxNLocator

    from agents.plots import _pyplot, _save

    plt = _pyplot()
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.5))
    for ax, key in zip(axes, keys, strict=True):
        for arm in arms:
            by_step: dict[int, list[float]] = {}
            for entry in arm["per_seed"]:
                for row in entry.get("curve", []):
                    if row.get(key) is not None:
                        by_step.setdefault(int(row["step"]), []).append(float(row[key]))
            steps = sorted(by_step)
            ax.plot(steps, [sum(by_step[s]) / len(by_step[s]) for s in steps], label=arm["name"], marker=".")
        ax.set(xlabel="step", title=key)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return _save(fig, plt, path)
