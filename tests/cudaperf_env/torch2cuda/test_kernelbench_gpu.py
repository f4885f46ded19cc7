"""KernelBench mode on a real GPU: honest ModelNew sources built with load_inline are correct and timed against
the PyTorch reference, their rebuild comes from the cache, and the hacks are refused or fail.

Marked ``gpu``: skipped in CI. Run on the GPU machine (a CUDA build of torch, a CUDA toolkit torch accepts:
the project's nvcc wheel, or CUDA_HOME) with
``pytest -m gpu tests/cudaperf_env/torch2cuda/test_kernelbench_gpu.py -s`` (``-s`` prints the figures).
"""

import math
import secrets
from pathlib import Path

import pytest

from cudaperf_env.backends.cuda.backend import CudaBackend
from cudaperf_env.backends.cuda.timing import TimingOptions
from cudaperf_env.evaluate import EvalOptions
from cudaperf_env.tasks import load_tasks
from cudaperf_env.turn import Grader

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
FIXTURES = Path(__file__).parents[2] / "fixtures" / "kernelbench_mode"
TANH = (FIXTURES / "tanh_modelnew.py").read_text()
LINEAR = (FIXTURES / "linear_mish_relu_modelnew.py").read_text()
VARIANTS = (FIXTURES / "tanh_variants_modelnew.py").read_text()
TASKS = load_tasks(kind="torch2cuda")
QUICK = TimingOptions(min_trials=10, max_trials=50, budget_s=1.5)


@pytest.fixture(scope="module")
def grader():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here: install a CUDA build of torch for KernelBench mode")
    return Grader.on(CudaBackend(timing=QUICK, timeout_s=60), EvalOptions(mode="kernelbench"))


def grade(grader, task_id, source, seed=3):
    turn = grader.grade(TASKS[task_id], f"Here is ModelNew:\n```python\n{source}```\n", seed=seed)
    e = turn.evaluation
    seconds = {k: round(v, 2) for k, v in e.seconds.items()}
    print(f"{task_id}: {turn.status} ({e.message[:300]}); speedup over eager {e.speedup:.3f}, vs compile "
          f"{e.speedup_vs_compile:.3f}, candidate {e.runtime_ms:.4f} ms, eager {e.baseline_ms:.4f} ms; seconds "
          f"{seconds}{'; log ' + e.compile_log[:2000] if e.compile_log else ''}")
    return turn


def variant(function: str, forward: str = "") -> str:
    """The variants fixture with forward calling ``function`` (or the given forward body)."""
    return VARIANTS.replace("        return self.ext.tanh_cuda(x)", forward or f"        return self.ext.{function}(x)")


def assert_timed(turn):
    info = turn.info()
    assert turn.status == "ok" and turn.correct, turn.evaluation.message
    assert info["baseline"] == "pytorch_eager", turn.evaluation.device
    assert math.isfinite(info["speedup"]) and 0.002 < info["speedup"] < 50  # a naive kernel may be 20x slower
    assert info["runtime_ms"] > 0 and not info["timing_flagged"], turn.evaluation.timing_flags


def test_an_honest_model_new_is_correct_and_timed_and_its_rebuild_comes_from_the_cache(grader):
    fresh = TANH.replace("#include <cuda_runtime.h>", f"#include <cuda_runtime.h>\n// build {secrets.token_hex(8)}")
    first = grade(grader, "torch2cuda/tanh", fresh)
    assert first.status == "ok", first.evaluation.compile_log or first.evaluation.message
    again = grade(grader, "torch2cuda/tanh", fresh, seed=4)
    assert_timed(again)
    assert again.evaluation.seconds["build"] == 0.0  # the same sources: loaded from CUDAPERF_CACHE_DIR
    assert first.evaluation.seconds["build"] > 5.0  # a load_inline build compiles torch's headers: seconds
    assert again.evaluation.seconds["total"] < first.evaluation.seconds["total"]


def test_a_model_with_parameters_gets_the_tasks_values_by_state_dict_key(grader):
    assert_timed(grade(grader, "torch2cuda/linear_mish_relu", LINEAR))


def test_the_variants_honest_function_is_correct(grader):
    assert grade(grader, "torch2cuda/tanh", VARIANTS).correct


@pytest.mark.parametrize(("source", "status", "words"), [
    (TANH.replace("return self.tanh.tanh_cuda(x)", "return torch.tanh(x)"), "rejected",
     "`torch.tanh` is PyTorch compute"),
    (variant("", "        try:\n            return self.ext.tanh_cuda(x)\n        except RuntimeError:\n"
                 "            return x.tanh()"), "rejected", "try/except is not allowed"),
    (variant("tanh_torch"), "rejected", "forward ran PyTorch compute (aten::tanh)"),
    (variant("tanh_in_place"), "rejected", "forward's output 0 shares memory with input"),
    (variant("", "        self.ext.tanh_cuda(x)\n        return x"), "rejected", "shares memory with input"),
    (variant("tanh_clobber"), "wrong_answer", "modified the input `x`"),
    (variant("tanh_zero_small"), "wrong_answer", "`y` differs from the expected output"),
])  # fmt: skip
def test_hacks_get_no_credit(grader, source, status, words):
    turn = grade(grader, "torch2cuda/tanh", source)
    assert turn.status == status and words in turn.feedback, turn.feedback
    info = turn.info()
    assert not info["correct"] and math.isnan(info["speedup"])
    assert info["reward/correct"] == 0 and info["reward/speedup"] == 0


def test_a_crashing_extension_is_a_runtime_error_and_the_next_evaluation_is_unaffected(grader):
    crashed = grade(grader, "torch2cuda/tanh", variant("tanh_crash"))
    assert crashed.status == "runtime_error" and "illegal memory access" in crashed.evaluation.message.lower()
    assert grade(grader, "torch2cuda/tanh", VARIANTS, seed=5).correct
