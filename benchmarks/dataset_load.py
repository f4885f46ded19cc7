"""Time loading the shipped C-to-CUDA dataset (target: the whole set in under 2 s).

Each measurement runs in a fresh interpreter, so nothing is cached; prints the
median of a few runs and the task count.

    python benchmarks/dataset_load.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import json, time
t0 = time.perf_counter()
from cudaperf_env.dataset import load_dataset
t1 = time.perf_counter()
tasks = load_dataset()
t2 = time.perf_counter()
train = load_dataset("train")
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "split_s": t3 - t2,
                  "tasks": len(tasks), "train": len(train)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh-interpreter runs")
    runs = parser.parse_args().runs
    results = [json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                         check=True).stdout) for _ in range(runs)]  # fmt: skip
    load = statistics.median(r["load_s"] for r in results)
    imp = statistics.median(r["import_s"] for r in results)
    split = statistics.median(r["split_s"] for r in results)
    print(f"tasks {results[0]['tasks']} (train {results[0]['train']}); median of {runs} fresh runs: "
          f"import {imp:.3f} s, load_dataset() {load:.3f} s, then load_dataset('train') {split * 1e3:.1f} ms "
          f"(target: whole set < 2 s)")  # fmt: skip


if __name__ == "__main__":
    main()
