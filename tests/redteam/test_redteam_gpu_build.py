"""The GPU build path's checks of the submission's compiled unit, behind the screen (nvcc, no GPU needed).

``build_gpu`` is the GPU backend's build: nvcc confined, the unit's host object kept by ``-keep`` and
checked before the library is used: no submitted code at load time (``toolchain/initcode.py``), imports
from the system only as nvcc's honest host code and the CUDA runtime's API, and no definition of a name
the runtime calls (``backends/cuda/imports.check_unit``). The GPU twins are in ``test_redteam_gpu.py``.
"""

import collections
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudaperf_env.backends.cuda.backend import build_gpu, nvcc_flags
from cudaperf_env.backends.cuda.imports import check_unit
from cudaperf_env.dataset.load import load_dataset
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.initcode import MESSAGE

SAXPY = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")
ARCH = "sm_90"
KERNEL = (
    "#include <cstdio>\n#include <cstdlib>\n"
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
)
ENTRY = (
    'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
    "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n"
)
# Each runs submitted code when the library is loaded, before the harness calls the entry.
LOAD_TIME = {
    "constructor attribute": '__attribute__((constructor)) static void early() { puts("EARLY"); }\n',
    "constructor with priority": '__attribute__((constructor(101))) void early() { puts("EARLY"); }\n',
    "destructor attribute": '__attribute__((destructor)) void late() { puts("LATE"); }\n',
    "global object with a constructor": 'struct G { G() { puts("EARLY"); } };\nG g;\n',
    "namespace-scope initialiser": "__attribute__((noinline)) int f() { return rand(); }\nstatic int x = f();\n"
                                   "int use() { return x; }\n",
    "static member initialiser": "struct S { static int v; };\n__attribute__((noinline)) int f() { return 7; }\n"
                                 "int S::v = f();\n",
    "init_array by section attribute": (
        'static void early() { puts("EARLY"); }\n'
        '__attribute__((section(".init_array"), used)) static void (*hook)() = early;\n'),
    "ctors by section attribute": (
        'static void early() { puts("EARLY"); }\n'
        '__attribute__((section(".ctors"), used)) static void (*hook)() = early;\n'),
    "init_array by assembly": (
        'extern "C" void early() { puts("EARLY"); }\n'
        'asm(".pushsection .init_array,\\"aw\\",@init_array\\n.quad early\\n.popsection\\n");\n'),
    "indirect function (its resolver runs while the library is relocated)": (
        'extern "C" void impl() {}\nextern "C" void* pick() { puts("EARLY"); return (void*)impl; }\n'
        'extern "C" void chosen() __attribute__((ifunc("pick")));\nvoid use() { chosen(); }\n'),
    "atexit replaced (nvcc's registration calls it)": (
        'extern "C" int atexit(void (*f)(void)) noexcept { puts("EARLY"); return 0; }\n'),
    "atexit replaced, called through the GOT": (
        '#pragma GCC optimize ("no-plt")\n'
        'extern "C" int atexit(void (*f)(void)) noexcept { puts("EARLY"); return 0; }\n'),
}
# Functions the statically linked CUDA runtime calls while the library loads: defining one runs it then.
SHADOWED = {
    "malloc": 'extern "C" void* malloc(size_t n) noexcept { __builtin_trap(); }\n',
    "calloc": 'extern "C" void* calloc(size_t n, size_t m) noexcept { __builtin_trap(); }\n',
    "pthread_once": ('#include <pthread.h>\n'
                     'extern "C" int pthread_once(pthread_once_t*, void (*)(void)) noexcept { __builtin_trap(); }\n'),
    "getenv": 'extern "C" char* getenv(const char*) noexcept { __builtin_trap(); }\n',
}
# Calls into the system that the static CUDA runtime makes (so the built library's imports admit them),
# refused from the submission's own unit.
SYSTEM_CALLS = {
    "dlopen": ("#include <dlfcn.h>\n", 'dlopen("libc.so.6", RTLD_NOW);'),
    "getenv": ("", 'printf("%s", getenv("HOME"));'),
    "socket": ("#include <sys/socket.h>\n", "socket(AF_INET, SOCK_STREAM, 0);"),
    "kill": ("#include <signal.h>\n", "kill(1, SIGKILL);"),
    "syscall": ("#include <unistd.h>\n#include <sys/syscall.h>\n", "syscall(SYS_getpid);"),
    "fopen": ("", 'fopen("/etc/passwd", "r");'),
    "pthread_create": ("#include <pthread.h>\nstatic void* run(void*) { return nullptr; }\n",
                       "pthread_t t; pthread_create(&t, nullptr, run, nullptr);"),
    "shm_open": ("#include <sys/mman.h>\n#include <fcntl.h>\n", 'shm_open("/x", O_CREAT | O_RDWR, 0600);'),
}


def entry_calling(call: str) -> str:
    return ENTRY.replace("  k<<<", f"  {call}\n  k<<<")


@pytest.mark.parametrize("name", sorted(LOAD_TIME))
def test_load_time_code_is_refused_on_the_gpu_build_path(name):
    build = build_gpu(SAXPY, KERNEL + LOAD_TIME[name] + ENTRY, ARCH)
    assert not build.ok and build.library is None, build.log
    assert build.unsupported and build.unsupported[0].rule == "constructor", (build.log, build.unsupported)
    assert build.unsupported[0].message.startswith(MESSAGE)


@pytest.mark.parametrize("name", sorted(SHADOWED))
def test_replacing_a_function_the_runtime_calls_is_refused(name):
    build = build_gpu(SAXPY, KERNEL + SHADOWED[name] + ENTRY, ARCH)
    assert not build.ok and build.unsupported, build.log
    assert build.unsupported[0].rule in ("symbols", "constructor")
    assert f"`{name}`" in build.unsupported[0].message


@pytest.mark.parametrize("name", sorted(SYSTEM_CALLS))
def test_system_calls_the_static_runtime_makes_are_refused_from_the_unit(name):
    include, call = SYSTEM_CALLS[name]
    build = build_gpu(SAXPY, include + KERNEL + entry_calling(call), ARCH)
    assert not build.ok and build.unsupported, build.log
    assert build.unsupported[0].rule == "symbols" and f"`{name}`" in build.unsupported[0].message


def test_the_compilers_initialiser_names_are_refused():
    code = KERNEL + '__attribute__((constructor)) static void _GLOBAL__sub_I_x() { puts("EARLY"); }\n' + ENTRY
    build = build_gpu(SAXPY, code, ARCH)
    assert not build.ok and build.unsupported[0].rule == "runtime_names", build.unsupported
    assert "`_GLOBAL__sub_I_x`" in build.unsupported[0].message


def test_defining_a_registration_function_does_not_link():
    code = KERNEL + 'extern "C" void** __cudaRegisterFatBinary(void*) { puts("EARLY"); return 0; }\n' + ENTRY
    build = build_gpu(SAXPY, code, ARCH)
    assert not build.ok and build.library is None and "multiple definition" in build.log, build.log


def test_the_check_reads_the_unit_built_now(tmp_path):
    """The unit check on an honest nvcc object passes, and on the same unit calling dlopen refuses it."""
    flags = nvcc_flags(ARCH)
    results = []
    for name, extra in (("honest", ""), ("dlopen", 'dlopen("x", 0);')):
        source, obj = tmp_path / f"{name}.cu", tmp_path / f"{name}.o"
        source.write_text("#include <dlfcn.h>\n" + KERNEL + entry_calling(extra))
        subprocess.run([tools.nvcc(), *flags, "-c", str(source), "-o", str(obj)], check=True, capture_output=True)
        results.append(check_unit(obj, tuple(flags)))
    assert results[0] == "" and "`dlopen`" in results[1], results


HONEST = {
    "saxpy": KERNEL + ENTRY,
    "device variables, the standard streams": (
        "#include <iostream>\n__constant__ float coeff[4] = {1.0f, 2.0f, 3.0f, 4.0f};\n__device__ int counter;\n"
        "__managed__ int calls;\n" + KERNEL.replace("y[i] = a", "y[i] = coeff[i % 4] * 0.0f + counter * 0.0f + a")
        + ENTRY.replace("  k<<<", "  calls = calls + 1;\n  k<<<")),
    # a global the host code writes: position-independent code reaches it through the GOT
    "file-scope host arrays": "float scratch[64];\nstatic int seen[3];\n" + KERNEL
        + ENTRY.replace("  k<<<", "  scratch[1] = 1.0f;\n  seen[0] = (int)scratch[1];\n  k<<<"),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_units_build(name):
    build = build_gpu(SAXPY, HONEST[name], ARCH)
    assert build.ok, (build.log, build.unsupported)


def one_implementation_per_family() -> list[tuple[object, str, str]]:
    first: dict[str, tuple[object, str, str]] = {}
    for task in sorted(load_dataset(labels=False).values(), key=lambda t: t.id):
        if task.family not in first and task.implementations:
            impl = task.implementations[0]
            first[task.family] = (task, impl.name, impl.source)
    return list(first.values())


@pytest.mark.slow
def test_one_dataset_implementation_per_family_builds():
    """Honest code of every family passes the unit checks (62 nvcc builds, one per core at a time)."""
    refused = collections.Counter()
    failures = []
    cases = one_implementation_per_family()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        builds = list(pool.map(lambda case: build_gpu(case[0], case[2], ARCH), cases))
    for (task, name, _), build in zip(cases, builds, strict=True):
        if not build.ok:
            refused[build.unsupported[0].rule if build.unsupported else "compile"] += 1
            failures.append((task.id, name, build.unsupported or build.log[-300:]))
    assert not failures, (refused, failures[:5])
