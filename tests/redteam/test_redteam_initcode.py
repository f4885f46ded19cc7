"""Code that runs at load time, before the harness: refused from the compiled object, behind the screen."""

from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import STAGES, EvalOptions, Evaluator, screen_source
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain.initcode import MESSAGE

SAXPY = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")
KERNEL = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
)
ENTRY = (
    'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
    "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n"
)
# Each runs a side effect (here: a write to stdout, or a call into the system) when the library is loaded.
ATTACKS = {
    "constructor attribute": '__attribute__((constructor)) static void early() { printf("early\\n"); }\n',
    "constructor with priority": '__attribute__((constructor(101))) void early() { printf("early\\n"); }\n',
    "destructor attribute": '__attribute__((destructor)) void late() { printf("late\\n"); }\n',
    "namespace-scope initialiser": (
        "#include <ctime>\n__attribute__((noinline)) int f() { return (int)clock(); }\nstatic int x = f();\n"
        "int use() { return x; }\n"),
    "initialiser calling the system": "#include <unistd.h>\nint pid = (int)getpid();\n",
    "global object with a constructor": 'struct G { G() { printf("early\\n"); } };\nG g;\n',
    "static member initialiser": "struct S { static int v; };\n__attribute__((noinline)) int f() { return 7; }\n"
                                 "int S::v = f();\n",
    "init_array by section attribute": (
        'static void early() { printf("early\\n"); }\n'
        '__attribute__((section(".init_array"), used)) static void (*hook)() = early;\n'),
    "ctors by section attribute": (
        'static void early() { printf("early\\n"); }\n'
        '__attribute__((section(".ctors"), used)) static void (*hook)() = early;\n'),
    "fini_array by section attribute": (
        'static void late() { printf("late\\n"); }\n'
        '__attribute__((section(".fini_array"), used)) static void (*hook)() = late;\n'),
    "indirect function": (
        'extern "C" void impl() {}\nextern "C" void* pick() { printf("early\\n"); return (void*)impl; }\n'
        'extern "C" void chosen() __attribute__((ifunc("pick")));\nvoid use() { chosen(); }\n'),
    "init_array by assembly": (
        'extern "C" void early() { printf("early\\n"); }\n'
        'asm(".pushsection .init_array,\\"aw\\",@init_array\\n.quad early\\n.popsection\\n");\n'),
}


@pytest.fixture(scope="module")
def backend():
    return CpuBackend(timeout_s=3.0)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_load_time_code_is_refused_behind_the_screen(backend, name):
    """The CPU build (no screen in front of it) refuses the library before any worker loads it."""
    build = backend.build(SAXPY, ATTACKS[name] + KERNEL + ENTRY)
    assert not build.ok and build.library is None
    assert build.unsupported, build.log
    message = build.unsupported[0].message
    if build.unsupported[0].rule != "asm":  # the pre-pass refuses inline assembly before it is compiled
        assert message.startswith(MESSAGE), message


def test_load_time_code_is_rejected_through_the_pipeline():
    """Without the screen, a constructor is `rejected` naming what the object holds; it never printed."""
    stages = tuple(s for s in STAGES if s is not screen_source)
    evaluator = Evaluator(CpuBackend(timeout_s=3.0), EvalOptions(compile_timeout_s=30.0), stages=stages)
    code = '__attribute__((constructor)) static void early() { printf("EARLY-MARKER\\n"); }\n' + KERNEL + ENTRY
    e = evaluator.evaluate(SAXPY, code, seed=1)
    assert e.status == "rejected" and e.message.startswith(MESSAGE) and "early" in e.message, e.message
    assert not e.compiled and not e.configs and "EARLY-MARKER" not in e.stdout


@pytest.mark.parametrize("streams", ["#include <iostream>\n", ""])
def test_honest_load_time_initialisers_build(backend, streams):
    """What honest code makes the runtime initialise at load time: ``__device__``/``__constant__`` variables,
    constants, the standard streams (without them, nothing but the variables: the initialiser must stay in
    its own section, not among the unit's cold code)."""
    code = (streams + "#include <cmath>\n__constant__ float coeff[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n"
            "__device__ int counter;\nstatic __device__ double table[2] = {0.5, 0.25};\n"
            "const float kScale = sqrtf(2.0f);\nconstexpr int kBlock = 256;\n"
            "__global__ void k(int n, float a, const float* x, float* y) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < n) y[i] = a * x[i] + y[i] + 0.0f * (coeff[i % 4] + counter + (float)table[i % 2] + kScale);\n}\n"
            'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
            "  k<<<(n + kBlock - 1) / kBlock, kBlock>>>(n, a, x, y);\n}\n")
    build = backend.build(SAXPY, code)
    assert build.ok, (build.log, build.unsupported)


def test_the_runtime_namespace_cannot_be_borrowed(backend):
    """Both checks trust the runtime's names (``cudaperf::``): a submission may not define or use them."""
    borrowed = ('namespace cudaperf { __attribute__((noinline)) int early() { printf("early\\n"); return 1; } }\n'
                "static int x = cudaperf::early();\n")  # fmt: skip
    build = backend.build(SAXPY, borrowed + KERNEL + ENTRY)
    assert not build.ok and build.unsupported[0].rule == "runtime_names", build.unsupported
    assert "`cudaperf`" in build.unsupported[0].message
