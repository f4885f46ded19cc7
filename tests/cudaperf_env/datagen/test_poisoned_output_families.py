"""Graph and Monte-Carlo families: implementations that accumulate clear their poisoned outputs first."""


from cudaperf_env.datagen.build import generate


def test_accumulating_implementations_clear_their_poisoned_outputs():
    for variant in range(12):
        for name, marker in (("frontier_step", "init_kernel<<<"), ("montecarlo", "cudaMemset(out")):
            data = generate(name, 2, variant)
            for impl in data["implementations"]:
                src = impl["source"]
                if "atomic" in src and name == "montecarlo":
                    assert marker in src, f"{name} {impl['name']} accumulates into an uncleared output"
                if name == "frontier_step":
                    assert marker in src
