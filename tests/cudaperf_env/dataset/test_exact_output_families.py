"""Families with exact outputs (fractal counts, k-means labels): inputs and code keep them exact on any device."""

import zlib

import numpy as np

from cudaperf_env.dataset.families import clustering, color, fractal, geometry, simulation

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
