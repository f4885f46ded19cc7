"""KernelBench-format import on files written for the test (tests/fixtures/kernelbench, never fetched)."""

import json
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.cli import main
from cudaperf_env.datagen.kernelbench import convert, import_file
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_task, parse_task

FIXTURES = Path(__file__).parents[2] / "fixtures" / "kernelbench"
RELU_KERNEL = """
__global__ void relu_kernel(const float* x, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f);
}
extern "C" void forward(const float* x, float* out, int batch_size, int dim) {
  long long n = (long long)batch_size * dim;
  relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, out, n);
}
"""


def fixture(name: str) -> Path:
    return next(FIXTURES.rglob(name))


def test_shapes_become_expressions_and_the_file_sizes_become_the_perf_configuration():
    task = parse_task(convert(fixture("1_ReLU.py").read_text(), "1_ReLU", "level1"))
    assert task.id == "torch2cuda/kb_level1_1_relu" and task.family == "kernelbench_level1"
    assert task.signature == "void forward(const float* x, float* out, int batch_size, int dim)"
    assert [a.shape for a in task.args if a.is_buffer] == [("BATCH_SIZE", "DIM"), ("BATCH_SIZE", "DIM")]
    assert task.perf_configs == ({"BATCH_SIZE": 16, "DIM": 16384},)
    assert len(task.configs) == 3 and len(task.hidden_configs) == 1
    assert any(c["DIM"] % 2 for c in task.configs)
    assert all(c["BATCH_SIZE"] * c["DIM"] <= 30000 for c in task.correctness_configs)


def test_parameters_conv_output_sizes_and_float_init_arguments():
    conv = convert(fixture("4_Conv2d_square.py").read_text(), "4_Conv2d_square")
    shapes = {a["name"]: a["shape"] for a in conv["args"] if a["role"] != "scalar"}
    assert shapes["out"] == [8, "OUT_CHANNELS", "HEIGHT - 2", "WIDTH - 2"]
    assert shapes["conv_weight"] == ["OUT_CHANNELS", 3, 3, 3]
    assert conv["reference"]["parameters"] == {"conv.weight": "conv_weight", "conv.bias": "conv_bias"}
    gemm = convert(fixture("1_Gemm_Multiply_LeakyReLU.py").read_text(), "gemm")
    assert gemm["reference"]["init_inputs"] == ["IN_FEATURES", "OUT_FEATURES", 2.0, 0.1]
    weight = next(a for a in gemm["args"] if a["name"] == "gemm_weight")
    assert weight["shape"] == ["OUT_FEATURES", "IN_FEATURES"] and weight["init"]["dist"] == "uniform"
    assert 0 < weight["init"]["high"] <= 0.11  # nn.Linear's own range, 1/sqrt(in_features)
    sums = convert(fixture("3_Sum_over_dim.py").read_text(), "sum")
    x = next(a for a in sums["args"] if a["name"] == "x")
    assert x["shape"] == ["BATCH_SIZE", "DIM1", "DIM2"]  # equal in the file (256, 256), kept apart


@pytest.mark.parametrize(("name", "reason"), [
    ("1_pretrained_gpt2.py", "loads a pretrained model from a hub (KernelBench level-4 style)"),
    ("2_Linear_Dropout.py", "forward is random"),
    ("5_Cross_entropy.py", "input 1 holds integers"),
])
def test_files_that_cannot_convert_say_why(name, reason):
    outcome = import_file(fixture(name))
    assert outcome.task is None and reason in outcome.reason


def test_the_command_writes_checked_tasks_and_a_report(tmp_path, capsys):
    code = main(["tasks", "import-kernelbench", str(FIXTURES), "--out", str(tmp_path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["files"] == 8 and report["checked"]
    assert len(report["converted"]) == 5 and len(report["not_converted"]) == 3
    assert json.loads((tmp_path / "import-report.json").read_text()) == report
    task = load_task(tmp_path / "kb_level1_1_relu.yaml")
    evaluator = Evaluator(CpuBackend(timeout_s=60.0))
    good = evaluator.evaluate(task, RELU_KERNEL, seed=5)
    assert good.correct, good.message
    zero = evaluator.evaluate(task, RELU_KERNEL.replace("fmaxf(x[i], 0.0f)", "0.0f"), seed=5)
    assert zero.status == "wrong_answer"
