"""Property tests of ``env.step`` over random bytes and mutated kernels: never an exception, never a hang,
always a status from the enum and a finite reward."""

import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.env import CudaPerfEnv
from cudaperf_env.status import STATUSES

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasks"
HONEST = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
    'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
    "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n"
)
SNIPPETS = ["while (1) {}", "*(volatile int*)0 = 1;", "y[i + 100000] = 1.0f;", "%:", "\\\n", "#define y x\n",
            "__syncthreads();", "return;", "asm(\"trap;\");", "fork();", "<:", "}", "{", "\"", "/*", "'",
            "extern \"C\" void saxpy(int, float, const float*, float*) {}\n", "\x00", "\u2028", "??/\n"]  # fmt: skip
STEP_LIMIT_S = 120.0


@pytest.fixture(scope="module")
def env():
    e = CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(timeout_s=2.0), max_turns=1000)
    e.reset(seed=0, options={"task_id": "c2cuda/test_saxpy"})
    yield e
    e.close()


def check_step(env, action: str) -> None:
    started = time.monotonic()
    _, reward, _, _, info = env.step(action)
    assert time.monotonic() - started < STEP_LIMIT_S
    assert info["status"] in STATUSES and math.isfinite(reward)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
                 st.text(max_size=200).map(lambda t: f"```cuda\n{t}\n```")))  # fmt: skip
def test_random_text_is_a_status_never_an_exception(env, action):
    check_step(env, action)


@st.composite
def mutated(draw) -> str:
    """The honest kernel with a few random edits: cuts, duplications and hostile snippets."""
    code = HONEST
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(code)))
        op = draw(st.sampled_from(["insert", "cut", "duplicate"]))
        if op == "insert":
            code = code[:at] + draw(st.sampled_from(SNIPPETS)) + code[at:]
        elif op == "cut":
            code = code[:at] + code[at + draw(st.integers(1, 20)) :]
        else:
            code = code[:at] + code[max(0, at - 30) : at] + code[at:]
    return f"```cuda\n{code}\n```"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_mutated_kernels_are_a_status_never_an_exception(env, action):
    check_step(env, action)
