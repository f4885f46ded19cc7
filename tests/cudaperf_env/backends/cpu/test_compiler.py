"""The CPU build: header-only on a cold cache, then linked with the prebuilt runtime; both correct."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from cudaperf_env.backends.cpu import compiler
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import find_task
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain import tools

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

SAXPY = find_task("c2cuda/saxpy_f32")
# A fiber-mode kernel: barrier and warp collectives run in the block scheduler of the runtime.
REDUCE = """
__global__ void twice(int n, float a, const float* x, float* y) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  float v = __shfl_xor_sync(0xffffffff, s[threadIdx.x], 0);
  if (i < n) y[i] = a * v + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) {
  twice<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""


# The C++17 standard library: code using the runtime (a submission: those the screen allows; the runtime's
# own C++ tests: any) may include any of it after the runtime, which pre-includes few of these.
STANDARD_HEADERS = (
    "algorithm", "any", "array", "atomic", "bitset", "cassert", "cctype", "cerrno", "cfenv", "cfloat", "charconv",
    "chrono", "cinttypes", "climits", "clocale", "cmath", "codecvt", "complex", "condition_variable", "csetjmp",
    "csignal", "cstdarg", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring", "ctime", "cwchar", "cwctype",
    "deque", "exception", "execution", "filesystem", "forward_list", "fstream", "functional", "future",
    "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream", "iterator", "limits", "list", "locale",
    "map", "memory", "memory_resource", "mutex", "new", "numeric", "optional", "ostream", "queue", "random", "ratio",
    "regex", "scoped_allocator", "set", "shared_mutex", "sstream", "stack", "stdexcept", "streambuf", "string",
    "string_view", "system_error", "thread", "tuple", "type_traits", "typeindex", "typeinfo", "unordered_map",
    "unordered_set", "utility", "valarray", "variant", "vector", "assert.h", "math.h", "stdio.h", "stdlib.h",
    "string.h", "stdint.h", "inttypes.h", "float.h", "limits.h", "stddef.h", "stdbool.h",
)  # fmt: skip
# Host code of a submission using standard headers the runtime does not pre-include.
STANDARD_LIBRARY_SAXPY = """
#include <functional>
#include <iostream>
#include <vector>
#include <numeric>
__global__ void k(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" void saxpy(int n, float a, const float* x, float* y) {
  std::vector<int> blocks(1, (n + 255) / 256);
  std::function<int(int)> threads = [](int warps) { return 32 * warps; };
  k<<<std::accumulate(blocks.begin(), blocks.end(), 0), threads(8)>>>(n, a, x, y);
  if (n < 0) std::cout << "no work" << std::endl;
}
"""


@pytest.fixture
def cold_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fresh cache directory; the detached prebuild is recorded instead of started."""
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))
    started: list[str] = []
    monkeypatch.setattr(compiler, "_start_prebuild", started.append)
    return started


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[compiler.PrebuiltRuntime]:
    """A cache directory with the runtime prebuilt, shared by the tests that need one (a prebuild is ~5 CPU-s)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path_factory.mktemp("prebuilt") / "cache"))
        assert compiler.prebuild()
        yield compiler.prebuilt_runtime()


def build(code: str) -> Path:
    result = compiler.build_cpu(wrap(SAXPY, prepass(code).source, "cuda"))
    assert result.ok and result.library is not None, result.log
    return result.library


def saxpy_is_correct(library: Path, workdir: Path) -> bool:
    config = {"N": 1823}
    job = Job(config, make_inputs(SAXPY, config, seed=3))
    [result] = run_jobs(library, SAXPY, [job], workdir, timeout_s=30)
    want = 2.5 * job.inputs["x"] + job.inputs["y"]
    return result.status == "ok" and np.allclose(result.buffers["y"], want, rtol=1e-5)


def test_a_cold_build_is_header_only_and_starts_the_prebuild(cold_cache: list[str], tmp_path: Path) -> None:
    library = build(SAXPY.implementation("naive").source)
    runtime = compiler.prebuilt_runtime()
    assert cold_cache == [str(runtime.folder)] and not runtime.linkable()
    assert saxpy_is_correct(library, tmp_path)


def test_after_the_prebuild_submissions_link_the_runtime_object(cold_cache: list[str], tmp_path: Path) -> None:
    code = wrap(SAXPY, prepass(SAXPY.implementation("naive").source).source, "cuda")
    header_only = compiler.build_cpu(code)
    assert compiler.prebuild() and compiler.prebuilt_runtime().ready()
    linked = compiler.build_cpu(code)
    assert not linked.cached and linked.library != header_only.library  # the flags name the runtime's files
    assert len(cold_cache) == 1  # nothing started once the runtime is ready
    assert linked.library is not None and saxpy_is_correct(linked.library, tmp_path)
    assert saxpy_is_correct(build(REDUCE), tmp_path)


def test_builds_with_and_without_the_precompiled_header_share_a_cache_entry(prebuilt: compiler.PrebuiltRuntime,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "_start_prebuild", lambda folder: None)  # prebuilt below, in the test
    runtime = prebuilt
    runtime.gch.unlink()  # linkable, the header read as text
    code = wrap(SAXPY, prepass(REDUCE).source, "cuda")
    text = compiler.build_cpu(code)
    assert compiler.prebuild()
    precompiled = compiler.build_cpu(code)
    assert text.ok and precompiled.cached and precompiled.library == text.library


def test_concurrent_cold_builds_are_correct_and_start_one_prebuild(cold_cache: list[str], tmp_path: Path) -> None:
    sources = [f"// variant {i}\n{REDUCE}" for i in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        libraries = list(pool.map(build, sources))
    assert len(set(libraries)) == 4 and set(cold_cache) == {str(compiler.prebuilt_runtime().folder)}
    for i, library in enumerate(libraries):
        (tmp_path / str(i)).mkdir()
        assert saxpy_is_correct(library, tmp_path / str(i))


def test_the_prebuilt_header_leaves_only_declarations_of_the_runtime(prebuilt: compiler.PrebuiltRuntime,
                                                                    tmp_path: Path) -> None:  # fmt: skip
    runtime = prebuilt
    unit = tmp_path / "unit.cpp"
    unit.write_text(wrap(SAXPY, prepass(REDUCE).source, "cuda"))
    obj = tmp_path / "unit.o"
    flags = [*compiler.BASE_FLAGS, *compiler.include_flags(), "-Winvalid-pch", "-include", str(runtime.header)]
    done = subprocess.run(["g++", *flags, "-c", str(unit), "-o", str(obj)], capture_output=True, text=True)
    assert done.returncode == 0 and "pch" not in done.stderr, done.stderr
    symbols = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True).stdout
    table = re.findall(r"^[0-9a-f]*\s+(\w) (.*)$", symbols, re.M)  # (kind, symbol)

    def kinds(name: str) -> set[str]:
        return {kind for kind, symbol in table if symbol.startswith(f"{name}(")}

    assert kinds("cudaperf::detail::launch_erased") == kinds("cudaGetErrorString") == {"U"}  # called, not compiled
    for name in ("run_blocks", "run_block_fibers", "compute_collective", "report_deadlock", "on_fatal_signal"):
        assert kinds(f"cudaperf::detail::{name}") <= {"U"}, name
    runtime_symbols = subprocess.run(["nm", "-C", str(runtime.runtime_object)], capture_output=True, text=True)
    assert " T cudaperf::detail::launch_erased(" in runtime_symbols.stdout


def test_concurrent_prebuilds_in_several_processes_build_once(tmp_path: Path) -> None:
    env = {**os.environ, "CUDAPERF_CACHE_DIR": str(tmp_path / "cache")}
    code = "from cudaperf_env.backends.cpu.compiler import prebuild; print(prebuild())"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]  # fmt: skip
    answers = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert "True" in answers  # the lock holder built it; the others returned at once
    folders = list((tmp_path / "cache" / "runtime").iterdir())
    assert len(folders) == 1
    names = sorted(p.name for p in folders[0].iterdir())
    assert names == ["cudaperf_pch.h", "cudaperf_pch.h.gch", "cudaperf_runtime.cpp", "cudaperf_runtime.o", "lock"]


def test_a_cold_build_starts_a_detached_prebuild_that_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))
    build(SAXPY.implementation("naive").source)
    runtime = compiler.prebuilt_runtime()
    deadline = time.monotonic() + 300
    while not runtime.ready() and time.monotonic() < deadline:
        time.sleep(0.2)
    log = runtime.folder / "prebuild.log"
    assert runtime.ready(), log.read_text() if log.exists() else "not built in time"
    with open(runtime.folder / "lock", "a") as lock:  # wait for the builder to exit
        fcntl.flock(lock, fcntl.LOCK_EX)
    assert saxpy_is_correct(build(REDUCE), tmp_path)


def test_the_race_check_build_reads_the_same_precompiled_header(prebuilt: compiler.PrebuiltRuntime,
                                                                tmp_path: Path) -> None:  # fmt: skip
    """One PCH for both builds: g++ refuses it where a flag or macro differs, and says so (-Winvalid-pch)."""
    runtime = prebuilt
    unit = tmp_path / "unit.cpp"
    unit.write_text(wrap(SAXPY, prepass(REDUCE).source, "cuda"))
    base = [f for f in compiler.BASE_FLAGS if f != "-w"]  # -w would hide the warning looked for

    def warnings(extra: tuple[str, ...]) -> str:
        flags = [*base, *extra, *compiler.include_flags(), "-Winvalid-pch", "-include", str(runtime.header)]
        done = subprocess.run(["g++", *flags, "-c", str(unit), "-o", str(tmp_path / "unit.o")], capture_output=True,
                              text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert "pch" not in warnings(()) and "pch" not in warnings(compiler.RACECHECK_FLAGS)
    with_macro = tuple(f for f in compiler.RACECHECK_FLAGS if f != "-U__SANITIZE_THREAD__")
    assert "not used because `__SANITIZE_THREAD__' is defined" in warnings(with_macro)


def test_the_backend_builds_the_runtime_first_on_a_cold_cache_once_for_all(cold_cache: list[str],
                                                                          tmp_path: Path) -> None:  # fmt: skip
    """A cold first step's builds (here a group of three, and their race-check builds) wait for one prebuild
    and link it: nothing left for a background prebuild, nothing header-only."""
    from cudaperf_env.backends.cpu.backend import CpuBackend

    backend, sources = CpuBackend(), [f"// variant {i}\n{REDUCE}" for i in range(3)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        builds = list(pool.map(lambda code: backend.build(SAXPY, code), sources))
        races = list(pool.map(lambda code: backend.race_build(SAXPY, code), sources))
    runtime = compiler.prebuilt_runtime()
    assert runtime.ready() and cold_cache == []  # no detached prebuild was started
    assert all(b.ok for b in builds + races), [b.log for b in builds + races]
    header_only = compiler.build_cpu(wrap(SAXPY, prepass(sources[0]).source, "cuda"), linked=False)
    assert header_only.library not in {b.library for b in builds}  # the linked builds are other entries
    for i, b in enumerate(builds):
        (tmp_path / str(i)).mkdir()
        assert b.library is not None and saxpy_is_correct(b.library, tmp_path / str(i))


def test_a_failed_prebuild_leaves_the_backend_header_only(cold_cache: list[str], tmp_path: Path) -> None:
    from cudaperf_env.backends.cpu.backend import CpuBackend

    runtime = compiler.prebuilt_runtime()
    (runtime.folder / "prebuild.log").write_text("g++: internal compiler error\n")
    built = CpuBackend().build(SAXPY, SAXPY.implementation("naive").source)
    assert built.ok and not runtime.linkable() and cold_cache == []
    assert built.library is not None and saxpy_is_correct(built.library, tmp_path)


def test_the_prebuilt_runtime_is_keyed_by_compiler_and_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    compiler._prebuilt_key.cache_clear()
    first = compiler._prebuilt_key()
    monkeypatch.setattr(tools, "version", lambda path: "g++ (other) 99.1")
    compiler._prebuilt_key.cache_clear()
    other_compiler = compiler._prebuilt_key()
    monkeypatch.undo()
    monkeypatch.setattr(compiler, "runtime_version", lambda: "0123456789abcdef")
    compiler._prebuilt_key.cache_clear()
    other_headers = compiler._prebuilt_key()
    monkeypatch.undo()
    compiler._prebuilt_key.cache_clear()
    assert len({first, other_compiler, other_headers}) == 3 and compiler._prebuilt_key() == first


def test_a_failed_prebuild_is_not_retried_and_builds_stay_header_only(cold_cache: list[str], tmp_path: Path) -> None:
    runtime = compiler.prebuilt_runtime()
    (runtime.folder / "prebuild.log").write_text("g++: internal compiler error\n")
    library = build(SAXPY.implementation("naive").source)
    assert cold_cache == [] and not runtime.linkable() and saxpy_is_correct(library, tmp_path)


def test_the_runtime_may_be_followed_by_any_standard_header(prebuilt: compiler.PrebuiltRuntime,
                                                           tmp_path: Path) -> None:  # fmt: skip
    """Those the runtime does not pre-include are read after its macros."""
    unit = tmp_path / "unit.cpp"
    unit.write_text("".join(f"#include <{h}>\n" for h in STANDARD_HEADERS) + "int main() { return 0; }\n")
    for header in (str(prebuilt.header), compiler.RUNTIME_HEADER):  # precompiled, and header-only
        flags = [*compiler.BASE_FLAGS, *compiler.include_flags(), "-include", header, "-fsyntax-only"]
        done = subprocess.run(["g++", *flags, str(unit)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    assert saxpy_is_correct(build(STANDARD_LIBRARY_SAXPY), tmp_path)


def test_the_runtime_header_reads_few_standard_headers(tmp_path: Path) -> None:
    """Every header the runtime reads is parse time of its precompiled header and of every build without it."""
    flags = [*compiler.BASE_FLAGS, *compiler.include_flags(), "-M", "-x", "c++"]
    done = subprocess.run(["g++", *flags, "-"], input=f"#include <{compiler.RUNTIME_HEADER}>\n", capture_output=True,
                          text=True, check=True)  # fmt: skip
    read = set(re.findall(r"/c\+\+/[^/\s]+/(\w+)(?=\s)", done.stdout))
    heavy = {"memory", "vector", "string", "iostream", "functional", "map", "thread", "mutex", "condition_variable",
             "algorithm", "chrono", "atomic", "tuple", "array", "numeric"}  # fmt: skip
    assert "cmath" in read and not read & heavy, sorted(read & heavy)
