"""KernelBench mode's stages end to end where there is no GPU: the real runner on ``device="cpu"`` (a C++
extension built by load_inline, the confined torch worker) behind a backend offering the capability, the real
reference process and judge, so each verdict and its feedback come out as on the GPU."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from cudaperf_env.backends.base import Capabilities
from cudaperf_env.backends.cuda.kernelbench import KernelBenchRunner
from cudaperf_env.evaluate import EvalOptions, Evaluator
from cudaperf_env.feedback import feedback
from cudaperf_env.tasks import load_tasks

pytest.importorskip("torch")
pytestmark = pytest.mark.slow
FIXTURE = (Path(__file__).parents[1] / "fixtures" / "kernelbench_mode" / "cpu_tanh_modelnew.py").read_text()
TANH = load_tasks(kind="torch2cuda")["torch2cuda/tanh"]


@dataclass(frozen=True)
class HostModels:
    """A backend that runs KernelBench-mode submissions on the host and times nothing."""

    runner: KernelBenchRunner
    name: str = "cpu"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(kernelbench=self.runner)


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(HostModels(KernelBenchRunner(device="cpu", timeout_s=60)), EvalOptions(mode="kernelbench"))  # type: ignore[arg-type]


def evaluate(evaluator, forward):
    source = FIXTURE.replace("        return self.ext.tanh_cpu(x)", forward)
    evaluation = evaluator.evaluate(TANH, f"```python\n{source}```", seed=2)
    return evaluation, feedback(TANH, evaluation)


def test_an_honest_model_new_is_correct_on_every_configuration(evaluator):
    evaluation, text = evaluate(evaluator, "        return self.ext.tanh_cpu(x)")
    assert evaluation.status == "ok" and evaluation.correct and evaluation.compiled, text
    assert len(evaluation.configs) == len(TANH.correctness_configs)
    assert text.startswith("[ok] Correct on all 4 configurations (cpu backend).")


def test_a_run_time_refusal_is_rejected_with_its_reason(evaluator):
    evaluation, text = evaluate(evaluator, "        return self.ext.torch_tanh(x)")
    assert evaluation.status == "rejected" and not evaluation.correct
    assert text.startswith("[rejected] Rejected at run time:\n  forward ran PyTorch compute (aten::tanh)")


def test_a_wrong_result_is_a_wrong_answer_with_the_mismatch(evaluator):
    evaluation, text = evaluate(evaluator, "        return self.ext.tanh_cpu(x[:, :1].expand_as(x))")
    assert evaluation.status == "wrong_answer"
    assert "`y` differs from the expected output" in text and "first mismatch at flat index" in text


def test_a_build_error_is_a_compile_error_with_the_compiler_message(evaluator):
    broken = FIXTURE.replace("return out;\n}\n\ntorch::Tensor scale_inplace", "return undefined_out;\n}\n\n"
                             "torch::Tensor scale_inplace")  # fmt: skip
    evaluation = evaluator.evaluate(TANH, f"```python\n{broken}```", seed=2)
    assert evaluation.status == "compile_error" and evaluation.message == "the load_inline build failed"
    assert "'undefined_out' was not declared in this scope" in evaluation.compile_log
