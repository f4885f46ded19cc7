"""Linear-algebra families: small systems are well conditioned by construction."""


from cudaperf_env.datagen.build import generate


def test_small_systems_are_diagonally_dominant_by_construction():
    for variant in range(8):
        data = generate("small_solve", 2, variant)
        a = next(arg for arg in data["args"] if arg["name"] == "a")
        assert a["init"] == {"dist": "uniform", "low": -1, "high": 1}
        assert "diagonally dominant" in data["description"]
        tri = generate("tridiag", 2, variant)
        diag = [arg for arg in tri["args"] if arg["name"] in ("diag", "center")]
        assert diag and all(arg.get("init", {}).get("low", arg.get("value", 0)) >= 2.5 for arg in diag)
