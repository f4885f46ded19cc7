"""Families of batch C (search, merge, top-k, segmented reduce, radix histogram, run-length): determinism, schema."""

import zlib

import numpy as np
import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.dataset.families import encoding, merge, search, segmented, selection
from cudaperf_env.dataset.normalize import dedupe_key
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


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_generation_is_deterministic_and_valid(family):
    first = [_generate(family, 3, v) for v in range(6)]
    assert first == [_generate(family, 3, v) for v in range(6)]
    assert first != [_generate(family, 4, v) for v in range(6)]  # the seed matters
    for data in first:
        task = parse_task(data, data["id"])
        assert data["family"] == family and data["baseline"] == "naive"
        tag_sets = {frozenset(i["strategies"]) for i in data["implementations"]}
        assert len(tag_sets) == len(data["implementations"]) >= 3, f"{task.id}: strategy tag sets repeat"
        assert all(i["labels"] == [] for i in data["implementations"])
        assert len(task.configs) >= 3 and task.hidden_configs and 1 <= len(task.perf_configs) <= 2
        assert sum(any(v % 2 for v in c.values()) for c in task.configs) >= 1, f"{task.id}: no odd size"
        assert all('extern "C"' in i["source"] for i in data["implementations"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_variants_differ_after_normalization(family):
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (_generate(family, 0, v) for v in range(12))}
    assert len(keys) >= 6, f"{family}: only {len(keys)} distinct references in 12 variants"


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
