"""Task files: parsing, derived signature, and errors that name the file and field."""

from pathlib import Path

import pytest
import yaml

from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks import find_task, load_task, load_task_dir, parse_task
from cudaperf_env.tasks.expressions import evaluate

FIXTURES = Path(__file__).parents[2] / "fixtures" / "tasks"


def raw() -> dict:
    return yaml.safe_load((FIXTURES / "saxpy.yaml").read_text())


def test_fixture_parses_with_derived_signature():
    task = load_task(FIXTURES / "saxpy.yaml")
    assert task.signature == "void saxpy(int n, float a, const float* x, float* y)"
    assert [a.role for a in task.args] == ["scalar", "scalar", "in", "inout"]
    assert task.args[2].numel({"N": 1823}) == 1823
    assert len(task.correctness_configs) == 4
    assert task.tolerance(task.args[2].dtype).rtol == 1e-4


def test_task_dir_loads_every_file_by_id():
    tasks = load_task_dir(FIXTURES)
    assert set(tasks) == {"c2cuda/test_saxpy", "c2cuda/test_sum"}
    assert find_task("c2cuda/test_sum", FIXTURES).entry == "sum"
    assert find_task(str(FIXTURES / "sum.yaml")).id == "c2cuda/test_sum"


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        (lambda d: d.update(schema=2), "schema", "expected 1, got 2"),
        (lambda d: d.update(id="Saxpy"), "id", "expected '<kind>/<name>'"),
        (lambda d: d["args"][2].update(dtype="float16"), "args[2].dtype", "unknown dtype 'float16'"),
        (lambda d: d["args"][2].update(role="output"), "args[2].role", "expected one of scalar, in, out, inout"),
        (lambda d: d["args"][3].update(shape=["M"]), "args[3]", "unknown symbol 'M'"),
        (lambda d: d.update(baseline="fast"), "baseline", "'fast' is not the name of an implementation"),
        (lambda d: d.update(signature="void saxpy(int n, float* x)"), "signature", "does not match args"),
        (lambda d: d.update(configs=[{"N": "big"}]), "configs[0].N", "expected SYMBOL: integer"),
        (lambda d: d["args"][2].update(init={"dist": "gamma"}), "args[2].init.dist", "expected one of normal"),
        (lambda d: d.pop("reference"), "reference", "expected a mapping"),
    ],
)
def test_errors_name_the_field(edit, field, problem):
    data = raw()
    edit(data)
    with pytest.raises(TaskFormatError) as info:
        parse_task(data, "tasks/saxpy.yaml")
    assert info.value.field == field
    assert problem in info.value.problem
    assert str(info.value).startswith(f"tasks/saxpy.yaml: field '{field}'")


def test_unknown_task_id_suggests_close_ids():
    with pytest.raises(KeyError, match="Did you mean c2cuda/test_saxpy"):
        find_task("saxpy", FIXTURES)


def test_expressions_are_arithmetic_only():
    assert evaluate("max(N // 2, 1) * M + 1", {"N": 7, "M": 3}) == 10
    with pytest.raises(ValueError, match="unsupported syntax"):
        evaluate("__import__('os')", {})
    with pytest.raises(ValueError, match="unknown symbol 'K'"):
        evaluate("K", {"N": 1})
