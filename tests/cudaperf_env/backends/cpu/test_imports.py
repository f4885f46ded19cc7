"""The CPU symbol check's baseline: measured once per mode, beside the submission's build."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu import compiler, imports
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.tasks import find_task


@pytest.fixture
def cold_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiler, "_start_prebuild", lambda folder: None)
    imports._baseline.cache_clear()
    yield
    imports._baseline.cache_clear()  # measured in this test's cache: not the next test's


def test_builds_asking_for_the_baseline_at_once_measure_it_once(cold_cache: None, monkeypatch) -> None:
    measured = []
    real = imports.runtime_imports
    monkeypatch.setattr(imports, "runtime_imports", lambda linked: measured.append(linked) or real(linked))
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = list(pool.map(lambda _: imports.baseline(False), range(4)))
    assert len({id(f) for f in futures}) == 1 and measured == [False]
    allowed = futures[0].result(timeout=300)
    assert "pthread_create" in allowed  # the runtime's own threads: allowed for every submission
    imports.settle(False)  # done: returns at once
    assert imports.baseline(False) is futures[0] and measured == [False]


def test_the_runtimes_own_imports_pass_only_through_the_baseline(cold_cache: None) -> None:
    trivial = compiler.build_cpu("#include <cstdio>\n" + imports.prepass(imports.TRIVIAL).source, linked=False)
    assert trivial.ok and trivial.library is not None, trivial.log
    assert imports.checker(False)(trivial.library) == ""
    assert "`dladdr`" in imports.check(trivial.library, frozenset())  # not on the allowlist


def test_the_standard_headers_a_submission_may_include_pass_both_checks(cold_cache: None) -> None:
    """The runtime pre-includes few of them: the baselines still admit what they make a unit import (<iostream>'s
    static streams object registers its destructor with __cxa_atexit, as a function-local static does)."""
    code = ("#include <iostream>\n#include <string>\n#include <vector>\n#include <algorithm>\n"
            "__global__ void k(int n, float a, const float* x, float* y) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
            'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
            '  static const std::string name = "saxpy";\n  std::vector<int> sizes{256, 128};\n'
            "  std::sort(sizes.begin(), sizes.end());\n  if (n < 0) std::cout << name << std::endl;\n"
            "  k<<<(n + 127) / 128, sizes[0]>>>(n, a, x, y);\n}\n")  # fmt: skip
    built = CpuBackend().build(find_task("c2cuda/saxpy_f32"), code)
    assert built.ok, (built.log, built.unsupported)
