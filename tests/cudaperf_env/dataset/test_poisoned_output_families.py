"""Graph and Monte-Carlo families: implementations that accumulate clear their poisoned outputs first."""

import zlib

import numpy as np

from cudaperf_env.dataset.families import batched, graph, montecarlo, nbody, permute, polynomial, sorting, sparse

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
