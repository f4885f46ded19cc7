"""The ncu command line and CSV parser, on samples written by hand in ncu's documented CSV layouts."""

from __future__ import annotations

import math

import pytest

from cudaperf_env.analysis import analyze
from cudaperf_env.analysis.profiler import (
    DEFAULT_METRICS,
    KernelProfile,
    ncu_command,
    parse_ncu_csv,
    parse_value,
    profile_features,
)

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
)


def row(launch: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{launch}","4242","python3.11","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(4096, 1, 1)",'
            f'"0","9.0","Command line profiler metrics","{metric}","{unit}","{value}"')


COPY = "copy(const float *, float *, int)"
STRIDED = "strided_copy(const float *, float *, int)"
DETAILS = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3.11)",
    '==PROF== Profiling "copy" - 0: 0%....50%....100% - 9 passes',
    "program output that is not CSV",
    HEADER,
    row(0, COPY, "gpu__time_duration.sum", "nsecond", "12,000"),
    row(0, COPY, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "131,072"),
    row(0, COPY, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "32,768"),
    row(0, COPY, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "%", "100"),
    row(0, COPY, "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "85.5"),
    row(0, COPY, "dram__bytes_read.sum", "byte", "4,194,304"),
    row(0, COPY, "dram__bytes_write.sum", "byte", "4,194,304"),
    row(0, COPY, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "1,048,576"),
    row(0, COPY, "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "ratio", "n/a"),
    row(1, STRIDED, "gpu__time_duration.sum", "nsecond", "36,000"),
    row(1, STRIDED, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "1,048,576"),
    row(1, STRIDED, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "32,768"),
    row(1, STRIDED, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "%", "12.5"),
    row(1, STRIDED, "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "40.5"),
])

RAW = "\n".join([
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","dram__bytes_read.sum","gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active"',
    '"","","","","","","","","","","","Mbyte","usecond","%"',
    f'"0","4242","python3.11","host","{COPY}","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","1.50","2.25","50"',
])


def test_details_layout_gives_one_profile_per_launch():
    copy, strided = parse_ncu_csv(DETAILS)
    assert (copy.kernel, copy.launch, copy.block, copy.grid) == (COPY, 0, "(256, 1, 1)", "(4096, 1, 1)")
    assert copy.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == 131072
    assert math.isnan(copy.metrics["smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"])
    assert strided.kernel == STRIDED and strided.metrics["gpu__time_duration.sum"] == 36000


def test_raw_layout_with_a_units_row_is_scaled_to_base_units():
    (profile,) = parse_ncu_csv(RAW)
    assert profile.metrics["dram__bytes_read.sum"] == pytest.approx(1.5e6)
    assert profile.metrics["gpu__time_duration.sum"] == pytest.approx(2250.0)
    assert profile.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"] == 50.0


def test_features_of_a_coalesced_and_a_strided_kernel():
    copy, strided = parse_ncu_csv(DETAILS)
    good, bad = profile_features([copy]), profile_features([strided])
    assert good["ncu_load_sectors_per_request"] == 4.0 and bad["ncu_load_sectors_per_request"] == 32.0
    assert good["ncu_load_efficiency"] == 1.0 and bad["ncu_load_efficiency"] == 0.125
    assert good["ncu_achieved_occupancy"] == pytest.approx(0.855)
    assert good["ncu_flops"] == 2 * 1048576 and good["ncu_dram_bytes"] == 8388608
    assert good["ncu_arithmetic_intensity"] == pytest.approx(0.25)
    assert good["ncu_time_ms"] == pytest.approx(0.012)
    assert "ncu_barrier_stall" not in good  # n/a: left out, not 0
    both = profile_features([copy, strided])
    assert both["ncu_load_sectors_per_request"] == pytest.approx((131072 + 1048576) / 65536)


def test_profiler_features_take_precedence_in_the_score():
    code = "__global__ void copy(const float* x, float* y, int n) { int i = threadIdx.x; y[i] = x[i * 32]; }"
    static_only = analyze(code, None)
    measured = analyze(code, None, profile=parse_ncu_csv(DETAILS)[:1])
    assert static_only.components["coalescing"] == 0.5
    assert measured.components["coalescing"] == 1.0  # ncu says every fetched byte was used
    assert measured.features["ncu_load_efficiency"].source == "profiler"
    assert measured.as_dict()["features"]["ncu_load_efficiency"] == {"value": 1.0, "source": "profiler"}


def test_no_csv_and_values_that_are_not_numbers():
    assert parse_ncu_csv("==ERROR== The application returned an error code (1).") == ()
    assert profile_features([]) == {}
    assert profile_features([KernelProfile("k", 0)]) == {}
    assert parse_value("1,234.5") == 1234.5 and parse_value("2", "Kbyte") == 2000.0
    assert math.isnan(parse_value("n/a"))


def test_ncu_command_line():
    cmd = ncu_command(["python", "run.py"], ncu="/opt/ncu", kernel_regex="saxpy", launch_skip=2, launch_count=1)
    assert cmd[:7] == ["/opt/ncu", "--csv", "--page", "details", "--print-units", "base", "--target-processes"]
    assert cmd[cmd.index("--metrics") + 1] == ",".join(DEFAULT_METRICS)
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:saxpy"
    assert cmd[cmd.index("--launch-skip") + 1] == "2" and cmd[cmd.index("--launch-count") + 1] == "1"
    assert cmd[-3:] == ["--", "python", "run.py"]
    with pytest.raises(ValueError, match="needs a program"):
        ncu_command([])
    with pytest.raises(ValueError, match="launch_skip"):
        ncu_command(["x"], launch_skip=-1)
