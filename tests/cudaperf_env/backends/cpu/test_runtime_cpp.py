"""Tests for the CUDA-on-CPU runtime header: real kernels built with real g++ and run as programs.

The C++ programs in ``runtime_cpp/`` write launches in the form the pre-pass produces and check
every result against a plain C++ reference; failure programs must die with the documented fatal
line and exit code (docs/cpu-backend.md, section 2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
INCLUDE = REPO / "cudaperf_env" / "backends" / "cpu" / "include"
SOURCES = Path(__file__).resolve().parent / "runtime_cpp"
# The flags the compiler driver uses (docs/cpu-backend.md).
FLAGS = ["-std=c++17", "-O2", "-fPIC", "-pthread"]
INCLUDES = [f"-I{INCLUDE / 'shim'}", f"-I{INCLUDE}"]
RUN_TIMEOUT_S = 30

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


@dataclass(frozen=True)
class Build:
    """Where the test programs were built."""

    directory: Path
    pch_header: Path  # force-include this: its .gch sits next to it

    def exe(self, name: str) -> Path:
        return self.directory / name


def _compile(args: list[str]) -> None:
    result = subprocess.run(["g++", *args], capture_output=True, text=True, timeout=300)
    if result.returncode != 0 or "pch" in result.stderr.lower():
        raise AssertionError(f"g++ {' '.join(args)} failed:\n{result.stderr}")


def _program(build_dir: Path, pch: Path, source: str, output: str, extra: list[str]) -> list[str]:
    return [
        *FLAGS,
        "-Winvalid-pch",
        *INCLUDES,
        "-include",
        str(pch),
        *extra,
        str(SOURCES / source),
        "-o",
        str(build_dir / output),
    ]


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """Builds the precompiled runtime header, then every test program in parallel."""
    directory = tmp_path_factory.mktemp("runtime_cpp")
    pch = directory / "pch" / "cudaperf_pch.h"
    pch.parent.mkdir()
    pch.write_text("#include <cudaperf/cuda_cpu.h>\n")
    _compile([*FLAGS, *INCLUDES, "-x", "c++-header", str(pch), "-o", f"{pch}.gch"])
    jobs = [
        _program(directory, pch, "core_test.cpp", "core_test", []),
        _program(directory, pch, "warp_test.cpp", "warp_test", []),
        _program(directory, pch, "failures_test.cpp", "failures_test", []),
        _program(directory, pch, "bench_runtime.cpp", "bench_runtime", []),
        _program(directory, pch, "idioms_test.cpp", "idioms_test", []),
        _program(directory, pch, "shared_lib.cpp", "shared_lib.so", ["-shared"]),
        # The portable ucontext fibers; a macro before the runtime means no PCH (pitfall 3).
        [
            *FLAGS,
            *INCLUDES,
            "-DCUDAPERF_FIBER_UCONTEXT",
            "-include",
            "cudaperf/cuda_cpu.h",
            str(SOURCES / "warp_test.cpp"),
            "-o",
            str(directory / "warp_test_ucontext"),
        ],
    ]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(_compile, jobs))
    return Build(directory, pch)


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def _cases(build: Build, program: str) -> list[str]:
    return _run(build.exe(program), "--list").stdout.split()


CORE_CASES = [
    "matmul_tiled_odd_sizes",
    "warp_shuffle_reduction_one_element_per_thread",
    "warp_shuffle_reduction_grid_stride",
    "scan_hillis_steele_then_blelloch",
    "histogram_shared_atomics",
    "stream_compaction_ballot_popc",
    "softmax_dynamic_shared",
    "template_kernel_instantiations",
    "grid_3d",
    "constant_memory_symbols",
    "early_return_before_barrier",
    "vector_types_in_shared_memory",
]
WARP_CASES = [
    "cg_tiled_partition_reduce",
    "cg_scans_and_dynamic_tiles",
    "half_precision_elementwise",
    "half_conversions_round_to_nearest_even",
    "syncthreads_count_and_or",
    "match_any_and_all",
    "shuffle_widths_match_cuda_semantics",
    "votes_and_warp_reductions",
    "activemask_and_coalesced_groups",
    "syncwarp_counts_exited_lanes",
    "every_atomic_kind",
    "spin_wait_makes_progress",
    "invalid_launch_configurations",
    "plain_mode_and_single_thread_blocks",
    "deterministic_mode_is_reproducible",
    "host_api",
    "intrinsics_and_math",
]


def test_case_lists_match_the_programs(build: Build) -> None:
    assert _cases(build, "core_test") == CORE_CASES
    assert _cases(build, "warp_test") == WARP_CASES


@pytest.mark.parametrize("case", CORE_CASES)
def test_core_kernels(build: Build, case: str) -> None:
    result = _run(build.exe("core_test"), case)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("case", WARP_CASES)
def test_warp_kernels(build: Build, case: str) -> None:
    result = _run(build.exe("warp_test"), case)
    assert result.returncode == 0, result.stderr


def test_everyday_cuda_idioms_compile_and_run(build: Build) -> None:
    result = _run(build.exe("idioms_test"))
    assert result.returncode == 0, result.stderr


def test_ucontext_fibers_pass_the_warp_kernels(build: Build) -> None:
    result = _run(build.exe("warp_test_ucontext"))
    assert result.returncode == 0, result.stderr


def _marker_line(name: str) -> int:
    """Line of the ``// @name`` marker in failure_kernels.cuh."""
    lines = (SOURCES / "failure_kernels.cuh").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"// @{name}"))


def _fatal_line(stderr: str) -> str:
    fatal = [line for line in stderr.splitlines() if line.startswith("cudaperf-fatal: ")]
    assert len(fatal) == 1, stderr
    return fatal[0]


@dataclass(frozen=True)
class Fatal:
    """A failure case: expected exit code, kind and message fragments."""

    case: str
    code: int
    kind: str
    fragments: tuple[str, ...]


def _fatal_cases() -> list[Fatal]:
    inner, outer = _marker_line("divergent_inner"), _marker_line("divergent_outer")
    shfl, assert_line = _marker_line("partial_shfl"), _marker_line("device_assert")
    return [
        Fatal(
            "divergent_syncthreads",
            70,
            "deadlock",
            (
                "kernel divergent_barrier",
                "block (0,0,0)",
                f"16 threads at __syncthreads (line {inner})",
                f"48 threads at __syncthreads (line {outer})",
            ),
        ),
        Fatal(
            "partial_warp_shuffle",
            70,
            "deadlock",
            ("kernel half_warp_shuffle", f"16 threads at __shfl_down_sync (line {shfl})", "16 threads exited"),
        ),
        Fatal(
            "wild_pointer_write",
            71,
            "illegal_address",
            ("invalid memory access at address 0x10", "kernel wild_write", "block (1,0,0)", "thread (5,0,0)"),
        ),
        Fatal("deep_recursion", 71, "illegal_address", ("stack overflow", "kernel recurse")),
        Fatal(
            "deep_recursion_without_fibers",
            71,
            "illegal_address",
            ("stack overflow", "kernel recurse_plain", "thread (0,0,0)"),
        ),
        Fatal(
            "integer_division_by_zero",
            72,
            "arithmetic",
            ("integer division by zero", "kernel divide", "block (1,0,0)", "thread (8,0,0)"),
        ),
        Fatal(
            "failed_device_assert",
            73,
            "device_assert",
            (
                f"failure_kernels.cuh:{assert_line}: assertion `x[i] < 10` failed",
                "kernel check_values",
                "block (1,0,0)",
                "thread (5,0,0)",
            ),
        ),
        Fatal("trap", 75, "illegal_instruction", ("__trap()", "kernel trap_kernel", "thread (3,0,0)")),
        Fatal(
            "dynamic_shared_out_of_bounds",
            71,
            "illegal_address",
            (
                "dynamic shared memory",
                "beyond the 256 bytes given at launch",
                "kernel dynamic_shared_overrun",
                "thread (1,0,0)",
            ),
        ),
        Fatal(
            "barrier_without_fibers", 74, "abort", ("kernel barrier_kernel", "__syncthreads", "launched without fibers")
        ),
        Fatal("host_null_write", 71, "illegal_address", ("address 0x0 in host code",)),
        Fatal("host_abort", 74, "abort", ("abort() called in host code",)),
        Fatal("host_assert", 74, "abort", ("assertion `x == 4` failed in host code",)),
    ]


@pytest.mark.parametrize("fatal", _fatal_cases(), ids=lambda f: f.case)
def test_failures_give_one_fatal_line(build: Build, fatal: Fatal) -> None:
    result = _run(build.exe("failures_test"), fatal.case)
    line = _fatal_line(result.stderr)
    assert result.returncode == fatal.code, result.stderr
    assert line.startswith(f"cudaperf-fatal: {fatal.kind}: "), line
    for fragment in fatal.fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


def test_missing_syncthreads_gives_a_wrong_result(build: Build) -> None:
    """Without the barriers each thread runs to its end before the next starts (plain loop or
    fiber), so thread 0 adds shared slots that later threads have not written yet."""
    result = _run(build.exe("failures_test"), "missing_syncthreads_gives_wrong_result")
    assert result.returncode == 0, result.stderr
    assert "correct: 256" in result.stdout


def test_device_printf_is_ordered_with_host_output(build: Build) -> None:
    result = _run(build.exe("failures_test"), "device_printf")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "host before"
    assert lines[-1] == "host after"
    assert sorted(lines[1:-1]) == sorted(f"hello from thread {t} of block {b}" for b in range(2) for t in range(3))


def test_device_printf_is_capped_at_64_kib(build: Build) -> None:
    result = _run(build.exe("failures_test"), "device_printf_is_capped")
    assert result.returncode == 0, result.stderr
    notice = "[cudaperf: device printf output truncated at 65536 bytes]"
    device_part, _, rest = result.stdout.partition("\n" + notice + "\n")
    assert len(device_part.encode()) == 65536
    assert rest == "host after\n"


def _python_loader(library: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = (
        "import ctypes, sys\n"
        f"lib = ctypes.CDLL({str(library)!r})\n"
        "lib.cudaperf_launch_count.restype = ctypes.c_ulonglong\n"
        "lib.cudaperf_runtime_configure(2, 0)\n" + body
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def test_shared_library_loads_and_runs_from_python(build: Build) -> None:
    n = 100000
    result = _python_loader(
        build.exe("shared_lib.so"),
        (
            "out = ctypes.c_float(0)\n"
            f"rc = lib.sum_sequence({n}, ctypes.byref(out))\n"
            "print(rc, out.value, lib.cudaperf_launch_count())\n"
        ),
    )
    assert result.returncode == 0, result.stderr
    rc, total, launches = result.stdout.split()
    assert int(rc) == 0
    assert float(total) == pytest.approx(sum(i % 100 for i in range(n)), rel=1e-6)
    assert int(launches) == 1


def test_crash_in_a_loaded_library_reports_the_kernel(build: Build) -> None:
    result = _python_loader(build.exe("shared_lib.so"), "lib.crash()\n")
    assert result.returncode == 71
    line = _fatal_line(result.stderr)
    assert line.startswith("cudaperf-fatal: illegal_address: invalid memory access at address")
    assert "kernel poke" in line and "thread (0,0,0)" in line


def test_precompiled_header_is_used(build: Build, tmp_path: Path) -> None:
    source = tmp_path / "saxpy.cpp"
    source.write_text(
        "#include <cuda_runtime.h>\n"
        "__global__ void saxpy(int n, float a, const float* x, float* y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = a * x[i] + y[i];\n"
        "}\n"
        'extern "C" void run(int n, float a, const float* x, float* y) {\n'
        '  ::cudaperf::launch<false>("saxpy", 7, (n + 255) / 256, 256, 0, 0,\n'
        "                            [&](auto... p) { saxpy(p...); }, n, a, x, y);\n"
        "}\n"
    )
    args = [
        *FLAGS,
        "-Winvalid-pch",
        "-H",
        *INCLUDES,
        "-include",
        str(build.pch_header),
        "-shared",
        str(source),
        "-o",
        str(tmp_path / "saxpy.so"),
    ]
    result = subprocess.run(["g++", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    # "!" marks a precompiled header g++ used (its speed is measured by benchmarks/cpu_backend.py)
    assert re.search(r"^! .*cudaperf_pch\.h\.gch$", result.stderr, re.M), result.stderr[:2000]
    assert "warning" not in result.stderr


def test_the_runtime_benchmark_reports_every_cost(build: Build) -> None:
    """The costs benchmarks/cpu_backend.py compares with docs/cpu-backend.md's goals are all measured."""
    result = _run(build.exe("bench_runtime"), "quick")
    assert result.returncode == 0, result.stderr
    numbers = {key: float(value) for key, value in (line.split() for line in result.stdout.splitlines())}
    wanted = ("matmul512_s_1_threads", "reduce1M_s_2_threads", "syncthreads_ns_per_thread",
              "warp_shuffle_ns_per_thread")
    assert all(numbers[key] > 0 for key in wanted), numbers


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_test_kernels_are_valid_cuda(tmp_path: Path) -> None:
    """The kernels used above compile with nvcc too (they are real CUDA, not CPU-only code)."""
    source = tmp_path / "check.cu"
    source.write_text(
        '#include "core_kernels.cuh"\n#include "warp_kernels.cuh"\n#include "failure_kernels.cuh"\n'
        "template __global__ void staged_axpy<float, 256>(const float*, float*, float, int);\n"
    )
    result = subprocess.run(
        ["nvcc", "-arch=sm_90", "-cubin", f"-I{SOURCES}", str(source), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
