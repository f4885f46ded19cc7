"""Knob variants: what the rewrites make of real dataset sources, how they merge into tasks, what the labeller loads."""

import pytest

from cudaperf_env.backends import gpu_available
from cudaperf_env.datagen.label import Labeller, all_configs, load_label_tasks
from cudaperf_env.datagen.variants import KINDS, TAGS, choose, variants
from cudaperf_env.dataset.load import DATA_FILE, load_records
from cudaperf_env.dataset.variants import VARIANTS_FILE, load_variant_tasks, merge_records, read_variants, variant_count
from cudaperf_env.ranker.features import source_digest

GRID_STRIDE = """
__global__ void scale(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];
}
void run(const float* x, float* y, int n) {
    scale<<<(n + 255) / 256, 256>>>(x, y, n);
}
"""


def test_block_size_and_grid_cap_variants_of_a_grid_stride_kernel():
    found = {v.id: v for v in variants("plain", GRID_STRIDE)}
    assert "plain~block=128" in found and "plain~grid_cap=1" in found
    block = found["plain~block=128"].source
    assert "<<<(n + 127) / 128, 128>>>" in block, block
    assert found["plain~grid_cap=1"].tags == ("poor-serialized",)
    assert all(v.kind in KINDS and set(v.tags) <= set(TAGS) and v.base == "plain" for v in found.values())
    sources = {v.source for v in found.values()}
    assert len(sources) == len(found) and GRID_STRIDE not in sources


def test_choose_is_deterministic_and_spreads_over_tags():
    found = variants("plain", GRID_STRIDE)
    assert [v.id for v in choose(found, 3, 7)] == [v.id for v in choose(found, 3, 7)]
    picked = choose(found, len(found), 0)
    assert sorted(v.id for v in picked) == sorted(v.id for v in found)
    assert len({v.tags[0] for v in choose(found, 3, 0)}) >= 2


def test_every_shipped_variant_rewrites_its_base_and_merges_as_an_implementation():
    shipped = read_variants(VARIANTS_FILE)
    assert len(shipped) > 1000
    records = {r["id"]: r for r in load_records(DATA_FILE, labels=False)}
    some = shipped[:200]
    for v in some:
        base = next(i for i in records[v["task"]]["implementations"] if i["name"] == v["base"])
        assert v["id"].startswith(f"{v['base']}~") and v["source"] != base["source"]
        assert v["base_digest"] == source_digest(base["source"])
    task_ids = {v["task"] for v in some}
    merged = {r["id"]: r for r in merge_records([records[t] for t in task_ids], some)}
    for v in some:
        impl = next(i for i in merged[v["task"]]["implementations"] if i["name"] == v["id"])
        assert f"variant:{v['kind']}" in impl["strategies"]


def test_a_variant_whose_base_changed_is_left_out():
    records = load_records(DATA_FILE, labels=False)
    v = read_variants(VARIANTS_FILE)[0]
    record = next(r for r in records if r["id"] == v["task"])
    stale = {**v, "base_digest": "0" * 16}
    merged = merge_records([record], [stale])[0]
    assert len(merged["implementations"]) == len(record["implementations"])


def test_split_loading_gives_variants_only_to_that_split_and_the_labeller_loads_tasks_with_variants():
    train = load_variant_tasks("train", fold=False, only_with_variants=True)
    assert train and all(variant_count(t) for t in train.values())
    validation = load_variant_tasks("validation", fold=False)
    assert not set(train) & set(validation)
    labelled = load_label_tasks("variants")
    assert {t.id for t in labelled} == set(load_variant_tasks(fold=False, only_with_variants=True))
    assert all(variant_count(t) for t in labelled)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_labelling_a_task_with_its_variants_on_the_gpu(tmp_path):
    task = load_label_tasks("variants")[0]
    labeller = Labeller()
    try:
        (record,) = labeller.run([task], tmp_path / "labels.jsonl")
    finally:
        labeller.close()
    assert record["error"] == ""
    assert len(record["configs"]) == len(all_configs(task))
    for c in record["configs"]:
        assert set(c["impls"]) == {i.name for i in task.implementations}
        assert not c["mismatches"], c


def test_label_progress_counts_labelled_implementations_once_each():
    import dataclasses

    from cudaperf_env.dataset.variants import label_progress

    tasks = list(load_variant_tasks("validation").values())[:3]  # no variants, the dataset's labels
    with_variants = list(load_variant_tasks("train", fold=False, only_with_variants=True).values())[:2]
    def relabelled(task, labels, only_variants=False):
        return dataclasses.replace(task, implementations=[
            dataclasses.replace(i, labels=labels) if "~" in i.name or not only_variants else i
            for i in task.implementations])  # fmt: skip

    unlabelled = [relabelled(t, ()) for t in with_variants]
    first = unlabelled[0]
    half = relabelled(first, tasks[0].implementations[0].labels, only_variants=True)
    progress = label_progress([*tasks, half, unlabelled[1]])
    n_variants = variant_count(first)
    assert progress["variants"] == n_variants and progress["labelled"] == progress["dataset"] + n_variants
    assert progress["dataset"] == sum(bool(i.labels) for t in tasks for i in t.implementations) > 0
    assert progress["implementations"] == sum(len(t.implementations) for t in [*tasks, *unlabelled])
    assert progress["tasks_left"] == 2
