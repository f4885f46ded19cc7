"""The merge family on the CPU backend: an implementation passes and a broken copy fails."""

import zlib

import numpy as np

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.dataset.families import encoding, merge, search, segmented, selection
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import parse_task

GENERATORS = {
    "sorted_search": search.sorted_search,
    "merge_sorted": merge.merge_sorted,
    "topk_rows": selection.topk_rows,
    "segmented_reduce": segmented.segmented_reduce,
    "radix_histogram": encoding.radix_histogram,
    "run_length": encoding.run_length,
}


def _generate(family, seed, variant):
    """As the builder does: the rng is seeded from (seed, family, variant)."""
    rng = np.random.default_rng([seed, zlib.crc32(family.encode()), variant])
    data = GENERATORS[family](rng, variant)
    data["id"] = f"c2cuda/{family}_{variant:04d}"
    return data






def test_merge_implementation_passes_and_a_broken_one_fails_on_the_cpu_backend():
    data = _generate("merge_sorted", 0, 1)
    data["configs"], data["hidden_configs"] = data["configs"][:1], [{"M": 5, "N": 3}]  # small: cheap
    task = parse_task(data, data["id"])
    evaluator = Evaluator(CpuBackend(threads=1))
    source = next(i.source for i in task.implementations if i.name == "merge_path")
    assert evaluator.evaluate(task, source, seed=1).status == "ok"
    broken = source.replace("int i = path_split(a, m, b, n, d)", "int i = path_split(a, m, b, n, d + 1)")
    assert broken != source
    assert evaluator.evaluate(task, broken, seed=1).status == "wrong_answer"
