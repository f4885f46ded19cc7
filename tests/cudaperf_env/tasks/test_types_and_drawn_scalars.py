"""bool buffers, alternative C spellings (size_t) and scalars drawn per episode, through the CPU backend."""

import numpy as np
import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.tasks.loader import parse_task
from cudaperf_env.turn import Grader

TASK = load_tasks()["c2cuda/masked_axpy_f32"]
HONEST = TASK.implementation("naive").source
FIXED_ALPHA = HONEST.replace("y[i] += alpha * x[i]", "y[i] += 1.25f * x[i]")  # alpha's centre, hard-coded


@pytest.fixture(scope="module")
def grader():
    return Grader.on(CpuBackend(timeout_s=30.0))


def test_signature_spells_size_t_and_bool_and_the_prompt_says_alpha_is_drawn():
    assert TASK.signature == "void masked_axpy(size_t n, float alpha, const bool* mask, const float* x, float* y)"
    assert TASK.headers("c") == ("stdbool.h", "stddef.h") and TASK.headers("cuda") == ("stddef.h",)
    from cudaperf_env.prompt import task_prompt

    assert "drawn per episode from uniform(low=0.5, high=2.0)" in task_prompt(TASK)


def test_scalars_are_drawn_per_episode_and_bool_inputs_are_zero_or_one():
    draws = [make_inputs(TASK, {"N": 1000}, seed) for seed in range(20)]
    alphas = {float(d["alpha"][0]) for d in draws}
    assert len(alphas) == 20 and all(0.5 <= a < 2.0 for a in alphas)
    masks = np.concatenate([d["mask"] for d in draws])
    assert set(np.unique(masks)) == {0, 1} and 0.25 < masks.mean() < 0.35  # bernoulli p = 0.3
    assert make_inputs(TASK, {"N": 1000}, 3)["alpha"] == draws[3]["alpha"]


def test_an_honest_kernel_passes_every_seed_and_a_hard_coded_alpha_fails(grader):
    assert all(grader.grade(TASK, f"```cuda\n{HONEST}\n```", seed=s).correct for s in (0, 1, 2))
    assert grader.grade(TASK, f"```cuda\n{FIXED_ALPHA}\n```", seed=0).status == "wrong_answer"


def test_an_unwritten_bool_output_fails(grader):
    data = {
        "id": "c2cuda/flags", "entry": "flags",
        "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
                 {"name": "x", "role": "in", "dtype": "float32", "shape": ["N"]},
                 {"name": "pos", "role": "out", "dtype": "bool", "shape": ["N"]}],
        "configs": [{"N": 1000}],
        "reference": {"source": "void flags(int n, const float* x, bool* pos) "
                                "{ for (int i = 0; i < n; ++i) pos[i] = x[i] > 0; }"},
    }  # fmt: skip
    task = parse_task(data)
    body = "__global__ void k(int n, const float* x, bool* p) { int i = threadIdx.x + blockIdx.x * 256; {} }\n"
    launch = 'extern "C" void flags(int n, const float* x, bool* pos) { k<<<(n + 255) / 256, 256>>>(n, x, pos); }'
    right = body.replace("{}", "if (i < n) p[i] = x[i] > 0;") + launch
    half = body.replace("{}", "if (i < n && x[i] > 0) p[i] = true;") + launch  # never writes false
    assert grader.grade(task, f"```cuda\n{right}\n```").correct
    assert grader.grade(task, f"```cuda\n{half}\n```").status == "wrong_answer"


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ({"name": "b", "role": "scalar", "dtype": "bool", "value": 1}, "a flag scalar is an int32"),
        ({"name": "b", "role": "in", "dtype": "bool", "shape": ["N"], "init": {"dist": "randint"}}, "bernoulli"),
        ({"name": "n2", "role": "scalar", "dtype": "int32", "ctype": "size_t", "value": 1}, "int32 may be spelled"),
        ({"name": "s", "role": "scalar", "dtype": "float32", "init": {"dist": "planted", "value": 1}},
         "a scalar is drawn from one of"),
        ({"name": "s", "role": "scalar", "dtype": "float32"}, "or an init"),
    ],
)
def test_what_the_format_refuses_says_why(arg, message):
    data = {"id": "c2cuda/t", "entry": "t", "configs": [{"N": 10}], "reference": {"source": "void t() {}"},
            "args": [{"name": "x", "role": "out", "dtype": "float32", "shape": ["N"]}, arg]}  # fmt: skip
    with pytest.raises(TaskFormatError, match=message):
        parse_task(data)


POINTS = {
    "id": "c2cuda/norms", "entry": "norms",
    "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
             {"name": "p", "role": "in", "dtype": "float64", "ctype": "point3", "fields": ["x", "y", "z"],
              "shape": ["N"]},
             {"name": "r", "role": "out", "dtype": "float64", "shape": ["N"]}],
    "configs": [{"N": 1000}, {"N": 77}],
    "reference": {"source": "#include <math.h>\nvoid norms(int n, const point3* p, double* r) "
                            "{ for (int i = 0; i < n; ++i) r[i] = sqrt(p[i].x * p[i].x + p[i].y * p[i].y "
                            "+ p[i].z * p[i].z); }"},
}  # fmt: skip


def test_a_buffer_of_declared_structs_is_laid_out_interleaved_and_judged(grader):
    task = parse_task(POINTS)
    assert task.signature == "void norms(int n, const point3* p, double* r)"
    assert task.type_declarations("cuda") == "typedef struct { double x; double y; double z; } point3;\n"
    assert make_inputs(task, {"N": 77}, 0)["p"].shape == (231,)
    kernel = ("__global__ void k(int n, const point3* p, double* r) { int i = blockIdx.x * 64 + threadIdx.x;\n"
              "  if (i < n) r[i] = sqrt(p[i].x * p[i].x + p[i].y * p[i].y + p[i].z * p[i].z); }\n"
              'extern "C" void norms(int n, const point3* p, double* r) { k<<<(n + 63) / 64, 64>>>(n, p, r); }')
    assert grader.grade(task, f"```cuda\n{kernel}\n```").correct
    swapped = kernel.replace("p[i].z * p[i].z", "p[i].x * p[i].z")
    assert grader.grade(task, f"```cuda\n{swapped}\n```").status == "wrong_answer"


def test_cuda_vector_types_are_declared_for_the_c_reference_only():
    task = load_tasks()["c2cuda/complex_mul_f32"]
    assert task.type_declarations("cuda") == ""
    assert task.type_declarations("c") == "typedef struct __attribute__((aligned(8))) { float x; float y; } float2;\n"
    from cudaperf_env.prompt import task_prompt

    assert "`a`: float2 (struct of float32 x, y) input" in task_prompt(task)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"ctype": "float2", "fields": ["x", "y"]}, "CUDA's float2 is float32"),
        ({"fields": ["x"]}, "two or more distinct"),
        ({"ctype": "", "fields": ["x", "y"]}, "names its C type"),
        ({"fields": ["x", "y"], "ctype": "pt", "check": "multiset", "role": "out"}, "element by element"),
    ],
)
def test_malformed_structs_are_refused(edit, message):
    data = {**POINTS, "args": [POINTS["args"][0], {**POINTS["args"][1], **edit}, POINTS["args"][2]]}
    with pytest.raises(TaskFormatError, match=message):
        parse_task(data)
