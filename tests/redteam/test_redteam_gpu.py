"""GPU twins of the red-team tests: the GPU worker confined with its device nodes bound in.

Marked ``gpu``: run on the GPU machine with ``pytest -m gpu tests/redteam``.
"""

import os
import subprocess

import pytest
from hostile import confined_processes, needs_namespaces

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import STAGES, Evaluator, screen_source
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.confine import UID_RANGE

pytestmark = [pytest.mark.gpu, needs_namespaces]
SAXPY = load_tasks(kind="c2cuda")["c2cuda/saxpy_f32"]
# The GPU build refuses a unit that imports open, write, fork, ... (backends/cuda/imports.check_unit), so attacks
# on the worker and the confinement reach them by raw system calls, which no symbol check can see.
RAW_SYSCALL = (
    "static long raw(long n, long a = 0, long b = 0, long c = 0) {\n  long r;\n"
    '  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");\n'
    "  return r;\n}\n"
)
SYS_READ, SYS_WRITE, SYS_OPEN, SYS_FORK, SYS_SETSID = 0, 1, 2, 57, 112
KERNEL = (
    "#include <cstdio>\n#include <fcntl.h>\n" + RAW_SYSCALL +
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
)


def entry(body: str = "") -> str:
    return (KERNEL + 'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
            f"{body}\n  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}}\n")  # fmt: skip


@pytest.fixture(scope="module")
def unscreened():
    stages = tuple(s for s in STAGES if s is not screen_source)
    backend = CudaBackend(timing=TimingOptions(min_trials=5, max_trials=10, budget_s=1.0), timeout_s=20)
    return Evaluator(backend, stages=stages)


def test_the_confined_gpu_worker_runs_and_times_an_honest_kernel(unscreened):
    e = unscreened.evaluate(SAXPY, entry(), seed=1)
    assert (e.status, e.correct) == ("ok", True), e.message
    assert e.speedup > 0 and confined_processes() == []


def test_the_gpu_worker_runs_as_a_user_of_its_own():
    folder = scratch_dir()
    with CudaBackend().start_worker(folder) as worker:
        assert worker.uid is not None and UID_RANGE[0] <= worker.uid < UID_RANGE[1]
        assert worker.confinement == "root"


def test_a_gpu_submission_cannot_read_root_only_files_or_the_network(unscreened, secret):
    path, marker = secret
    body = (f'  char s[64] = {{0}}; long f = raw({SYS_OPEN}, (long)"{path}", O_RDONLY);\n'
            f'  if (f >= 0) {{ raw({SYS_READ}, f, (long)s, 63); printf("%s", s); }}\n'
            f'  long g = raw({SYS_OPEN}, (long)"/dev/shm/cudaperf-gpu-leak", O_WRONLY | O_CREAT, 0644);\n'
            f'  if (g >= 0) raw({SYS_WRITE}, g, (long)"x", 1);')  # fmt: skip
    e = unscreened.evaluate(SAXPY, entry(body), seed=1)
    assert e.status == "ok" and e.correct, e.message  # it ran: the confinement, not a check, stopped it
    assert marker not in e.stdout and marker not in e.message
    assert not os.path.exists("/dev/shm/cudaperf-gpu-leak")


def test_forged_gpu_replies_are_a_runtime_error(unscreened):
    body = f'  for (int fd = 3; fd < 65536; ++fd) raw({SYS_WRITE}, fd, (long)"CPF1\\xff\\xff\\xff\\x7f{{}}", 10);'
    e = unscreened.evaluate(SAXPY, entry(body), seed=1)
    assert e.status == "runtime_error" and not e.correct


def test_a_gpu_soak_leaves_no_process_and_no_gpu_memory(unscreened):
    """Twenty hostile GPU steps in a row: afterwards no confined process and no compute context of ours."""
    attacks = [entry(), entry(f'  for (int fd = 3; fd < 64; ++fd) raw({SYS_WRITE}, fd, (long)"junk", 4);'),
               entry("  k<<<1, 1>>>(n, a, x, (float*)0x10);"),
               entry(f"  if (raw({SYS_FORK}) == 0) {{ raw({SYS_SETSID}); for (;;) {{}} }}")]
    for step in range(20):
        e = unscreened.evaluate(SAXPY, attacks[step % len(attacks)], seed=step)
        assert str(e.status) in ("ok", "runtime_error", "timeout", "wrong_answer", "rejected"), e.message
    assert confined_processes() == []
    apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                          text=True, check=False).stdout.split()  # fmt: skip
    assert not [pid for pid in apps if pid.isdigit() and os.path.exists(f"/proc/{pid}")
                and os.stat(f"/proc/{pid}").st_uid >= UID_RANGE[0]]  # fmt: skip


LOAD_TIME = {
    "constructor attribute": '__attribute__((constructor)) static void early() { puts("EARLY-MARKER"); }\n',
    "global object with a constructor": 'struct G { G() { puts("EARLY-MARKER"); } };\nG g;\n',
    "atexit replaced": 'extern "C" int atexit(void (*f)(void)) noexcept { puts("EARLY-MARKER"); return 0; }\n',
    "malloc replaced": ('extern "C" void* malloc(size_t n) noexcept { puts("EARLY-MARKER"); return nullptr; }\n'),
}


@pytest.mark.parametrize("name", sorted(LOAD_TIME))
def test_gpu_load_time_code_is_rejected_and_never_runs(unscreened, name):
    """Behind the screen, code that would run when the GPU worker loads the library is `rejected` at build."""
    code = entry().replace('extern "C" void saxpy', LOAD_TIME[name] + 'extern "C" void saxpy', 1)
    e = unscreened.evaluate(SAXPY, code, seed=1)
    assert e.status == "rejected" and not e.compiled and not e.configs, e.message
    assert "EARLY-MARKER" not in e.stdout


def test_honest_gpu_load_time_registration_runs(unscreened):
    """nvcc's own registration of kernels and __device__/__constant__/__managed__ variables passes the checks."""
    code = ("__constant__ float scale[1] = {1.0f};\n__device__ float zero;\n__managed__ int calls;\n"
            + entry("  calls = calls + 1;").replace("y[i] = a * x[i]", "y[i] = scale[0] * a * x[i] + zero"))
    e = unscreened.evaluate(SAXPY, code, seed=1)
    assert (e.status, e.correct) == ("ok", True), e.message
