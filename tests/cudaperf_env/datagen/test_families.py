"""Every registered family: deterministic, seed-dependent, valid tasks that differ after normalization."""

import json

import pytest

from cudaperf_env.datagen.build import DATA_FILE, generate
from cudaperf_env.datagen.normalize import dedupe_key
from cudaperf_env.datagen.registry import family_names
from cudaperf_env.tasks import parse_task

REPORT = json.loads((DATA_FILE.parent / "build-report.json").read_text())


@pytest.mark.parametrize("family", family_names())
def test_generation_is_deterministic_seeded_and_valid(family):
    first = [generate(family, 3, v) for v in range(4)]
    assert first == [generate(family, 3, v) for v in range(4)]
    assert first != [generate(family, 4, v) for v in range(4)]  # the seed matters
    for data in first:
        task = parse_task(data, data["id"])
        assert task.family == family
        impls = data["implementations"]
        assert len(impls) >= 3 and len({tuple(i["strategies"]) for i in impls}) == len(impls), task.id
        assert all(i["labels"] == [] for i in impls)
        assert len(task.configs) >= 3 and task.hidden_configs and task.perf_configs, task.id
        assert any(v % 2 for c in task.configs for v in c.values()), f"{task.id}: no odd size"
        for config in task.correctness_configs:  # the CPU backend runs these: keep them small
            assert all(a.numel(config) <= 1 << 22 for a in task.args if a.is_buffer), f"{task.id}: {config}"


@pytest.mark.parametrize("family", family_names())
def test_the_shipped_candidates_of_a_family_are_nearly_all_distinct(family):
    """The shipped build's candidates differ after normalization (90 %+), so its size is not mostly duplicates."""
    count, seed = REPORT["per_family"], REPORT["seed"]
    keys = {dedupe_key(d["reference"]["source"], d["entry"]) for d in (generate(family, seed, v) for v in range(count))}
    assert len(keys) >= 0.9 * count, f"{family}: only {len(keys)} distinct references in {count} candidates"
