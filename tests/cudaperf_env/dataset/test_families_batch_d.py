"""Families of batch D (outer products, triangular, column-wise, small systems, Kronecker): generator checks."""

import zlib

import numpy as np
import pytest

from cudaperf_env.dataset.families import columnwise, kron, outer, small_systems, triangular
from cudaperf_env.dataset.normalize import dedupe_key
from cudaperf_env.tasks import parse_task

GENERATORS = {
    "ger": outer.ger,
    "trmv": triangular.trmv,
    "col_reduce": columnwise.col_reduce,
    "col_normalize": columnwise.col_normalize,
    "small_solve": small_systems.small_solve,
    "tridiag": small_systems.tridiag,
    "kron": kron.kron,
    "sym_band": kron.sym_band,
}


def _generate(name, seed, variant):
    """As the builder does: the rng is seeded from (seed, family, variant)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode()), variant])
    data = GENERATORS[name](rng, variant)
    data["id"] = f"c2cuda/{name}_{variant:04d}"
    return data


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generator_is_deterministic_and_seed_dependent(name):
    first = [_generate(name, 3, v) for v in range(6)]
    assert first == [_generate(name, 3, v) for v in range(6)]
    assert first != [_generate(name, 4, v) for v in range(6)]


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_variants_are_valid_tasks_with_odd_sizes_and_distinct_strategies(name):
    for variant in range(8):
        data = _generate(name, 11, variant)
        task = parse_task(data, data["id"])
        assert data["family"] == name
        assert len({i.name for i in task.implementations}) >= 3
        tag_sets = {frozenset(i["strategies"]) for i in data["implementations"]}
        assert len(tag_sets) >= 3, f"{task.id}: strategy tag sets are not distinct"
        assert all(i["labels"] == [] for i in data["implementations"])
        assert len(task.configs) >= 3 and len(task.hidden_configs) == 1 and 1 <= len(task.perf_configs) <= 2
        odd = sum(any(v % 2 for v in c.values()) for c in task.configs)
        assert odd >= 1, f"{task.id}: no odd size in {task.configs}"
        entry = data["entry"]
        assert f"void {entry}(" in data["reference"]["source"]
        assert all(f'extern "C" void {entry}(' in i["source"] for i in data["implementations"])


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_variants_differ_after_normalization(name):
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (_generate(name, 5, v) for v in range(12))}
    assert len(keys) >= 6, f"{name}: only {len(keys)} distinct references in 12 variants"


def test_correctness_configs_stay_small():
    for name in GENERATORS:
        for variant in range(4):
            data = _generate(name, 1, variant)
            for config in data["configs"] + data["hidden_configs"]:
                assert int(np.prod(list(config.values()))) <= 1 << 20, f"{name}: {config} too large for the CPU"


def test_small_systems_are_diagonally_dominant_by_construction():
    for variant in range(8):
        data = _generate("small_solve", 2, variant)
        a = next(arg for arg in data["args"] if arg["name"] == "a")
        assert a["init"] == {"dist": "uniform", "low": -1, "high": 1}
        assert "diagonally dominant" in data["description"]
        tri = _generate("tridiag", 2, variant)
        diag = [arg for arg in tri["args"] if arg["name"] in ("diag", "center")]
        assert diag and all(arg.get("init", {}).get("low", arg.get("value", 0)) >= 2.5 for arg in diag)
