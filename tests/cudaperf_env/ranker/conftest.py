"""Small labelled tasks for the ranker's tests: a saxpy with three launch shapes and made-up H200-style timings."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cudaperf_env.tasks import Task, parse_task

SAXPY = Path(__file__).resolve().parents[3] / "cudaperf_env" / "tasks" / "data" / "c2cuda" / "saxpy_f32.yaml"

GRID_STRIDE = """
__global__ void k(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<264, 256>>>(n, a, x, y); }
"""
PER_ELEMENT = """
__global__ void k(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<(n + 255) / 256, 256>>>(n, a, x, y); }
"""
SINGLE_THREAD = """
__global__ void k(int n, float a, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) { k<<<1, 1>>>(n, a, x, y); }
"""
SOURCES = {"per_element": PER_ELEMENT, "grid_stride": GRID_STRIDE, "single_thread": SINGLE_THREAD}


def label(kind: str, config: dict[str, int], ms: float, spread: float = 0.005) -> dict[str, Any]:
    """One timing label (interval ``ms * (1 -+ spread)``)."""
    return {"card": "NVIDIA H200", "driver": "580.159.04", "date": "2026-11-30", "kind": kind, "config": config,
            "median_ms": ms, "lo_ms": ms * (1 - spread), "hi_ms": ms * (1 + spread), "trials": 9, "mismatched": 0}


def saxpy_record(task_id: str, family: str, times: dict[str, float] | None = None) -> dict[str, Any]:
    """A saxpy task record whose three implementations carry labels on every configuration.

    ``times``: per implementation, its time on the largest perf configuration; smaller
    configurations scale it by their size (the single thread scales worst).
    """
    data = yaml.safe_load(SAXPY.read_text())
    data = copy.deepcopy(data)
    data["id"], data["family"], data["baseline"] = task_id, family, "per_element"
    times = times or {"per_element": 1.0, "grid_stride": 0.8, "single_thread": 400.0}
    kinds = [("shown", c) for c in data["configs"]] + [("hidden", c) for c in data.get("hidden_configs", [])]
    kinds += [("perf", c) for c in data.get("perf_configs", [])]
    largest = max(c["N"] for _, c in kinds)
    data["implementations"] = [
        {"name": name, "strategies": ["thread-per-element"], "source": source,
         "labels": [label(kind, c, 0.003 + ms * c["N"] / largest) for kind, c in kinds]}
        for name, source in SOURCES.items() for ms in [times[name]]
    ]  # fmt: skip
    return data


@pytest.fixture
def saxpy_task() -> Task:
    return parse_task(saxpy_record("c2cuda/fixture_saxpy", "fixture"))


@pytest.fixture
def fixture_dataset(tmp_path: Path) -> Path:
    """A 6-task dataset file (two families) with ``splits.json``: family ``fa`` trains, ``fb`` is held out."""
    records = []
    for n in range(6):
        family = "fa" if n < 4 else "fb"
        scale = 1.0 + 0.1 * n
        records.append(saxpy_record(f"c2cuda/fixture_{n:03d}", family, {
            "per_element": scale, "grid_stride": 0.8 * scale, "single_thread": 300.0 * scale}))  # fmt: skip
    path = tmp_path / "c2cuda.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    splits = {"train": [r["id"] for r in records[:3]], "validation": [records[3]["id"]],
              "test": [r["id"] for r in records[4:]]}  # fmt: skip
    (tmp_path / "splits.json").write_text(json.dumps(splits))
    return path
