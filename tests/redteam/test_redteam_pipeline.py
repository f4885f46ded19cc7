"""Attacks through the whole CPU pipeline (screen, nvcc check, g++, worker): observations and group-mates.

Some run with the screen taken out of the pipeline, to show what holds behind it.
"""

from pathlib import Path

import pytest
from hostile import confined_processes, needs_namespaces

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.env import CudaPerfEnv
from cudaperf_env.evaluate import STAGES, EvalOptions, Evaluator, screen_source
from cudaperf_env.status import STATUSES
from cudaperf_env.tasks import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasks"
SAXPY = load_task(FIXTURES / "saxpy.yaml")
KERNEL = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
)


def entry(body: str = "", block: str = "256") -> str:
    return (KERNEL + 'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
            f"{body}\n  k<<<(n + 255) / 256, {block}>>>(n, a, x, y);\n}}\n")  # fmt: skip


@pytest.fixture(scope="module")
def unscreened():
    """An evaluator without the screen: the layers behind it alone."""
    stages = tuple(s for s in STAGES if s is not screen_source)
    return Evaluator(CpuBackend(timeout_s=3.0), EvalOptions(compile_timeout_s=30.0), stages=stages)


def test_macros_cannot_rewrite_the_harness(unscreened):
    """A launch error the submission hides from its own unit is still seen by the harness's."""
    hide = "#define cudaGetLastError() cudaSuccess\n#define cudaDeviceSynchronize() cudaSuccess\n"
    e = unscreened.evaluate(SAXPY, hide + entry(block="4096"), seed=1)
    assert e.status == "runtime_error" and "invalid" in e.message.lower(), e.message


@needs_namespaces
def test_root_only_files_never_reach_the_observation(secret):
    path, marker = secret
    env = CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(timeout_s=3.0), max_turns=4)
    try:
        env.reset(seed=0, options={"task_id": "c2cuda/test_saxpy"})
        attempts = [
            f'%:include "{path}"\n' + entry(),  # digraph directive: the screen refuses it
            f'#include "{path}"\n' + entry(),
            entry(f'  FILE* f = fopen("{path}", "r"); char s[64] = {{0}}; if (f) fgets(s, 63, f); printf("%s", s);'),
        ]
        for code in attempts:
            obs, _, _, _, info = env.step(f"```cuda\n{code}\n```")
            assert marker not in obs and info["status"] in STATUSES and not info["correct"]
    finally:
        env.close()


@needs_namespaces
def test_hostile_group_mates_cannot_hurt_honest_ones(unscreened):
    """One evaluate_many: forged replies, a background thread, and a fork bomb beside honest submissions."""
    # every descriptor the worker may hold: the reply pipe keeps the parent's number, which a busy parent
    # (many files open, as under pytest-xdist) can push past any small range
    forge = entry("  for (int fd = 3; fd < 65536; ++fd) write(fd, \"CPF1\\xff\\xff\\xff\\x7f{}\", 10);")
    spin = entry("  pthread_t t; pthread_create(&t, 0, [](void*) -> void* { for (;;) {} }, 0);\n"
                 "  for (int i = 0; i < 100; ++i) { sigaction(0, 0, 0); }")  # fmt: skip
    system = "#include <unistd.h>\n#include <pthread.h>\n#include <signal.h>\n"
    actions = [entry(), system + forge, entry(), system + spin, entry()]
    results = unscreened.evaluate_many(SAXPY, actions, seed=3, max_workers=5)
    statuses = [str(r.status) for r in results]
    assert statuses[0] == statuses[2] == statuses[4] == "ok", [(r.status, r.message) for r in results]
    assert statuses[1] == "runtime_error" and not results[1].correct, results[1].message
    assert all(s in STATUSES for s in statuses)
    assert confined_processes() == []  # the spinning thread ended with its evaluation


def test_printing_does_not_reveal_the_hidden_sizes(unscreened):
    e = unscreened.evaluate(SAXPY, "#include <cstdio>\n" + entry('  printf("size=%d;", n);'), seed=1)
    assert e.status == "ok"
    shown = {f"size={c['N']};" for c in SAXPY.configs}
    hidden = {f"size={c['N']};" for c in SAXPY.hidden_configs}
    assert any(s in e.stdout for s in shown) and not any(s in e.stdout for s in hidden), e.stdout
