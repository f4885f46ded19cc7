"""Do the compiler's features help the ranker? Trees with and without them, on the same pairs.

The compiler features (``compiler/…``: ptxas registers, spills, shared memory and barriers,
occupancy, and the SASS histogram: global loads and stores and their 128-bit share, shared
loads and stores, local memory, shuffles, votes, barriers, atomics, FMAs) cost an nvcc run per
implementation (about 1 s), so the shipped model does without them. Both arms are the shipped
training settings (``TrainConfig()``) on the dataset's own implementations (the knob variants
are not compiled), one with ``sources=static,parallelism`` (shipped), one with
``static,compiler,parallelism``; measured as ``ranker_feature_cv.py`` measures: leave-families-out
CV over the train split (5 folds) and the test split's perf pairs (all, the held-out families,
per family). Only tasks whose every implementation has compiler features in ``--features``
take part (the file may still be growing; the count is in the output).

Records: ``python -m cudaperf_env.ranker.features --compiler --workers N --out F --done F.done``
(resumable; 9,337 implementations, about 1 s each on a core).

Run: ``python benchmarks/ranker_compiler_cv.py --features F [--out FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform

from ranker_feature_cv import measure, run_arms

from cudaperf_env.dataset import load_dataset
from cudaperf_env.ranker.features import read_records
from cudaperf_env.ranker.train import TrainConfig
from cudaperf_env.tasks.schema import Implementation, Task
from cudaperf_env.text import source_digest


def compiled_tasks(tasks: dict[str, Task], records: dict) -> dict[str, Task]:
    """The tasks whose every implementation has a record with compiler features (of its current source)."""

    def compiled(task_id: str, impl: Implementation) -> bool:
        record = records.get((task_id, impl.name))
        return bool(record and record.get("compiler") and record.get("digest") == source_digest(impl.source))

    return {i: t for i, t in tasks.items() if all(compiled(i, impl) for impl in t.implementations)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", required=True, help="feature records made with --compiler")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    records = read_records(args.features)
    all_train, all_test = load_dataset("train"), load_dataset("test")
    train, test = compiled_tasks(all_train, records), compiled_tasks(all_test, records)
    shipped = TrainConfig()
    arms = {"without": shipped, "with": dataclasses.replace(shipped, sources=("static", "compiler", "parallelism"))}
    result: dict = {"tasks": {"train": f"{len(train)} of {len(all_train)}", "test": f"{len(test)} of {len(all_test)}"},
                    "implementations": sum(len(t.implementations) for t in [*train.values(), *test.values()]),
                    "machine": f"{platform.machine()} CPU, Python {platform.python_version()}",
                    "date": datetime.date.today().isoformat()}  # fmt: skip
    print(f"tasks with compiler features: train {result['tasks']['train']}, test {result['tasks']['test']}")
    run_arms({name: lambda c=config: measure(c, train, test, records) for name, config in arms.items()}, result,
             args.out)  # fmt: skip

if __name__ == "__main__":
    main()
