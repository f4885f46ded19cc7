"""Every implementation of a sample of the bundled dataset through the CPU evaluator with the fidelity checks on.

One task per family (``--per-family``), starting at the ``--skip``-th of each; prints one JSON line per
implementation (status, message, race-check seconds) and a summary. No false race means every one is correct.

Run::

    python benchmarks/cpu_fidelity_dataset.py --per-family 1 --skip 0 > /tmp/fidelity_dataset.jsonl
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf_env.backends.cpu.backend import CpuBackend  # noqa: E402
from cudaperf_env.dataset.load import load_records  # noqa: E402
from cudaperf_env.evaluate import Evaluator  # noqa: E402
from cudaperf_env.tasks import parse_task  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=1, help="tasks per family")
    parser.add_argument("--skip", type=int, default=0, help="tasks skipped at the start of each family")
    args = parser.parse_args()
    seen: dict[str, int] = {}
    sample = []
    for record in load_records(labels=False):
        k = seen.get(record["family"], 0)
        seen[record["family"]] = k + 1
        if args.skip <= k < args.skip + args.per_family:
            sample.append(record)
    evaluator = Evaluator(CpuBackend(threads=1, timeout_s=30.0))
    correct = total = checked = 0
    started = time.time()
    for record in sample:
        task = parse_task(record, record["id"])
        for impl in task.implementations:
            e = evaluator.evaluate(task, impl.source, 7)
            total += 1
            correct += bool(e.correct)
            checked += "racecheck" in e.seconds
            print(json.dumps({"id": task.id, "impl": impl.name, "status": str(e.status), "message": e.message[:300],
                              "racecheck_s": round(e.seconds.get("racecheck", -1.0), 2)}), flush=True)
    print(json.dumps({"tasks": len(sample), "implementations": total, "correct": correct, "race_checked": checked,
                      "seconds": round(time.time() - started)}))


if __name__ == "__main__":
    main()
