"""The bundled dataset's implementations through the CPU evaluator with the fidelity checks on (race checks too).

Two modes:

* a sample: one task per family (``--per-family``), starting at the ``--skip``-th of each; prints one
  JSON line per implementation (status, message, race-check seconds) and a summary. No false race
  means every one is correct. ``--variants``: tasks with knob variants, every variant evaluated too;
* ``--all``: every task, as the dataset builder verifies a candidate (``datagen.verify.verify_task``:
  every implementation on every shown and hidden configuration), over ``--workers`` processes, each
  verdict appended to ``--verdicts FILE`` as it comes (keyed by the task's digest, so a rerun goes on
  where the last stopped); ``--deadline-s`` starts no task after that many seconds. The summary
  counts the verdicts by reason and lists every task whose implementation failed.

Run::

    python benchmarks/cpu_fidelity_dataset.py --per-family 1 --skip 0 > /tmp/fidelity_dataset.jsonl
    python benchmarks/cpu_fidelity_dataset.py --per-family 1 --variants > /tmp/fidelity_variants.jsonl
    python benchmarks/cpu_fidelity_dataset.py --all --workers 16   # --verdicts: the committed log, resumed
"""

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf_env.backends.cpu.backend import CpuBackend  # noqa: E402
from cudaperf_env.dataset.load import load_records  # noqa: E402
from cudaperf_env.dataset.variants import load_variant_tasks  # noqa: E402
from cudaperf_env.evaluate import Evaluator  # noqa: E402
from cudaperf_env.tasks import parse_task  # noqa: E402


def sample(per_family: int, skip: int, variants: bool = False) -> None:
    """One JSON line per implementation of ``per_family`` tasks of each family, then a summary.

    With ``variants``: tasks that have knob variants (the train split's), each with all of them.
    """
    records = load_records(labels=False)
    variant_tasks = load_variant_tasks() if variants else {}
    if variants:
        records = [r for r in records if r["id"] in variant_tasks]
    seen: dict[str, int] = {}
    chosen = []
    for record in records:
        k = seen.get(record["family"], 0)
        seen[record["family"]] = k + 1
        if skip <= k < skip + per_family:
            chosen.append(record)
    evaluator = Evaluator(CpuBackend(threads=1, timeout_s=30.0))
    correct = total = checked = 0
    started = time.time()
    for record in chosen:
        task = variant_tasks.get(record["id"]) or parse_task(record, record["id"])
        for impl in task.implementations:
            e = evaluator.evaluate(task, impl.source, 7)
            total += 1
            correct += bool(e.correct)
            checked += "racecheck" in e.seconds
            print(json.dumps({"id": task.id, "impl": impl.name, "status": str(e.status), "message": e.message[:300],
                              "racecheck_s": round(e.seconds.get("racecheck", -1.0), 2)}), flush=True)
    print(json.dumps({"tasks": len(chosen), "implementations": total, "correct": correct, "race_checked": checked,
                      "seconds": round(time.time() - started)}))


def everything(workers: int, verdicts: Path, deadline_s: float | None) -> None:
    """Every task verified (resumable through ``verdicts``); a summary by reason."""
    from dataclasses import asdict

    from cudaperf_env.datagen.build import candidate_digest, read_verdicts, verify_all
    from cudaperf_env.datagen.verify import VerifyOptions

    options = VerifyOptions()
    records = load_records(labels=False)
    digests = {r["id"]: candidate_digest(r, options) for r in records}
    done = read_verdicts(verdicts)
    todo = [r for r in records if digests[r["id"]] not in done]
    started = time.time()
    print(f"{len(records)} tasks, {len(records) - len(todo)} verified before, {len(todo)} to go", file=sys.stderr)
    with verdicts.open("a", encoding="utf-8") as log:

        def keep(verdict) -> None:
            log.write(json.dumps({"digest": digests[verdict.task_id], **asdict(verdict)}) + "\n")
            log.flush()

        deadline = started + deadline_s if deadline_s is not None else float("inf")
        verify_all(todo, options, workers, on_done=keep, deadline=deadline)
    all_verdicts = read_verdicts(verdicts)
    mine = [all_verdicts[digests[r["id"]]] for r in records if digests[r["id"]] in all_verdicts]
    print(json.dumps({"tasks": len(records), "verified": len(mine), "kept": sum(v.ok for v in mine),
                      "by_reason": dict(Counter(v.reason or "ok" for v in mine)),
                      "failed": {v.task_id: v.detail[:300] for v in mine if v.reason == "implementation_failed"},
                      "seconds_now": round(time.time() - started)}, indent=1))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=1, help="tasks per family (sample mode)")
    parser.add_argument("--skip", type=int, default=0, help="tasks skipped at the start of each family")
    parser.add_argument("--variants", action="store_true", help="sample tasks with their knob variants (sample mode)")
    parser.add_argument("--all", action="store_true", help="every task of the dataset (resumable with --verdicts)")
    parser.add_argument("--workers", type=int, default=1, help="verification processes (with --all)")
    parser.add_argument("--verdicts", type=Path, default=Path("benchmarks/results/cpu_fidelity_dataset_all.jsonl"),
                        help="verdict log (with --all; appended, resumed)")
    parser.add_argument("--deadline-s", type=float, default=None, help="start no task after this long (with --all)")
    args = parser.parse_args()
    if args.all:
        everything(args.workers, args.verdicts, args.deadline_s)
    else:
        sample(args.per_family, args.skip, args.variants)


if __name__ == "__main__":
    main()
