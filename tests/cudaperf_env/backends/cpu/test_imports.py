"""The CPU symbol check's baseline: measured once per mode, beside the submission's build."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu import compiler, imports


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
