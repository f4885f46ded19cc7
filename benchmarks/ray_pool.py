"""Evaluations per minute through the Ray pool against the thread path, at 1, 4 and 16 concurrent submissions.

Run on a GPU machine (all its GPUs become actors)::

    python benchmarks/ray_pool.py --out benchmarks/results/ray_pool.json

For each concurrency ``c`` a group of ``--group`` new submissions (distinct sources,
so no build-cache hits) of ``--task`` is judged twice: by ``Evaluator.evaluate_many``
with ``c`` threads in this process (the thread path), and by an ``EvaluatorPool``
whose actors each take ``c`` submissions at once (one actor per GPU). Both paths
are warmed first (harness build, perf inputs). ``--backend cpu`` runs the same
measurement without a GPU (a smoke run; CPU figures say nothing about the GPU path).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import time
from pathlib import Path

from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.integrations.ray import EvaluatorPool
from cudaperf_env.tasks import load_tasks


def group_of(source: str, size: int, tag: str) -> list[str]:
    """``size`` distinct submissions of one kernel (a comment makes each source new to the cache)."""
    return [f"```cuda\n// {tag} {k} {time.time_ns()}\n{source}```" for k in range(size)]


def per_minute(judge, replies: list[str]) -> tuple[float, list[str]]:
    """Evaluations per minute of one call of ``judge`` on ``replies``, and their statuses."""
    start = time.perf_counter()
    evaluations = judge(replies)
    return len(replies) / (time.perf_counter() - start) * 60, [str(e.status) for e in evaluations]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="c2cuda/saxpy_f32")
    parser.add_argument("--impl", default="naive")
    parser.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--group", type=int, default=16, help="submissions per measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--cpus-per-actor", type=float, default=4.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import ray

    task = load_tasks()[args.task]
    source = task.implementation(args.impl).source
    evaluator = Evaluator(make_backend(args.backend))
    evaluator.evaluate_many(task, group_of(source, 1, "warm"), seed=1)
    ray.init(include_dashboard=False, log_to_driver=False)
    result: dict[str, object] = {"task": args.task, "impl": args.impl, "backend": args.backend, "group": args.group,
                                 "date": datetime.date.today().isoformat(), "thread": {}, "ray": {}}  # fmt: skip
    for c in args.concurrency:
        threads = lambda replies, c=c: evaluator.evaluate_many(task, replies, seed=1, max_workers=c)  # noqa: E731
        rate, statuses = per_minute(threads, group_of(source, args.group, f"thread-{c}"))
        result["thread"][f"{c}_concurrent_evals_per_min"] = rate  # type: ignore[index]
        assert set(statuses) == {"ok"}, statuses
        pool = EvaluatorPool(args.backend, concurrency=c, cpus_per_actor=args.cpus_per_actor)
        pool.evaluate_many(task, group_of(source, len(pool), "warm"), seed=1)  # each actor's harness and inputs
        rate, statuses = per_minute(lambda replies, pool=pool: pool.evaluate_many(task, replies, seed=1),
                                    group_of(source, args.group, f"ray-{c}"))  # fmt: skip
        result["ray"][f"{c}_concurrent_evals_per_min"] = rate  # type: ignore[index]
        result["actors"] = len(pool)
        assert set(statuses) == {"ok"}, statuses
        pool.close()
        print(f"concurrency {c}: thread {result['thread']} ray {result['ray']}", flush=True)  # type: ignore[index]
    if args.backend == "cuda":
        e = evaluator.evaluate(task, group_of(source, 1, "device")[0], seed=1)
        drivers = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
        result.update(card=e.device.get("name"), driver=drivers[0] if drivers else "", gpus_on_machine=len(drivers))
    ray.shutdown()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
