"""An index past a declared array: on a GPU an illegal address or another variable's bytes, never credit.

The CPU backend's static ``__shared__`` arrays are thread-locals of the worker thread, so an index past
one reads or writes the next thread-local (the runtime's own among them): the ordinary run may pass. The
race-check build checks every index into an array of known size (``include/cudaperf/bounds.h``) and,
through pointers too, every access past the last ``__shared__`` array (a zone laid out after them,
``racecheck.py``), and names the line and the CUDA thread.
"""

import re
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.tasks import load_task

SUM = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "sum.yaml")
ENTRY = ('extern "C" void sum(int n, const float* x, float* out) {\n  cudaMemset(out, 0, sizeof(float));\n'
         "  k<<<(n + 255) / 256, 256>>>(n, x, out);\n}\n")  # fmt: skip
TREE = ("  __syncthreads();\n  for (int o = 128; o > 0; o >>= 1) { if (t < o) s[t] += s[t + o]; __syncthreads(); }\n"
        "  if (t == 0) atomicAdd(out, s[0]);\n}\n")  # fmt: skip
LOAD = "  __shared__ float s[256];\n  int t = threadIdx.x, i = blockIdx.x * 256 + t;\n  s[t] = i < n ? x[i] : 0.0f;\n"

# Each reads one element past an array and lets it change nothing: the sum is right wherever the read lands.
PAST_THE_END = {
    # The last thread reads its right neighbour, one past the shared tile.
    "shared_tile": "__global__ void k(int n, const float* x, float* out) {\n" + LOAD + "  __syncthreads();\n"
                   "  if (s[t + 1] == -12345.0f) atomicAdd(out, 0.0f);\n" + TREE + ENTRY,
    # The first thread reads its left neighbour, one before the shared tile.
    "before_the_start": "__global__ void k(int n, const float* x, float* out) {\n" + LOAD + "  __syncthreads();\n"
                        "  if (s[t - 1] == -12345.0f) atomicAdd(out, 0.0f);\n" + TREE + ENTRY,
    # The right neighbour read through a pointer (a device function's parameter), which -fsanitize=bounds
    # does not see: the zone after the last __shared__ array does.
    "through_a_pointer": "__device__ float peek(const float* p, int k) { return p[k]; }\n"
                         "__global__ void k(int n, const float* x, float* out) {\n" + LOAD + "  __syncthreads();\n"
                         "  if (peek(s, t + 1) == -12345.0f) atomicAdd(out, 0.0f);\n" + TREE + ENTRY,
    # The same in a template kernel (its instance's thread-locals come at the end of the unit).
    "template_through_a_pointer": "__device__ float peek(const float* p, int k) { return p[k]; }\n"
                                  "template <int B> __global__ void k(int n, const float* x, float* out) {\n"
                                  + LOAD.replace("256", "B") + "  __syncthreads();\n"
                                  "  if (peek(s, t + 1) == -12345.0f) atomicAdd(out, 0.0f);\n" + TREE
                                  + ENTRY.replace("k<<<", "k<256><<<"),
    # A constant table of 4 weights indexed by t % 5.
    "constant_table": "__constant__ float w[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n"
                      "__global__ void k(int n, const float* x, float* out) {\n" + LOAD +
                      "  if (w[t % 5] == -12345.0f) atomicAdd(out, 0.0f);\n" + TREE + ENTRY,
}  # fmt: skip
LINES = {"shared_tile": 6, "before_the_start": 6, "constant_table": 6, "through_a_pointer": 1,
         "template_through_a_pointer": 1}


@pytest.mark.parametrize("name", sorted(PAST_THE_END))
def test_an_index_past_an_array_gets_no_credit(evaluator, name):
    e = evaluator.evaluate(SUM, PAST_THE_END[name], seed=1)
    if evaluator.backend.name != "cpu" and e.correct:
        pytest.xfail(f"{name}: the index stayed inside the GPU's window (the CPU backend refuses it)")
    assert e.status == "runtime_error", (e.status, e.message)


@pytest.mark.parametrize("name", sorted(PAST_THE_END))
def test_the_bounds_report_names_index_array_line_and_thread(name):
    e = Evaluator(CpuBackend(timeout_s=10.0), EvalOptions(compile_timeout_s=60.0)).evaluate(SUM, PAST_THE_END[name])
    assert e.status == "runtime_error" and e.message.startswith("out of bounds: "), e.message
    assert re.search(rf"\bline {LINES[name]}\b", e.message) and "in kernel k" in e.message, e.message
    if name.endswith("through_a_pointer"):
        assert "a read 0 bytes past the end of the last __shared__ array" in e.message, e.message
    if name == "shared_tile":
        assert "index 256 of an array of type 'float [256]'" in e.message and "thread (255,0,0)" in e.message
    if name == "before_the_start":
        assert "index -1 of an array of type 'float [256]'" in e.message and "thread (0,0,0)" in e.message


# An index so far past the tile that the ordinary run crashes (nothing is mapped there): the crash is
# explained by the race-check build.
FAR_PAST_THE_END = ("__global__ void k(int n, const float* x, float* out) {\n" + LOAD +
                    "  if (t == 0 && n > 0) s[0x7fffffff] = 1.0f;\n" + TREE + ENTRY)  # fmt: skip


def test_a_crash_from_an_index_past_an_array_is_explained():
    e = Evaluator(CpuBackend(timeout_s=10.0), EvalOptions(compile_timeout_s=60.0)).evaluate(SUM, FAR_PAST_THE_END)
    assert e.status == "runtime_error", e.message
    expected = "out of bounds: index 2147483647 of an array of type 'float [256]' at line 5"
    assert e.message.startswith(expected), e.message
    assert "explain_crash" in e.seconds


def test_without_the_race_check_nothing_checks_the_index():
    """What the check is for: the ordinary build runs the shared-tile read past the end and passes."""
    options = EvalOptions(compile_timeout_s=60.0, racecheck=False)
    e = Evaluator(CpuBackend(timeout_s=10.0), options).evaluate(SUM, PAST_THE_END["shared_tile"])
    assert e.correct, e.message
