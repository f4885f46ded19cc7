"""A task's trusted input generator fills its inputs in a worker; failures name the task, not the submission."""

from dataclasses import replace

import numpy as np
import pytest

from cudaperf_env.backends.generator import GeneratedInputs, GeneratorError
from cudaperf_env.tasks import load_tasks
from cudaperf_env.tasks.schema import CFunction

TASK = load_tasks()["c2cuda/returns_f32"]


def test_generated_inputs_are_reproducible_per_seed_and_have_the_generators_property():
    inputs = GeneratedInputs()
    a, b, c = (inputs(TASK, {"N": 1823}, s)["p"] for s in (0, 0, 1))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    steps = a[1:] / a[:-1]
    assert np.all(a > 0) and np.all(np.abs(steps - 1) < 0.03)  # a random walk, not independent draws
    a[:] = 0  # callers get copies: the cache is not theirs to spoil
    assert inputs(TASK, {"N": 1823}, 0)["p"][0] > 0


def test_the_walk_stays_finite_over_the_perf_configuration():
    # a plain geometric walk drifted past float32's range over 64M steps (found labelling on a GPU)
    p = GeneratedInputs()(TASK, TASK.perf_configs[0], 0)["p"]
    assert len(p) == 67108864 and np.all(np.isfinite(p)) and p.min() > 10 and p.max() < 1000


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("void price_walk(unsigned long long seed, int n, float* p) { }", "non-finite values in p"),
        ("void price_walk(int n, float* p) { }", "does not compile"),
        ("void price_walk(unsigned long long s, int n, float* p) { for (int i = 0; i <= n + 4096; ++i) p[i] = 1; }",
         "failed under"),
    ],
)
def test_a_broken_generator_is_a_task_error_that_says_what_went_wrong(source, message):
    broken = replace(TASK, generator=CFunction("price_walk", source))
    with pytest.raises(GeneratorError, match=message):
        GeneratedInputs()(broken, {"N": 1000}, 0)
