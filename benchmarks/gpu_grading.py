"""Grading GRPO replies on one GPU: correctness runs sharing the card against one GPU phase at a time.

In the third GRPO pilot (docs/grpo.md) three training runs shared one H100 and each step
waited 21-53% of its time for grading; per reply, the ``run`` and ``timing`` stages took
up to 12 and 11 s while timing's own work took under 1 s: most of it was waiting for the
card's lock, which let one correctness run or timing at a time through. The lock now lets
correctness runs share the card (``CudaBackend.shared_runs``; a timing still has it to
itself). This script measures what that buys on the workload that asked for it: the
replies the embedded model wrote in that pilot (``benchmarks/data/grpo_replies_h100.jsonl.gz``:
two steps of one run, 2 turns x 32 replies each; compile errors, rejections, wrong answers,
crashes and correct kernels as the model made them), graded as the trainer grades them (one
``evaluate_batch`` per turn of 32 replies), by ``--processes`` processes at once (one per
training run sharing the GPU), with shared runs and without, alternating, ``--rounds`` times.

Every grading sees new sources (a comment naming the round, mode and process is added), so
no build comes from the cache of another. Reported per setting: the wall time of the slowest
process (median over rounds), replies graded per minute, the mean ``run`` and ``timing``
seconds per reply (and of the timing, how much was waiting for the card), how many failures
were judged again alone (``run_alone``: out of device memory beside other runs), and
whether every reply got the same status in both modes.

Run on a GPU machine: ``python benchmarks/gpu_grading.py --processes 1 3 --rounds 2 --json OUT.json``.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

REPLIES = Path(__file__).parent / "data" / "grpo_replies_h100.jsonl.gz"
FENCE = "```"


def load_replies(path: Path = REPLIES) -> list[dict[str, Any]]:
    """The recorded replies, in order (``step``, ``task_id``, ``turn``, ``reply``, ``status`` when recorded)."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def batches(replies: list[dict[str, Any]], limit: int = 0) -> list[list[dict[str, Any]]]:
    """The replies grouped as the trainer grades them: one batch per (step, turn), at most ``limit`` batches."""
    groups: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in replies:
        groups.setdefault((r["step"], r["turn"]), []).append(r)
    ordered = [groups[k] for k in sorted(groups)]
    return ordered[:limit] if limit else ordered


def marked(reply: str, tag: str) -> str:
    """``reply`` with a comment line ``// tag`` as the first line of its first code block (or before it all)."""
    start = reply.find(FENCE)
    if start < 0:
        return f"// {tag}\n{reply}"
    line_end = reply.find("\n", start)
    if line_end < 0:
        return f"// {tag}\n{reply}"
    return f"{reply[: line_end + 1]}// {tag}\n{reply[line_end + 1 :]}"


def grade(shared: bool, tag: str, replies: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """Grade every batch in this process (a fresh backend); wall time, statuses and mean stage seconds."""
    from cudaperf_env.backends.cuda.backend import CudaBackend
    from cudaperf_env.dataset import find_task
    from cudaperf_env.evaluate import Evaluator

    backend = CudaBackend(shared_runs=shared)
    evaluator = Evaluator(backend)
    tasks = {task_id: find_task(task_id) for task_id in {r["task_id"] for r in replies}}
    statuses: list[str] = []
    seconds: dict[str, list[float]] = {}
    alone = 0  # failures judged again alone (a peer may have caused them)
    started = time.perf_counter()
    try:
        for batch in batches(replies, limit):
            jobs = [(tasks[r["task_id"]], marked(r["reply"], f"{tag} {i}"), 0) for i, r in enumerate(batch)]
            for evaluation in evaluator.evaluate_batch(jobs):
                statuses.append(evaluation.status.value)
                for stage in ("run", "run_alone", "timing", "timing.lock_wait_s", "total"):
                    seconds.setdefault(stage, []).append(evaluation.seconds.get(stage, 0.0))
                alone += "run_alone" in evaluation.seconds
        wall_s = time.perf_counter() - started
    finally:
        backend.perf_inputs.clear()  # the timing inputs (GBs of tmpfs) go now, not when the backend is collected
    return {"wall_s": wall_s, "statuses": statuses, "judged_alone": alone,
            "seconds": {k: statistics.fmean(v) for k, v in seconds.items()}}  # fmt: skip


def one_setting(processes: int, shared: bool, round_: int, replies: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    """``processes`` processes grading the same replies at once (new sources each); their results."""
    mode = "shared" if shared else "exclusive"
    ctx = mp.get_context("spawn")
    with ctx.Pool(processes) as pool:
        args = [(shared, f"round {round_} {mode} process {p}", replies, limit) for p in range(processes)]
        started = time.perf_counter()
        results = pool.starmap(grade, args)
    return {"processes": processes, "mode": mode, "round": round_, "wall_s": time.perf_counter() - started,
            "per_process": results}  # fmt: skip


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (processes, mode): median wall time, replies per minute, mean run/timing seconds, status agreement."""
    rows = []
    for processes in sorted({r["processes"] for r in runs}):
        statuses: dict[str, list[list[str]]] = {}
        for mode in ("exclusive", "shared"):
            these = [r for r in runs if r["processes"] == processes and r["mode"] == mode]
            if not these:
                continue
            graded = sum(len(p["statuses"]) for p in these[0]["per_process"])
            wall = statistics.median(r["wall_s"] for r in these)
            per = [p for r in these for p in r["per_process"]]
            statuses[mode] = [p["statuses"] for p in per]
            rows.append({"processes": processes, "mode": mode, "replies": graded, "wall_s": wall,
                         "replies_per_min": graded / wall * 60,
                         "run_s_per_reply": statistics.fmean(p["seconds"]["run"] for p in per),
                         "timing_s_per_reply": statistics.fmean(p["seconds"]["timing"] for p in per),
                         "lock_wait_s_per_reply": statistics.fmean(p["seconds"].get("timing.lock_wait_s", 0.0)
                                                                   for p in per),
                         "judged_alone": sum(p.get("judged_alone", 0) for p in per)})  # fmt: skip
        if len(statuses) == 2:
            pairs = [(a, b) for x, y in zip(statuses["exclusive"], statuses["shared"], strict=True)
                     for a, b in zip(x, y, strict=True)]  # fmt: skip
            for row in rows[-2:]:
                row["same_status_share"] = sum(a == b for a, b in pairs) / len(pairs) if pairs else float("nan")
            rows[-1]["speedup_over_exclusive"] = rows[-2]["wall_s"] / rows[-1]["wall_s"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 3], help="processes grading at once")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each mode")
    parser.add_argument("--batches", type=int, default=0, help="grade only the first N batches of 32 (0: all 4)")
    parser.add_argument("--json", default="", help="write the results here")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from agents.grpo.ablation import device_info

    replies = load_replies()
    runs = []
    for round_ in range(args.rounds):
        for processes in args.processes:
            modes = (True, False) if round_ % 2 else (False, True)  # alternate which goes first
            for shared in modes:
                runs.append(one_setting(processes, shared, round_, replies, args.batches))
                last = runs[-1]
                print(f"round {round_}: {processes} process(es), {last['mode']}: {last['wall_s']:.1f} s", flush=True)
    rows = summary(runs)
    result = {"benchmark": "gpu_grading", "date": datetime.date.today().isoformat(), "device": device_info(),
              "replies": str(REPLIES.relative_to(Path(__file__).parent.parent)), "rounds": args.rounds,
              "summary": rows, "runs": runs}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    table = Table(title=f"grading GRPO replies on {result['device']['card']}")
    # per reply: run, timing and its wait for the card in seconds; "alone": failures judged again alone
    for column in ("procs", "mode", "replies", "wall s", "/min", "run", "timing", "wait", "alone", "same", "speedup"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(str(r["processes"]), r["mode"], str(r["replies"]), f"{r['wall_s']:.1f}",
                      f"{r['replies_per_min']:.0f}", f"{r['run_s_per_reply']:.2f}", f"{r['timing_s_per_reply']:.2f}",
                      f"{r['lock_wait_s_per_reply']:.2f}", str(r["judged_alone"]),
                      f"{r.get('same_status_share', float('nan')):.0%}",
                      f"{r['speedup_over_exclusive']:.2f}x" if "speedup_over_exclusive" in r else "")  # fmt: skip
    Console(width=max(100, Console().width)).print(table)


if __name__ == "__main__":
    main()
