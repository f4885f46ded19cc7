"""Median cost of analysing one submission, without the profiler (goal: under 0.2 s, issue #5).

Times ``cudaperf_env.analysis.analyze`` on the starter implementations, with
their compile-check reports made beforehand (the environment has them from
the compile check already), with an empty SASS cache, in these settings:

- ``static``: source features only (no compile report);
- ``cold``: static + compiler features, nothing cached: the SASS histogram read
  from the cubin's instruction words (the figure that counts);
- ``warm``: the same again, second pass;
- ``disassembled_cold``: the path before #5, for comparison in the same run: the
  cubin disassembled by nvdisasm (the word decoder switched off), cache empty;
- ``disassembled_warm``: that path with the histogram cached.

Each submission is timed in every setting before the next one is (fair on a
loaded machine). It also checks that both paths give identical features.

Run: ``python benchmarks/analysis_cost.py [--limit N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from unittest import mock

from rich.console import Console
from rich.table import Table

from cudaperf_env.analysis import analyze, compiler
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.compile_check import CompileReport, compile_check

GOAL_S = 0.2
SETTINGS = {
    "static": "static only",
    "cold": "+ compiler, SASS decoded, nothing cached",
    "warm": "+ compiler, SASS decoded, second pass",
    "disassembled_cold": "+ compiler, SASS by nvdisasm, cache empty (before #5)",
    "disassembled_warm": "+ compiler, SASS by nvdisasm, cached",
}


@contextmanager
def fresh_cache() -> Iterator[None]:
    """An empty ``$CUDAPERF_CACHE_DIR`` (SASS cache); the cubins stay where the reports say."""
    previous = os.environ.get("CUDAPERF_CACHE_DIR")
    with tempfile.TemporaryDirectory() as fresh:
        os.environ["CUDAPERF_CACHE_DIR"] = fresh
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("CUDAPERF_CACHE_DIR", None)
            else:
                os.environ["CUDAPERF_CACHE_DIR"] = previous


def disassembler_only() -> AbstractContextManager[object]:
    """The analysis as before #5: the instruction-word decoder gives up on every cubin."""
    return mock.patch.object(compiler, "decode_histogram", lambda data: None)


def timed(run: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def measure(cases: list[tuple[str, CompileReport]]) -> tuple[dict[str, list[float]], int, int]:
    """Seconds per setting and submission; submissions whose features differ between paths; decoder misses."""
    seconds: dict[str, list[float]] = {name: [] for name in SETTINGS}
    differ = misses = 0
    with fresh_cache():
        for source, report in cases:
            seconds["static"].append(timed(lambda s=source: analyze(s, None))[0])
            t, decoded = timed(lambda s=source, r=report: analyze(s, r))
            seconds["cold"].append(t)
            with disassembler_only():
                t, disassembled = timed(lambda s=source, r=report: analyze(s, r))
            seconds["disassembled_cold"].append(t)
            differ += decoded.as_dict() != disassembled.as_dict()  # type: ignore[attr-defined]
            misses += report.cubin is not None and compiler.decode_histogram(Path(report.cubin).read_bytes()) is None
        for source, report in cases:
            seconds["warm"].append(timed(lambda s=source, r=report: analyze(s, r))[0])
            with disassembler_only():
                seconds["disassembled_warm"].append(timed(lambda s=source, r=report: analyze(s, r))[0])
    return seconds, differ, misses


def machine() -> dict[str, object]:
    info = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), platform.processor())
    tool = compiler.find_tool("nvdisasm")
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout if tool else ""
    release = next((line.strip() for line in version.splitlines() if "release" in line), "not found")
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "nvdisasm": release}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="analyse only the first N implementations")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cases = [(impl.source, compile_check(wrap(task, impl.source)))
             for task in load_tasks(kind="c2cuda").values() for impl in task.implementations]
    cases = cases[: args.limit] if args.limit else cases
    seconds, differ, misses = measure(cases)
    result: dict[str, object] = {
        "submissions": len(cases),
        **machine(),
        **{f"{name}_median_s": statistics.median(runs) for name, runs in seconds.items()},
        **{f"{name}_max_s": max(runs) for name, runs in seconds.items()},
        "features_differ": differ,
        "decoder_misses": misses,
        "goal_s": GOAL_S,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    table = Table(title=f"analysis cost per submission ({len(cases)} starter implementations, no profiler; "
                        f"{result['cpu_count']} x {result['cpu']}, nvdisasm {result['nvdisasm']})")
    for column in ("setting", "median s", "max s", "goal s"):
        table.add_column(column)
    for name, label in SETTINGS.items():
        table.add_row(f"{name}: {label}", f"{statistics.median(seconds[name]):.4f}", f"{max(seconds[name]):.4f}",
                      f"< {GOAL_S}")
    console = Console()
    console.print(table)
    console.print(f"features differ between the two paths on {differ} of {len(cases)} submissions; "
                  f"the decoder fell back to nvdisasm on {misses}")


if __name__ == "__main__":
    main()
