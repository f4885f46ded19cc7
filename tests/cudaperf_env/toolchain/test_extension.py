"""Torch extension builds of KernelBench-mode submissions: confined, cached, errors trimmed to the diagnostics."""

import secrets

import pytest

from cudaperf_env.source.inline_extension import InlineExtension
from cudaperf_env.toolchain.extension import arch_list, build_extensions, build_folder, trim_build_log

NOISY = """Error building extension 'broken':
[1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=broken -isystem /venv/lib/python3.11/site-packages/torch/include \
-isystem /venv/lib/python3.11/site-packages/torch/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=1 -fPIC \
-std=c++17 -c /tmp/main.cpp -o main.o
FAILED: main.o
/tmp/main.cpp:3:32: error: 'undefined_name' was not declared in this scope
    3 | torch::Tensor f(torch::Tensor x) { return undefined_name; }
      |                                          ^~~~~~~~~~~~~~
ninja: build stopped: subcommand failed.
"""


def test_the_build_log_keeps_the_compiler_diagnostics_only():
    log = trim_build_log(NOISY)
    assert "error: 'undefined_name' was not declared in this scope" in log
    assert "return undefined_name;" in log
    assert "-isystem" not in log and "ninja:" not in log and "FAILED:" not in log


def test_arch_lists_follow_torch_spelling():
    assert arch_list("sm_90") == "9.0" and arch_list("sm_90a") == "9.0a" and arch_list("sm_100") == "10.0"
    with pytest.raises(ValueError, match="not an nvcc GPU architecture: 'compute_90'"):
        arch_list("compute_90")


def test_the_build_folder_depends_on_the_sources_and_the_architecture():
    ext = InlineExtension("e", ("int f();",), ("__global__ void k() {}",), ("f",))
    other = InlineExtension("e", ("int f();",), ("__global__ void k() { }",), ("f",))
    assert build_folder(ext, "sm_90") != build_folder(other, "sm_90")
    assert build_folder(ext, "sm_90") != build_folder(ext, "sm_80")
    assert build_folder(ext, "sm_90") == build_folder(ext, "sm_90")


def test_cuda_sources_need_an_architecture():
    ext = InlineExtension("e", ("int f();",), ("__global__ void k() {}",), ("f",))
    built = build_extensions([ext], None)
    assert not built.ok and built.log == "CUDA sources need a GPU architecture to build for"


@pytest.mark.slow
def test_a_failing_build_is_reported_with_the_compiler_error_and_not_kept():
    pytest.importorskip("torch")
    ext = InlineExtension("broken", ("torch::Tensor f(torch::Tensor x) { return undefined_name; }",), (), ("f",))
    built = build_extensions([ext], None, timeout_s=240)
    assert not built.ok and not built.timed_out
    assert "'undefined_name' was not declared in this scope" in built.log, built.log
    assert "-isystem" not in built.log
    assert not build_folder(ext, None).exists()


def test_a_build_past_its_time_limit_is_killed_and_not_kept():
    pytest.importorskip("torch")
    ext = InlineExtension("slow", (f"// {secrets.token_hex(8)}\ntorch::Tensor f(torch::Tensor x) {{ return x; }}",),
                          (), ("f",))  # fmt: skip
    built = build_extensions([ext], None, timeout_s=1.0)
    assert not built.ok and built.timed_out
    assert built.log.startswith("the build of extension 'slow' ran past its 1 s limit (killed)")
    assert not build_folder(ext, None).exists()
