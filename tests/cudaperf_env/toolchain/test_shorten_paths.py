"""Compiler diagnostics name no machine-specific folder: the same source gets the same feedback anywhere."""

import os

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.compile_check import compile_check


def test_the_toolkit_is_named_cuda_and_the_work_folder_is_dropped(tmp_path):
    bin_dir = os.path.dirname(tools.nvcc())
    text = f"{bin_dir}/../include/vector_types.h(564): note\n{tmp_path}/source.cu(3): error: x\n"
    assert tools.shorten_paths(text, tmp_path) == "<cuda>/include/vector_types.h(564): note\nsource.cu(3): error: x\n"
    assert tools.shorten_paths("/usr/include/x.h(1): note", "/") == "/usr/include/x.h(1): note"


def test_system_roots_are_not_taken_for_the_toolkit(monkeypatch):
    monkeypatch.setattr(tools, "nvcc", lambda: "/usr/bin/nvcc")
    tools._toolkit_prefixes.cache_clear()
    try:
        assert tools.shorten_paths("/usr/include/c++/12/cstdio(96): error") == "/usr/include/c++/12/cstdio(96): error"
        assert tools.shorten_paths("/usr/bin/../include/cuda.h(1): note") == "<cuda>/include/cuda.h(1): note"
    finally:
        tools._toolkit_prefixes.cache_clear()


def test_a_note_in_a_toolkit_header_reads_the_same_on_any_machine():
    report = compile_check("__global__ void k(double* y) { double4 r = make_double4(1, 2, 3, 4); *y = r.x; }\n")
    root = os.path.dirname(os.path.dirname(tools.nvcc()))
    assert report.ok
    assert "<cuda>/include/vector_types.h" in report.log  # double4 is deprecated: nvcc points at its header
    assert root not in report.log


def test_a_build_error_names_the_file_not_the_build_folder(tmp_path):
    (tmp_path / "source.cpp").write_text("int f() { return undeclared; }\n")
    result = tools.run_tool([tools.host_compiler(), "-c", str(tmp_path / "source.cpp")], tmp_path, 60)
    assert not result.ok
    assert "source.cpp:1" in result.output
    assert str(tmp_path) not in result.output
