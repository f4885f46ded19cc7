"""``cudaperf tasks new`` + ``tasks check``: a user's C function becomes a task that evaluates."""

import json

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.cli import main
from cudaperf_env.errors import ScaffoldError
from cudaperf_env.tasks import load_task
from cudaperf_env.tasks.scaffold import parse_function, scaffold
from cudaperf_env.turn import Grader

# Written for this test: a weighted row sum, not a task of the repository.
REFERENCE = """
/* y[i] = w * sum_j a[i][j] + y[i] */
static float twice(float v) { return 2.0f * v; }
void weighted_row_sum(int rows, int cols, float w, const float* a, float* y) {
  for (int i = 0; i < rows; ++i) {
    double s = 0.0;
    for (int j = 0; j < cols; ++j) s += a[i * cols + j];
    y[i] = twice(0.5f * w) * (float)s + y[i];
  }
}
"""
KERNEL = """```cuda
__global__ void k(int rows, int cols, float w, const float* a, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  double s = 0.0;  // as the reference: the test is about the scaffold, not float32 summation
  for (int j = 0; j < cols; ++j) s += a[i * cols + j];
  y[i] = w * (float)s + y[i];
}
extern "C" void weighted_row_sum(int rows, int cols, float w, const float* a, float* y) {
  k<<<(rows + 127) / 128, 128>>>(rows, cols, w, a, y);
}
```"""


def test_roles_dtypes_and_shapes_are_guessed_from_the_c_function():
    entry, params = parse_function(REFERENCE)
    assert entry == "weighted_row_sum"
    assert [(p.name, p.dtype, p.role) for p in params] == [
        ("rows", "int32", "scalar"), ("cols", "int32", "scalar"), ("w", "float32", "scalar"),
        ("a", "float32", "in"), ("y", "float32", "inout")]  # fmt: skip
    text = scaffold("weighted_row_sum", REFERENCE)
    assert "shape: [ROWS, COLS]}" in text and "{name: y, role: inout, dtype: float32, shape: [ROWS]}" in text


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("int f(int n) { return n; }", "no C function 'void NAME"),
        ("void f(int n, long* x) { }", "write 'long long' instead of 'long'"),
        ("void f(int n, float** x) { }", "one level of pointer"),
        ("void f(float* x) { }", "no integer size parameter"),
        ("void f(int n, struct p* x) { }", "type 'struct p' is not one of"),
    ],
)
def test_what_a_task_cannot_express_is_refused_with_what_to_change(source, message):
    with pytest.raises(ScaffoldError, match=message):
        scaffold("f", source)


@pytest.fixture(scope="module")
def cpu_grader():
    return Grader.on(CpuBackend(timeout_s=30.0))


def test_new_then_check_gives_a_task_that_evaluates(tmp_path, capsys, cpu_grader):
    source = tmp_path / "wrs.c"
    source.write_text(REFERENCE)
    assert main(["tasks", "new", "weighted_row_sum", "--from", str(source), "--out", str(tmp_path / "tasks")]) == 0
    assert main(["tasks", "new", "weighted_row_sum", "--from", str(source), "--out", str(tmp_path / "tasks")]) == 2
    capsys.readouterr()
    assert main(["tasks", "check", str(tmp_path / "tasks"), "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["id"], result["ok"], result["errors"]) == ("c2cuda/weighted_row_sum", True, [])
    task = load_task(tmp_path / "tasks" / "weighted_row_sum.yaml")
    assert cpu_grader.grade(task, KERNEL).correct
    assert cpu_grader.grade(task, KERNEL.replace("w * (float)s + y[i]", "w * (float)s")).status == "wrong_answer"


def test_check_reports_every_broken_file_and_fails(tmp_path, capsys):
    (tmp_path / "bad.yaml").write_text("id: c2cuda/bad\nentry: f\n")
    loose = scaffold("loose", "void loose(int n, const float* x, float* y) "
                              "{ for (int i = 0; i < n; ++i) y[i] = 1e-7f * x[i]; }")  # fmt: skip
    (tmp_path / "loose.yaml").write_text(loose)
    assert main(["tasks", "check", str(tmp_path), "--json"]) == 1
    bad, loose_result = json.loads(capsys.readouterr().out)
    assert not bad["ok"] and "bad.yaml" in bad["errors"][0]
    assert not loose_result["ok"] and "an all-zero y passes the tolerance" in loose_result["errors"][0]


@pytest.mark.gpu
def test_the_scaffolded_task_evaluates_on_the_gpu_too(tmp_path):
    from cudaperf_env.backends.cuda.backend import CudaBackend

    source = tmp_path / "wrs.c"
    source.write_text(REFERENCE)
    assert main(["tasks", "new", "weighted_row_sum", "--from", str(source), "--out", str(tmp_path)]) == 0
    task = load_task(tmp_path / "weighted_row_sum.yaml")
    turn = Grader.on(CudaBackend(timeout_s=30.0)).grade(task, KERNEL)
    assert turn.correct and turn.evaluation.baseline == "c_reference", turn.feedback
