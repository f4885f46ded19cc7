"""Linear-algebra families: small correctness configs and well-conditioned small systems by construction."""

import zlib

import numpy as np

from cudaperf_env.dataset.families import columnwise, kron, outer, small_systems, triangular

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
