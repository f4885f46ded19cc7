"""Wall time of one GRPO group (G trajectories x T turns) of the embedded model, grading overlapped or not.

One task's group is rolled out the way the trainer rolls it out (``agents.rollout``: G replies
sampled in one call at turn 1, each trajectory refined with its feedback at later turns, to
``--turns`` turns as GRPO refines for speed), twice with the same seed: ``stream`` grades each
reply as soon as the policy has written it (``grade_while_generating``, the default), ``after``
grades a turn's replies once its generation call returns. The replies are the same in both (checked:
``same_replies``); each setting grades against a cold build cache of its own. Reported per setting
and turn: the turn's wall time, its generation time, and the time the generator sat waiting for
verdicts (turn wall - generation).

Measured on the 2-core development machine (2026-12-07, load average below 1.1, the embedded model
with the shipped adapter, CPU backend, ``c2cuda/map_binary_0001``, G=8, 3 turns, 768 tokens;
``benchmarks/results/grpo_group_cpu_2026-12-07.json``): a group takes 404 s (``stream``) and 398 s
(``after``) for the same 24 replies (8,827 tokens, 9 correct), generation 403 / 392 s: the generator
waited 1.1 s for verdicts while grading streamed, 5.5 s when it came after. On two cores the overlap
buys nothing: grading a turn takes 1-3 s against 80-170 s of generation, and beside it generation
itself is 3% slower.

Run: ``python benchmarks/grpo_group.py [--task ID] [--group 8] [--turns 3] [--max-tokens 512]
[--backend cpu] [--device cpu] --json OUT.json`` (the embedded model with its shipped adapter unless
``--model``/``--adapter``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import tempfile
import time
from typing import Any

SETTINGS = {"stream": True, "after": False}


def measure(policy: Any, task: Any, backend: str, group: int, turns: int, max_tokens: int, seed: int,
            stream: bool) -> dict[str, Any]:  # fmt: skip
    """Roll out one group; per turn: wall, generation and waiting seconds, plus the group's statuses."""
    from agents.policies.base import Sampling
    from agents.rollout import RolloutConfig, rollout
    from cudaperf_env.backends import make_backend
    from cudaperf_env.evaluate import Evaluator

    os.environ["CUDAPERF_CACHE_DIR"] = tempfile.mkdtemp(prefix="grpo-group-cache-")  # cold builds per setting
    evaluator = Evaluator(make_backend(backend))
    config = RolloutConfig(turns=turns, group=group, seed=seed, stop_when_correct=False, grade_while_generating=stream,
                           sampling=Sampling(max_tokens=max_tokens))  # fmt: skip
    marks = [time.perf_counter()]
    records = rollout(policy, task, evaluator, config, on_turn=lambda *_: marks.append(time.perf_counter()))
    wall = marks[-1] - marks[0]
    per_turn = []
    for number in range(1, len(marks)):
        rows = [r for r in records if r.turn == number]
        turn_wall, generation = marks[number] - marks[number - 1], rows[0].generate_seconds
        per_turn.append({"turn": number, "replies": len(rows), "wall_s": round(turn_wall, 2),
                         "generation_s": round(generation, 2), "grading_span_s": round(rows[0].grade_seconds, 2),
                         "waiting_s": round(max(0.0, turn_wall - generation), 2),
                         "tokens": sum(r.completion_tokens for r in rows)})  # fmt: skip
    waiting = sum(t["waiting_s"] for t in per_turn)
    replies = hashlib.sha256("\0".join(r.reply for r in records).encode()).hexdigest()[:16]
    return {"setting": "stream" if stream else "after", "group_wall_s": round(wall, 2),
            "generation_s": round(sum(t["generation_s"] for t in per_turn), 2), "waiting_s": round(waiting, 2),
            "waiting_share": round(waiting / wall, 3), "per_turn": per_turn,
            "statuses": sorted(r.status for r in records), "correct": sum(r.correct for r in records),
            "replies_sha256": replies}  # fmt: skip


def warm_up(task: Any, backend: str) -> None:
    """Grade the task's first implementation once (own cache): what a process measures once is not in either setting."""
    from cudaperf_env.backends import make_backend
    from cudaperf_env.evaluate import Evaluator

    os.environ["CUDAPERF_CACHE_DIR"] = tempfile.mkdtemp(prefix="grpo-group-cache-")
    Evaluator(make_backend(backend)).evaluate(task, f"```cuda\n{task.implementations[0].source}```", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="c2cuda/map_binary_0001", help="a task id (dataset or starter)")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=512, help="most new tokens per reply (GRPO's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--device", default="cpu", help="where the model generates")
    parser.add_argument("--model", help="model directory or .gguf file (default: the embedded model)")
    parser.add_argument("--adapter", help="LoRA adapter (default: the shipped one with the embedded model)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    import torch

    from agents.policies import make_policy
    from cudaperf_env.dataset import find_task

    task = find_task(args.task)
    load_before = os.getloadavg()
    policy = make_policy("transformers", args.model, adapter=args.adapter, device=args.device)
    warm_up(task, args.backend)
    rows = [measure(policy, task, args.backend, args.group, args.turns, args.max_tokens, args.seed, SETTINGS[s])
            for s in args.settings]  # fmt: skip
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor() or "cpu"
    result = {"benchmark": "grpo_group", "date": datetime.date.today().isoformat(), "device": device,
              "cpus": os.cpu_count(), "load_average": {"start": load_before, "end": os.getloadavg()},
              "model": policy.name, "task": task.id, "group": args.group, "turns": args.turns,
              "max_tokens": args.max_tokens, "backend": args.backend, "torch": torch.__version__,
              "same_replies": len({r["replies_sha256"] for r in rows}) == 1, "results": rows}  # fmt: skip
    for r in rows:
        print(f"{r['setting']:>6}: group {r['group_wall_s']:7.1f} s, generation {r['generation_s']:7.1f} s, "
              f"waiting for verdicts {r['waiting_s']:6.1f} s ({r['waiting_share']:.0%}), "
              f"{r['correct']} correct")  # fmt: skip
    print(f"same replies in every setting: {result['same_replies']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
