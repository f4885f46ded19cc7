"""Attacks through the compilers: root-only files into diagnostics or binaries, calls the screen misses,
temporary files and cache growth. The compilers run confined (``toolchain/confine.py``)."""

import os
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

from hostile import needs_namespaces

from cudaperf_env.backends.base import Build
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.cpu.compiler import build_cpu
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.harness import wrap
from cudaperf_env.evaluate import _discard_build
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.cache import cache_dir, evict
from cudaperf_env.toolchain.compile_check import compile_check
from cudaperf_env.toolchain.symbols import UnreadableLibrary, refused, undefined_symbols

SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
HONEST = SAXPY.implementation("naive").source


@needs_namespaces
def test_nvcc_cannot_include_a_root_only_file(secret):
    path, marker = secret
    report = compile_check(f'%:include "{path}"\n#include "{path.parent}/../.bashrc"\n' + HONEST, timeout_s=60)
    assert not report.ok and marker not in report.log
    assert "No such file" in report.log or "cannot open" in report.log.lower(), report.log


@needs_namespaces
def test_the_assembler_cannot_incbin_a_root_only_file(secret):
    path, marker = secret
    # straight to g++ (the pre-pass refuses asm): the assembler itself must not reach the file
    stolen = f'asm(".section .rodata\\n.globl stolen\\nstolen: .incbin \\"{path}\\"\\n.byte 0\\n.text");\n'
    build = build_cpu(wrap(SAXPY, prepass(HONEST).source + stolen, "cuda"))
    assert not build.ok and marker not in build.log
    assert "file not found" in build.log or "No such file" in build.log, build.log


def test_calls_into_the_system_are_found_in_the_compiled_object_whatever_the_spelling():
    code = (
        "#include <cstdio>\n#include <cstdlib>\n"
        "extern \"C\" int daemon(int, int); extern \"C\" int wordexp(const char*, void*, int);\n"
        "extern \"C\" FILE* fopen64(const char*, const char*);\n"
        "#define OPENER fop##en64\n" + HONEST.replace(
            "saxpy_kernel<<<",
            "if (n < 0) { OPENER(\"/root/x\", \"r\"); daemon(0, 0); wordexp(\"$(id)\", 0, 0); }\n  saxpy_kernel<<<",
        )
    )
    assert "saxpy_kernel<<<" in HONEST
    build = CpuBackend().build(SAXPY, code)
    assert not build.ok and build.unsupported and build.unsupported[0].rule == "symbols"
    message = build.unsupported[0].message
    assert all(f"`{name}`" in message for name in ("daemon", "fopen64", "wordexp")), message


def test_the_allowlist_keeps_math_memory_printing_and_the_runtimes_own_imports():
    found = {"sqrtf", "tanhf", "printf", "_Znwm", "open", "_ZNSt6threadC1Ev", "environ", "mmap",
             "_GLOBAL_OFFSET_TABLE_"}  # the linker's table, named by PIC code reaching its own globals
    assert refused(found, baseline={"mmap"}) == ["_ZNSt6threadC1Ev", "environ", "open"]


def test_a_malformed_library_is_refused_not_an_exception(tmp_path):
    lib = tmp_path / "bad.so"
    lib.write_bytes(b"\x7fELF\x02\x01" + b"\xff" * 60)
    try:
        undefined_symbols(lib)
    except UnreadableLibrary:
        pass
    else:
        raise AssertionError("a truncated ELF file was read")


def test_a_compile_time_out_leaves_no_temporary_file(tmp_path, monkeypatch):
    bomb = HONEST + (
        "\ntemplate <int N> struct F { static constexpr long v = F<N - 1>::v + F<N - 2>::v; };\n"
        "template <> struct F<1> { static constexpr long v = 1; };\n"
        "template <> struct F<0> { static constexpr long v = 0; };\n"
        "template <int N> __global__ void unroll(float* y) {\n#pragma unroll\n"
        "  for (int i = 0; i < N; ++i) y[i % 7] += __sinf(y[i % 5] * i);\n}\n"
        "template __global__ void unroll<4000000>(float*);\n"
    )
    (tmp_path / "tmp").mkdir()
    (tmp_path / "cache").mkdir(mode=0o755)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where nvcc put its intermediates before: none may stay
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))  # a cache of its own: nothing else builds there
    tmp_path.chmod(0o755)
    report = compile_check(bomb, timeout_s=1.5)
    assert report.timed_out
    time.sleep(0.2)
    assert os.listdir(cache_dir("tmp")) == [] and list((tmp_path / "tmp").iterdir()) == []


def test_a_failed_build_is_not_cached():
    builds = set(os.listdir(cache_dir("builds")))
    build = CpuBackend().build(SAXPY, HONEST + "\nint broken = ;\n")
    assert not build.ok
    assert set(os.listdir(cache_dir("builds"))) == builds


def test_the_cache_evicts_least_recently_used_entries_down_to_its_bound(tmp_path):
    now = time.time()
    for k, age in enumerate([5000, 4000, 3000, 2000, 10]):  # seconds since last use
        path = tmp_path / f"{k}.so"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - age, now - age))
    freed = evict(tmp_path, limit=2500, min_age_s=600)
    assert freed == 3000 and sorted(p.name for p in tmp_path.iterdir()) == ["3.so", "4.so"]
    assert evict(tmp_path, limit=0, min_age_s=600) == 1000  # an entry in use stays whatever the bound
    assert [p.name for p in Path(tmp_path).iterdir()] == ["4.so"]


def test_nothing_is_cached_for_code_nvcc_refuses(tmp_path):
    """The backend's builds (ordinary and race-check) run beside the nvcc check; when nvcc refuses the code,
    what they built is dropped (a cache hit stays: it was made for another evaluation)."""
    for cached in (False, True):
        pending = {}
        for name in ("build", "race_build"):
            done: Future = Future()
            done.set_result(Build(True, tmp_path / f"{name}-{cached}.so", cached=cached))
            done.result().library.write_bytes(b"ELF")
            pending[name] = done
        ctx = SimpleNamespace(cancel=threading.Event(), pending=pending)
        _discard_build(ctx)  # type: ignore[arg-type]
        assert ctx.cancel.is_set()
        assert [f.result().library.exists() for f in pending.values()] == [cached, cached]
