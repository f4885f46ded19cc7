"""The shipped dataset file: content rules, splits, and the card's figures recomputed from the data."""

import json
import re

import pytest

from cudaperf_env.datagen.build import CARD_FILE, DATA_FILE
from cudaperf_env.datagen.card import render_card
from cudaperf_env.datagen.normalize import dedupe_key
from cudaperf_env.dataset.gpu_labels import LABEL_FILES, perf_summary, read_stream
from cudaperf_env.dataset.load import load_dataset, load_records, load_splits
from cudaperf_env.dataset.stats import dataset_stats, output_dtype

RECORDS = load_records()
SPLITS = load_splits()
REPORT = json.loads((DATA_FILE.parent / "build-report.json").read_text())


def test_every_task_meets_the_dataset_rules():
    assert len({r["id"] for r in RECORDS}) == len(RECORDS) >= 2900  # issue #6: at least 2,900 tasks
    assert len({r["family"] for r in RECORDS}) >= 60  # in at least 60 families
    assert len({dedupe_key(r["reference"]["source"], r["entry"]) for r in RECORDS}) == len(RECORDS)
    for r in RECORDS:
        assert len(r["configs"]) >= 3 and r["hidden_configs"] and r["perf_configs"], r["id"]
        assert any(v % 2 for c in r["configs"] for v in c.values()), r["id"]
        impls = r["implementations"]
        assert len(impls) >= 3 and len({tuple(i["strategies"]) for i in impls}) == len(impls), r["id"]
        assert all(isinstance(i["labels"], list) for i in impls)


def test_splits_partition_the_tasks_with_held_out_families():
    ids = {r["id"] for r in RECORDS}
    parts = [set(SPLITS[name]) for name in ("train", "validation", "test")]
    assert set().union(*parts) == ids and sum(map(len, parts)) == len(ids)
    held = set(SPLITS["test_families"])
    assert held and all(r["id"] in parts[2] for r in RECORDS if r["family"] in held)
    assert not {r["family"] for r in RECORDS if r["id"] in parts[0]} & held
    assert {r["family"] for r in RECORDS if r["id"] in parts[2]} - held  # held-out tasks of seen families too


def test_load_dataset_returns_the_splits_as_tasks():
    assert set(load_dataset()) == {r["id"] for r in RECORDS}
    train = load_dataset("train")
    assert set(train) == set(SPLITS["train"]) and all(t.family not in SPLITS["test_families"] for t in train.values())
    with pytest.raises(ValueError, match="unknown split 'dev'; expected one of train, validation, test"):
        load_dataset("dev")
    labelled = next(t for t in train.values() if t.implementations[0].labels)
    assert not any(i.labels for i in load_dataset("train", labels=False)[labelled.id].implementations)


def test_card_is_the_rendering_of_the_shipped_data():
    assert CARD_FILE.read_text() == render_card(dataset_stats(RECORDS, SPLITS), REPORT)


def test_card_figures_match_an_independent_count():
    card = CARD_FILE.read_text()
    section = card.split("## Tasks per family")[1].split("##")[0]
    table = dict(re.findall(r"^\| (\w+) \| (\d+) \|$", section, re.M))
    counts: dict[str, int] = {}
    for r in RECORDS:
        counts[r["family"]] = counts.get(r["family"], 0) + 1
    assert {k: int(v) for k, v in table.items()} == counts
    dtypes = card.split("## Tasks per output dtype")[1].split("##")[0]
    for dtype in {output_dtype(r) for r in RECORDS}:
        assert f"| {dtype} | {sum(output_dtype(r) == dtype for r in RECORDS)} |" in dtypes
    assert f"- Tasks: {len(RECORDS)} in {len(counts)} families" in card
    assert f"train {len(SPLITS['train'])}, validation {len(SPLITS['validation'])}" in card
    streams = read_stream(DATA_FILE.parent.glob(LABEL_FILES))
    labelled = [r for r in RECORDS if r["id"] in streams and all(i["labels"] for i in r["implementations"])]
    assert f"- GPU-labelled tasks: {len(labelled)}." in card
    told = sum(perf_summary(streams[r["id"]])["distinguishable"] for r in labelled)
    assert f"{told} of {len(labelled)} tasks" in card
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \| [\d.]+x \|$", card.split("Per family: labelled")[1], re.M)
    assert sum(int(n) for _, n, _ in rows) == len(labelled) and sum(int(d) for _, _, d in rows) == told


def test_gpu_labels_cover_the_dataset_and_tell_implementations_apart():
    streams = read_stream(DATA_FILE.parent.glob(LABEL_FILES))
    labelled = [r for r in RECORDS if all(i["labels"] for i in r["implementations"])]
    assert {r["id"] for r in labelled} == {i for i, s in streams.items() if not s["error"]}
    assert len(labelled) >= 0.95 * len(RECORDS)
    told = sum(perf_summary(streams[r["id"]])["distinguishable"] for r in labelled)
    assert told >= 0.95 * len(labelled)  # the pairs the ranker learns from
    for r in labelled:  # every implementation on every configuration
        configs = len(r["configs"]) + len(r["hidden_configs"]) + len(r["perf_configs"])
        assert all(len(i["labels"]) == configs for i in r["implementations"]), r["id"]
