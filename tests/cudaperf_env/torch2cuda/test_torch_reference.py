"""The PyTorch reference: task-file binding checks, expected outputs from CPU torch in a child process."""

import copy
from pathlib import Path

import numpy as np
import pytest

from cudaperf_env.backends.execute import Job
from cudaperf_env.backends.reference import ReferenceError, ReferenceOutputs
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks import parse_task
from cudaperf_env.tasks.inputs import make_inputs

SOURCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.weight) * self.scale, x.sum(dim=-1)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8, 0.5]
'''
TASK = {
    "id": "torch2cuda/scaled_relu", "entry": "forward",
    "args": [
        {"name": "x", "role": "in", "dtype": "float32", "shape": ["B", "D"]},
        {"name": "w", "role": "in", "dtype": "float32", "shape": ["D"]},
        {"name": "y", "role": "out", "dtype": "float32", "shape": ["B", "D"]},
        {"name": "s", "role": "out", "dtype": "float32", "shape": ["B"]},
        {"name": "batch", "role": "scalar", "dtype": "int32", "value": "B"},
        {"name": "dim", "role": "scalar", "dtype": "int32", "value": "D"},
    ],
    "configs": [{"B": 3, "D": 5}, {"B": 7, "D": 33}],
    "reference": {"language": "pytorch", "source": SOURCE, "inputs": ["x"], "parameters": {"weight": "w"},
                  "outputs": ["y", "s"], "init_inputs": ["D", 0.5]},
}


def expected(task, seed=0, reference=None):
    jobs = [Job(c, make_inputs(task, c, seed)) for c in task.configs]
    return jobs, (reference or ReferenceOutputs()).expected(task, jobs, seed, Path("/tmp"))


def test_outputs_match_numpy_with_parameters_passed_explicitly(tmp_path):
    task = parse_task(TASK)
    assert task.signature == "void forward(const float* x, const float* w, float* y, float* s, int batch, int dim)"
    jobs, want = expected(task)
    for job, out in zip(jobs, want, strict=True):
        b, d = job.config["B"], job.config["D"]
        x, w = job.inputs["x"].reshape(b, d), job.inputs["w"]
        np.testing.assert_allclose(out["y"].reshape(b, d), np.maximum(x * w, 0) * 0.5, rtol=1e-6)
        np.testing.assert_allclose(out["s"], x.sum(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out["x"], job.inputs["x"])  # inputs come back as they went in


def test_the_child_process_is_reused_and_results_are_cached_per_seed():
    task = parse_task(TASK)
    reference = ReferenceOutputs()
    _, first = expected(task, 0, reference)
    proc = reference._torch._proc
    _, again = expected(task, 0, reference)
    _, other = expected(task, 1, reference)
    assert reference._torch._proc is proc and proc.poll() is None
    assert reference._torch._requests == 2  # the repeat came from the cache
    np.testing.assert_array_equal(first[0]["y"], again[0]["y"])
    assert not np.array_equal(first[0]["y"], other[0]["y"])


@pytest.mark.parametrize(("change", "problem"), [
    (lambda t: t["reference"].update(parameters={}), "not bound: w"),
    (lambda t: t["reference"].update(outputs=["y", "x"]), "'x' is not an argument with role out"),
    (lambda t: t["reference"].update(inputs=["x", "w"]), "bound twice: w"),
    (lambda t: t["reference"].update(init_inputs=["E"]), "E"),
    (lambda t: t["reference"].update(language="julia"), "expected one of c, pytorch"),
    (lambda t: t["reference"].pop("outputs"), "reference.outputs"),
])
def test_binding_errors_name_the_field(change, problem):
    data = copy.deepcopy(TASK)
    change(data)
    with pytest.raises(TaskFormatError, match="reference") as info:
        parse_task(data)
    assert problem in str(info.value)


@pytest.mark.parametrize(("change", "problem"), [
    (lambda t: t["reference"].update(parameters={"bias": "w"}), "not bound to an argument: weight"),
    (lambda t: t["args"][3].update(shape=["B", "2"]), "forward's `s` has shape (3,), the task says [3, 2]"),
    (lambda t: t["reference"].update(source=SOURCE.replace("return torch.relu", "raise RuntimeError('boom')\n"
                                                                              "        return torch.relu")), "boom"),
    (lambda t: t["reference"].update(source="x = 1\n"), "no `class Model"),
])
def test_a_broken_reference_is_a_reference_error_not_a_crash(change, problem):
    data = copy.deepcopy(TASK)
    change(data)
    with pytest.raises(ReferenceError) as info:
        expected(parse_task(data))
    assert problem in str(info.value)
