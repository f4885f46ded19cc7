"""Nsight Compute (``ncu``) metrics on a GPU: the command line, the CSV parser and derived features.

The GPU backend runs a submission once under :func:`ncu_command` and hands
its output to :func:`parse_ncu_csv`; :func:`profile_features` turns the
kernels' metrics into ``ncu_*`` features (source ``profiler``):

- ``ncu_load_sectors_per_request`` / ``ncu_store_sectors_per_request``: 32-byte
  sectors per global request; 4 is ideal for 4-byte lanes, 32 fully scattered;
- ``ncu_load_efficiency`` / ``ncu_store_efficiency``: bytes used per byte
  fetched, in [0, 1] (the coalescing the score uses);
- ``ncu_achieved_occupancy`` in [0, 1];
- ``ncu_dram_bytes``, ``ncu_flops`` and ``ncu_arithmetic_intensity`` (FLOP/byte: the roofline position);
- ``ncu_barrier_stall``: share of the cycles between issues a warp spends on barriers;
- ``ncu_time_ms``.

Sums are over the profiled kernels; ratios are traffic- or time-weighted.
Both of ncu's CSV layouts parse: ``--page details`` (one row per metric, the
default) and ``--page raw`` (one row per kernel, a units row under the header).
"""

from __future__ import annotations

import csv
import io
import math
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
LD_EFFICIENCY = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
ST_EFFICIENCY = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
TIME = "gpu__time_duration.sum"
BARRIER_STALL = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
WARPS_PER_ISSUE = "smsp__average_warps_active_per_issue_active.ratio"
# FLOPs per executed thread instruction of each kind (an FMA is two).
FLOP_METRICS = MappingProxyType({
    f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": flops
    for op, flops in (("fadd", 1), ("fmul", 1), ("ffma", 2), ("dadd", 1), ("dmul", 1), ("dfma", 2),
                      ("hadd", 1), ("hmul", 1), ("hfma", 2))
})
DEFAULT_METRICS: tuple[str, ...] = (
    TIME, LD_SECTORS, LD_REQUESTS, ST_SECTORS, ST_REQUESTS, LD_EFFICIENCY, ST_EFFICIENCY, OCCUPANCY,
    DRAM_READ, DRAM_WRITE, BARRIER_STALL, WARPS_PER_ISSUE, *FLOP_METRICS,
)
_UNIT_SCALE = {
    "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3,
    "nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9,
}


@dataclass(frozen=True)
class KernelProfile:
    """One profiled kernel launch.

    Attributes:
        kernel: The kernel's name as ncu prints it (demangled).
        launch: ncu's launch ID.
        block: Block size as printed, ``"(256, 1, 1)"``.
        grid: Grid size as printed.
        metrics: Metric values in base units (bytes, nanoseconds; percentages as printed).
    """

    kernel: str
    launch: int
    block: str = ""
    grid: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)


def find_ncu() -> str | None:
    """Path of ncu: ``$CUDAPERF_NCU`` or PATH (it ships with the CUDA toolkit, not a wheel)."""
    override = os.environ.get("CUDAPERF_NCU", "")
    if override and os.access(override, os.X_OK):
        return override
    return shutil.which("ncu")


def ncu_command(
    program: Sequence[str],
    *,
    ncu: str = "ncu",
    metrics: Iterable[str] = DEFAULT_METRICS,
    kernel_regex: str | None = None,
    launch_skip: int = 0,
    launch_count: int | None = None,
) -> list[str]:
    """The ncu command line that profiles ``program`` and prints CSV on stdout.

    Args:
        program: The command to profile (e.g. ``[python, worker.py, ...]``).
        ncu: Path of ncu.
        metrics: Metric names to collect.
        kernel_regex: Profile only kernels whose name matches (``regex:`` filter).
        launch_skip: Kernel launches to skip before profiling (warm-up).
        launch_count: Launches to profile (None: all).

    Raises:
        ValueError: For an empty program or metric list, or a negative skip.
    """
    wanted = list(metrics)
    if not program or not wanted:
        raise ValueError("ncu_command needs a program to run and at least one metric")
    if launch_skip < 0 or (launch_count is not None and launch_count <= 0):
        raise ValueError(f"launch_skip must be >= 0 and launch_count > 0, got {launch_skip}, {launch_count}")
    cmd = [ncu, "--csv", "--page", "details", "--print-units", "base", "--target-processes", "all",
           "--metrics", ",".join(wanted)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    return [*cmd, "--", *program]


def parse_value(raw: str, unit: str = "") -> float:
    """A metric value as a float in base units (``"1,234.5"`` -> 1234.5); NaN for ``n/a`` and the like."""
    try:
        value = float(raw.replace(",", "").strip())
    except ValueError:
        return math.nan
    return value * _UNIT_SCALE.get(unit.strip().lower(), 1.0)


def parse_ncu_csv(output: str) -> tuple[KernelProfile, ...]:
    """Kernels and metrics from ncu's ``--csv`` output (lines before the header are skipped).

    Returns:
        One profile per launch ID, in order; empty when no CSV header is found.
    """
    lines = output.splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return ()
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    body = [r for r in rows[1:] if len(r) == len(header)]
    if "Metric Name" in header:
        return _parse_details(header, body)
    return _parse_raw(header, body)


def _parse_details(header: list[str], body: list[list[str]]) -> tuple[KernelProfile, ...]:
    col = {name: k for k, name in enumerate(header)}
    found: dict[int, dict[str, object]] = {}
    for row in body:
        launch = _int(row[col["ID"]])
        entry = found.setdefault(launch, {
            "kernel": row[col["Kernel Name"]], "block": _get(row, col, "Block Size"),
            "grid": _get(row, col, "Grid Size"), "metrics": {},
        })
        name = row[col["Metric Name"]]
        if name:
            unit = _get(row, col, "Metric Unit")
            entry["metrics"][name] = parse_value(row[col["Metric Value"]], unit)  # type: ignore[index]
    return tuple(
        KernelProfile(str(e["kernel"]), launch, str(e["block"]), str(e["grid"]), MappingProxyType(dict(e["metrics"])))  # type: ignore[call-overload]
        for launch, e in found.items()
    )


def _parse_raw(header: list[str], body: list[list[str]]) -> tuple[KernelProfile, ...]:
    col = {name: k for k, name in enumerate(header)}
    units = [""] * len(header)
    if body and not body[0][col["ID"]].strip():
        units, body = body[0], body[1:]
    metric_cols = [k for k, name in enumerate(header) if "__" in name]
    profiles = []
    for row in body:
        metrics = {header[k]: parse_value(row[k], units[k]) for k in metric_cols}
        profiles.append(KernelProfile(
            row[col["Kernel Name"]] if "Kernel Name" in col else "", _int(row[col["ID"]]),
            _get(row, col, "Block Size"), _get(row, col, "Grid Size"), MappingProxyType(metrics),
        ))
    return tuple(profiles)


def _get(row: list[str], col: Mapping[str, int], name: str) -> str:
    return row[col[name]] if name in col else ""


def _int(raw: str) -> int:
    try:
        return int(raw.replace(",", ""))
    except ValueError:
        return -1


def profile_features(profiles: Sequence[KernelProfile]) -> dict[str, float]:
    """The ``ncu_*`` features of the profiled kernels (metrics that were not collected are left out)."""
    if not profiles:
        return {}

    def total(metric: str) -> float:
        values = [p.metrics.get(metric, math.nan) for p in profiles]
        finite = [v for v in values if math.isfinite(v)]
        return sum(finite) if finite else math.nan

    def weighted(metric: str, by: str) -> float:
        pairs = [(p.metrics.get(metric, math.nan), p.metrics.get(by, math.nan)) for p in profiles]
        pairs = [(v, w) for v, w in pairs if math.isfinite(v) and math.isfinite(w) and w > 0]
        weight = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / weight if weight else math.nan

    time_ns = total(TIME)
    dram = total(DRAM_READ) + total(DRAM_WRITE)
    counted = [total(m) * k for m, k in FLOP_METRICS.items() if math.isfinite(total(m))]
    flops = sum(counted) if counted else math.nan
    stall = weighted(BARRIER_STALL, TIME)
    per_issue = weighted(WARPS_PER_ISSUE, TIME)
    features = {
        "ncu_time_ms": time_ns / 1e6,
        "ncu_load_sectors_per_request": total(LD_SECTORS) / total(LD_REQUESTS) if total(LD_REQUESTS) else math.nan,
        "ncu_store_sectors_per_request": total(ST_SECTORS) / total(ST_REQUESTS) if total(ST_REQUESTS) else math.nan,
        "ncu_load_efficiency": weighted(LD_EFFICIENCY, LD_SECTORS) / 100,
        "ncu_store_efficiency": weighted(ST_EFFICIENCY, ST_SECTORS) / 100,
        "ncu_achieved_occupancy": weighted(OCCUPANCY, TIME) / 100,
        "ncu_dram_bytes": dram,
        "ncu_flops": flops,
        "ncu_arithmetic_intensity": flops / dram if dram > 0 and math.isfinite(flops) else math.nan,
        "ncu_barrier_stall": stall / per_issue if per_issue > 0 else math.nan,
    }
    return {k: v for k, v in features.items() if math.isfinite(v)}
