"""Calls the CPU runtime's headers declare in every submission's unit (unistd.h, pthread.h, signal.h,
sys/mman.h): they compile, and must not run."""

from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_task

SAXPY = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")
KERNEL = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
)
# No #include: the runtime's headers declare each of these for the submission.
CALLS = {
    "mmap": "void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); (void)p;",
    "pthread_create": "pthread_t t; pthread_create(&t, nullptr, [](void*) -> void* { return nullptr; }, nullptr);",
    "sigaction": "struct sigaction sa = {}; sa.sa_handler = SIG_IGN; sigaction(SIGTERM, &sa, nullptr);",
    "getpid": "if (getpid() == 1) n = 0;",
    "dlopen": 'dlopen("libc.so.6", RTLD_NOW);',
    "fopen": 'if (FILE* f = fopen("/etc/hostname", "r")) fclose(f);',
    "stat": 'struct stat st; stat("/etc", &st);',
    "_exit": "if (n < 0) _exit(3);",
    "sigaltstack": "stack_t ss = {}; sigaltstack(nullptr, &ss);",
}
# The runtime's headers (and the standard library's <thread>) call these in inline code, which the
# unit of any submission may hold: behind the screen they stay reachable, bounded by the confinement.
REACHABLE = ("mmap", "pthread_create")


def entry(body: str) -> str:
    return (KERNEL + 'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
            f"  {body}\n  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}}\n")  # fmt: skip


@pytest.mark.parametrize("name", sorted(set(CALLS) - set(REACHABLE)))
def test_runtime_declarations_compile_but_are_refused_behind_the_screen(name):
    """Only the runtime object imports these: the submission's unit may not (its imports are checked)."""
    build = CpuBackend(timeout_s=3.0).build(SAXPY, entry(CALLS[name]))
    assert not build.ok and build.library is None, build.log
    assert build.unsupported and build.unsupported[0].rule == "symbols", build.unsupported
    assert f"`{name}`" in build.unsupported[0].message


@pytest.mark.parametrize("name", ["mmap", "pthread_create", "sigaction", "getpid"])
def test_runtime_declarations_never_run_through_the_pipeline(name):
    """The screen refuses the names; nvcc, which declares none of them without an include, would not compile it."""
    e = Evaluator(CpuBackend(timeout_s=3.0)).evaluate(SAXPY, entry(CALLS[name]), seed=1)
    assert e.status in ("rejected", "compile_error") and not e.configs and not e.correct, (e.status, e.message)


def test_what_stays_reachable_behind_the_screen_is_what_the_headers_inline():
    from cudaperf_env.backends.cpu.compiler import runtime_version
    from cudaperf_env.backends.cpu.imports import unit_baseline

    allowed = unit_baseline(runtime_version(), True, full=True)
    assert set(REACHABLE) <= allowed
    assert not {"sigaction", "dlopen", "fopen", "stat", "_exit", "getpid", "execve", "fork"} & allowed
