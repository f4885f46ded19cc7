"""Families of batch E (PDE step, cellular automaton, fractals, distances, k-means, color, resize): generation."""

import re
import zlib

import numpy as np
import pytest

from cudaperf_env.dataset.families import clustering, color, fractal, geometry, simulation
from cudaperf_env.dataset.normalize import dedupe_key
from cudaperf_env.tasks import parse_task

GENERATORS = {
    "pde_step": simulation.pde_step,
    "life_step": simulation.life_step,
    "escape_time": fractal.escape_time,
    "pairwise_distance": geometry.pairwise_distance,
    "kmeans_assign": clustering.kmeans_assign,
    "color_convert": color.color_convert,
    "resize": color.resize,
}
# glibc exports these (legacy <regexp.h>); an entry of that name is interposed and the reference crashes.
_LIBC_NAMES = {"step", "advance", "compile", "index", "random", "select", "time", "signal", "abs", "round"}


def _generate(family, seed, variant):
    """As the builder does: the rng is seeded from (seed, family, variant)."""
    rng = np.random.default_rng([seed, zlib.crc32(family.encode()), variant])
    data = GENERATORS[family](rng, variant)
    data["id"] = f"c2cuda/{family}_{variant:04d}"
    return data


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_generation_is_deterministic_and_valid(family):
    first = [_generate(family, 3, v) for v in range(6)]
    assert first == [_generate(family, 3, v) for v in range(6)]
    assert first != [_generate(family, 4, v) for v in range(6)]  # the seed matters
    for data in first:
        task = parse_task(data, data["id"])
        assert data["family"] == family
        assert data["entry"] not in _LIBC_NAMES
        assert len({i.name for i in task.implementations}) >= 3
        assert len({frozenset(i["strategies"]) for i in data["implementations"]}) >= 3, "strategy tags repeat"
        assert all(i["strategies"] and i["labels"] == [] for i in data["implementations"])
        assert len(task.configs) >= 3 and task.hidden_configs and 1 <= len(task.perf_configs) <= 2
        assert sum(any(v % 2 for v in c.values()) for c in task.configs) >= 1, f"{task.id}: no odd size"
        for impl in data["implementations"]:
            assert 'extern "C" void ' + data["entry"] + "(" in impl["source"]
            assert not re.search(r"\basm\b|\btex[123A-Z]|\btexture\b|cudaLaunchDevice|grid\.sync", impl["source"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_variants_differ_after_normalization(family):
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (_generate(family, 0, v) for v in range(12))}
    assert len(keys) >= 6, f"{family}: only {len(keys)} distinct references in 12 variants"


def test_fractal_orbits_cannot_be_contracted_on_the_gpu():
    """Escape counts are discrete: the CUDA orbit arithmetic must use the explicitly rounded intrinsics."""
    for v in range(6):
        data = _generate("escape_time", 0, v)
        for impl in data["implementations"]:
            assert "#define MUL __dmul_rn" in impl["source"] and "#define ADD __dadd_rn" in impl["source"]


def test_kmeans_inputs_are_small_integers_so_distances_are_exact():
    for v in range(6):
        data = _generate("kmeans_assign", 0, v)
        inits = [a["init"] for a in data["args"] if a["role"] == "in"]
        assert inits and all(i["dist"] == "randint" and i["high"] <= 32 for i in inits)
        assert "tolerance" not in data  # every output, label and distance, must match exactly
