"""The GPU build links the call shim as an object compiled once per task (``native.compiled_object``).

nvcc, no GPU: the shim is compiled the first time and reused after; the library still holds it,
as a unit apart, so a submission's macros cannot rewrite it; a unit that does not compile gives None.
"""

import subprocess
import uuid
from pathlib import Path

from cudaperf_env.backends.cuda.backend import build_gpu, nvcc_flags
from cudaperf_env.backends.harness import units
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain import native, tools

SAXPY = load_task(Path(__file__).parents[2] / "fixtures" / "tasks" / "saxpy.yaml")
FLAGS = nvcc_flags("sm_90")
HIDE_ERRORS = "#define cudaDeviceSynchronize() cudaSuccess\n#define cudaGetLastError() cudaSuccess\n"
ENTRY = ('extern "C" void saxpy(int n, float a, const float* x, float* y) {}\n')


def test_the_shim_is_compiled_once_and_linked_into_every_build(monkeypatch):
    shim = units(SAXPY, ENTRY)[1]
    first = native.compiled_object(tools.nvcc(), FLAGS, shim, ".cu")
    assert first is not None and first.is_file()
    assert build_gpu(SAXPY, f"// {uuid.uuid4()}\n" + ENTRY, "sm_90").ok  # a cold cache's one-off builds first
    compiled = []
    run_tool = native.tools.run_tool
    monkeypatch.setattr(native.tools, "run_tool", lambda cmd, *a, **k: compiled.append(cmd) or run_tool(cmd, *a, **k))
    assert native.compiled_object(tools.nvcc(), FLAGS, shim, ".cu") == first and not compiled
    built = build_gpu(SAXPY, HIDE_ERRORS + f"// {uuid.uuid4()}\n" + ENTRY, "sm_90")  # never built before
    assert built.ok, built.log
    [cmd] = [c for c in compiled if c[0] == tools.nvcc()]  # the submission's unit, the shim object linked in
    assert sum(arg.endswith(".cu") for arg in cmd) == 1 and any(arg.endswith(first.name) for arg in cmd)
    assert " T cudaperf_call" in nm("-D", built.library)
    shim_calls = nm(first)  # compiled from the shim alone: the submission's macros above never reach it
    assert " U cudaDeviceSynchronize" in shim_calls and " U cudaGetLastError" in shim_calls


def nm(*args) -> str:
    return subprocess.run(["nm", *map(str, args)], capture_output=True, text=True, check=True).stdout


def test_a_unit_that_does_not_compile_gives_no_object():
    assert native.compiled_object(tools.nvcc(), FLAGS, "this is not CUDA\n", ".cu") is None


def test_without_the_object_the_shim_is_compiled_beside(monkeypatch):
    monkeypatch.setattr("cudaperf_env.backends.cuda.backend.compiled_object", lambda *a, **k: None)
    built = build_gpu(SAXPY, f"// {uuid.uuid4()}\n" + ENTRY, "sm_90")
    assert built.ok, built.log
