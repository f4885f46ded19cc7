"""How long a GRPO step waits for grading: replies graded as they are written, or after each generation call.

Trains the same run once per setting and repeat (``--settings``, :data:`SETTINGS`: ``stream``
grades while generating, ``after`` after each call, ``beside`` as ``stream`` without pausing the
generation for timings; the order reversed every other repeat), each in a process of its own
with a cold build cache. Same model, tasks and seeds give the same replies and the same grades;
only when grading starts differs. Reported per setting: mean step time split into generation,
grading (wall span of each turn's grading), optimization, the wait (rollout time the generator
sat idle) and its share of the step; last, each setting's wait over ``after``'s. Grading while generating
would time kernels while the same GPU generates (``beside``) unless generation pauses for each
timing (``stream``: ``timings_alone``), so the benchmark also compares the speedups measured for
the same replies (step 1's replies are identical in every setting): the spread of
``log2(speedup in the setting / speedup after)`` says how much a setting disturbs the timings.

On a GPU, the ablation's training setup (``docs/grpo.md``) from its start model::

    python benchmarks/grpo_grading_wait.py --model /tmp/abl/start --steps 2 --settings stream after beside \\
        --json benchmarks/results/grpo_grading_wait_h100.json -- --backend cuda --generator merged \\
        --no-static-cache --rollout batched --group 8 --tasks-per-step 4 --max-tokens 768 --lr 5e-5 \\
        --temperature 0.7 --preset cudaperf

Arguments after ``--`` go to ``python -m agents.grpo.trainer`` unchanged.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SETTINGS = {"stream": ["--grade-while-generating", "--timings-alone"],
            "after": ["--no-grade-while-generating", "--timings-alone"],
            "beside": ["--grade-while-generating", "--no-timings-alone"]}
"""Each setting's trainer flags: ``beside`` also lets timings run beside the generation (no pauses)."""
KEYS = ("step_s", "generation_s", "evaluation_s", "optimization_s", "eval_wait_s", "eval_wait_share",
        "eval_hidden_share")  # fmt: skip


def train(setting: str, repeat: int, args: argparse.Namespace, extra: list[str], root: Path) -> dict[str, Any]:
    """One training run of ``args.steps`` steps; its metrics' means over the steps."""
    from agents.grpo.logbook import read_metrics

    out = root / f"{setting}-{repeat}"
    command = [sys.executable, "-m", "agents.grpo.trainer", "--out", str(out), "--model", args.model,
               "--steps", str(args.steps), "--seed", str(args.seed), "--save-every", str(args.steps),
               "--no-progress", "--no-tensorboard", *SETTINGS[setting], *extra]  # fmt: skip
    env = {**os.environ, "CUDAPERF_CACHE_DIR": str(root / f"cache-{setting}-{repeat}")}  # cold builds each run
    log = out.with_suffix(".log")
    with log.open("w") as f:
        done = subprocess.run(command, env=env, stdout=f, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{setting} run {repeat} failed (exit {done.returncode}); its log: {log}\n"
                         + log.read_text()[-3000:])  # fmt: skip
    rows = read_metrics(out / "metrics.jsonl")
    return {"setting": setting, "repeat": repeat, "steps": len(rows),
            **{k: sum(r[f"time/{k}"] for r in rows) / len(rows) for k in KEYS},
            "pass_rate": sum(r["pass_rate/turn"] for r in rows) / len(rows),
            "per_step": [{k: v for k, v in r.items() if k.startswith(("time/", "grade/seconds/", "pass_rate/"))}
                         for r in rows]}  # fmt: skip


def first_step_speedups(run_dir: Path) -> dict[tuple, float]:
    """Step 1's measured speedups by reply: ``(task, trajectory, turn, reply) -> speedup``."""
    from agents.records import read_records

    return {(r.task_id, r.trajectory, r.turn, r.reply): r.speedup
            for r in read_records(run_dir / "trajectories" / "step-000001.jsonl") if r.speedup}  # fmt: skip


def speedup_agreement(stream: dict[tuple, float], after: dict[tuple, float]) -> dict[str, Any]:
    """How the speedups of the replies timed in both settings differ: ``log2(stream / after)``."""
    logs = [math.log2(stream[k] / after[k]) for k in stream.keys() & after.keys()]
    if not logs:
        return {"replies": 0}
    return {"replies": len(logs), "median_log2": statistics.median(logs),
            "median_abs_log2": statistics.median(map(abs, logs)), "max_abs_log2": max(map(abs, logs))}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each setting's means over its runs, and the ratio of each setting's wait to ``after``'s."""
    settings = list(dict.fromkeys(r["setting"] for r in runs))
    means = {s: {k: sum(r[k] for r in runs if r["setting"] == s) / sum(r["setting"] == s for r in runs)
                 for k in KEYS} for s in settings}  # fmt: skip
    after = means.get("after", {}).get("eval_wait_s")
    return {**means, "wait_over_after": {s: means[s]["eval_wait_s"] / after for s in settings if after}}


def print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"GRPO step, means over {result['steps']} steps x {result['repeats']} runs (seconds)")
    for column in ("setting", *KEYS):
        table.add_column(column, justify="left" if column == "setting" else "right")
    for s in result["settings"]:
        table.add_row(s, *(f"{result['summary'][s][k]:.2f}" for k in KEYS))
    Console(width=160).print(table)
    print(f"wait over after's: {result['summary']['wait_over_after']}")
    print(f"speedups of the same replies, log2(setting / after), per repeat: {result['speedup_agreement']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a transformers model directory (the start model)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1, help="runs per setting (alternating which goes first)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["stream", "after"],
                        help="what to compare (the speedups are compared with after's; default: stream after)")
    parser.add_argument("--json", help="write the results here")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    runs, agreement = [], []
    with tempfile.TemporaryDirectory(prefix="grpo-grading-wait-") as tmp:
        for repeat in range(args.repeats):
            order = args.settings if repeat % 2 == 0 else args.settings[::-1]
            runs += [train(s, repeat, args, extra, Path(tmp)) for s in order]
            speedups = {s: first_step_speedups(Path(tmp) / f"{s}-{repeat}") for s in args.settings}
            agreement.append({s: speedup_agreement(speedups[s], speedups["after"])
                              for s in args.settings if s != "after" and "after" in speedups})  # fmt: skip
    from agents.grpo.ablation import device_info

    result = {"benchmark": "grpo_grading_wait", "date": datetime.date.today().isoformat(), "device": device_info(),
              "settings": args.settings,
              "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "steps": args.steps,
              "repeats": args.repeats, "runs": runs, "summary": summary(runs),
              "speedup_agreement": agreement}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print_table(result)


if __name__ == "__main__":
    main()
