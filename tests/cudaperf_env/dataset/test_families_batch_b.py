"""Families sparse .. polynomial: deterministic generators, valid tasks, structurally different variants."""

import zlib

import numpy as np
import pytest

from cudaperf_env.dataset.families import batched, graph, montecarlo, nbody, permute, polynomial, sorting, sparse
from cudaperf_env.dataset.normalize import dedupe_key
from cudaperf_env.tasks import parse_task

GENERATORS = {
    "spmv_csr": sparse.spmv_csr,
    "nbody": nbody.nbody,
    "montecarlo": montecarlo.montecarlo,
    "sort_rows": sorting.sort_rows,
    "frontier_step": graph.frontier_step,
    "batched": batched.batched,
    "permute": permute.permute,
    "polynomial": polynomial.polynomial,
}


def _generate(name, seed, variant):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode()), variant])
    return GENERATORS[name](rng, variant)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generator_is_deterministic_and_seed_dependent(name):
    first = [_generate(name, 3, v) for v in range(4)]
    assert first == [_generate(name, 3, v) for v in range(4)]
    assert first != [_generate(name, 4, v) for v in range(4)]


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_variants_are_valid_tasks_with_odd_sizes_and_three_strategies(name):
    for variant in range(6):
        data = _generate(name, 11, variant)
        task = parse_task(data, data["id"])
        assert len({i.name for i in task.implementations}) >= 3
        assert all(i.strategies for i in task.implementations)
        assert len(task.configs) >= 3 and len(task.hidden_configs) == 1 and 1 <= len(task.perf_configs) <= 2
        assert any(v % 2 for c in task.configs for v in c.values()), f"{name}: no odd size in {task.configs}"
        entry = data["entry"]
        assert f"void {entry}(" in data["reference"]["source"]
        assert all(f'extern "C" void {entry}(' in i["source"] for i in data["implementations"])


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_variants_differ_after_normalization(name):
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (_generate(name, 5, v) for v in range(12))}
    assert len(keys) >= 6, f"{name}: only {len(keys)} distinct references in 12 variants"


def test_accumulating_implementations_clear_their_poisoned_outputs():
    for variant in range(12):
        for name, marker in (("frontier_step", "init_kernel<<<"), ("montecarlo", "cudaMemset(out")):
            data = _generate(name, 2, variant)
            for impl in data["implementations"]:
                src = impl["source"]
                if "atomic" in src and name == "montecarlo":
                    assert marker in src, f"{name} {impl['name']} accumulates into an uncleared output"
                if name == "frontier_step":
                    assert marker in src
