"""Families with exact outputs (fractal counts, k-means labels): inputs and code keep them exact on any device."""


from cudaperf_env.datagen.build import generate


def test_fractal_orbits_cannot_be_contracted_on_the_gpu():
    """Escape counts are discrete: the CUDA orbit arithmetic must use the explicitly rounded intrinsics."""
    for v in range(6):
        data = generate("escape_time", 0, v)
        for impl in data["implementations"]:
            assert "#define MUL __dmul_rn" in impl["source"] and "#define ADD __dadd_rn" in impl["source"]


def test_kmeans_inputs_are_small_integers_so_distances_are_exact():
    for v in range(6):
        data = generate("kmeans_assign", 0, v)
        inits = [a["init"] for a in data["args"] if a["role"] == "in"]
        assert inits and all(i["dist"] == "randint" and i["high"] <= 32 for i in inits)
        assert "tolerance" not in data  # every output, label and distance, must match exactly
