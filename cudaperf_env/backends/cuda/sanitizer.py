"""An optional compute-sanitizer pass: memcheck and racecheck on the smallest configuration.

Canaries catch writes just past a buffer; memcheck also catches reads out of
bounds, misaligned accesses and writes far outside any allocation, and racecheck
finds shared-memory hazards (a missing ``__syncthreads``) that may happen to give
the right answer on one run. It is slow (the kernel runs instrumented), so it is
off by default and runs once, on the configuration with the fewest elements.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from cudaperf_env.errors import BackendUnavailableError

TOOLS = ("memcheck", "racecheck")
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) error")
_HAZARDS = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def find_sanitizer() -> str:
    """Path of compute-sanitizer: ``$CUDAPERF_SANITIZER``, PATH, or the CUDA toolkit's usual places."""
    candidates = [
        os.environ.get("CUDAPERF_SANITIZER", ""),
        shutil.which("compute-sanitizer") or "",
        "/usr/local/cuda/bin/compute-sanitizer",
        "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise BackendUnavailableError("compute-sanitizer not found: install the CUDA toolkit or set CUDAPERF_SANITIZER")


def sanitizer_command(tool: str, log: Path, sanitizer: str | None = None) -> list[str]:
    """The wrapper that runs the worker under ``tool``, its report in ``log``."""
    if tool not in TOOLS:
        raise ValueError(f"unknown sanitizer tool {tool!r}; choose from {TOOLS}")
    command = [sanitizer or find_sanitizer(), "--tool", tool, "--log-file", str(log), "--print-limit", "5",
               "--target-processes", "all"]  # fmt: skip
    if tool == "memcheck":  # a guard after every allocation: reads past the end land there, not in a neighbour
        command += ["--padding", "4096"]
    if tool == "racecheck":
        command += ["--racecheck-report", "hazard"]
    return command


def sanitizer_verdict(tool: str, log_text: str) -> str:
    """Empty when the report is clean; otherwise a short message quoting the first finding (pure)."""
    if tool == "memcheck":
        found = _ERRORS.search(log_text)
        count = int(found.group(1)) if found else None
    else:
        found = _HAZARDS.search(log_text)
        count = int(found.group(2)) if found else None  # errors; warnings are benign hazards
    if count is None:
        return f"compute-sanitizer {tool} did not finish (no summary in its report)"
    if count == 0:
        return ""
    return f"compute-sanitizer {tool}: {count} error(s); first: {first_finding(log_text)}"


def first_finding(log_text: str, max_lines: int = 4) -> str:
    """The first reported problem, without the ``========`` prefixes and host backtraces."""
    lines = [line.lstrip("= ").strip() for line in log_text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith(("Invalid", "Error", "Misaligned",
                  "Out-of-range", "Program hit")) or "hazard" in line.lower()), None)  # fmt: skip
    if start is None:
        return "(see the sanitizer report)"
    picked: Sequence[str] = [line for line in lines[start : start + max_lines] if line and "Host Frame" not in line]
    return " / ".join(picked)
