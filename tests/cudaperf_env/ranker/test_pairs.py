"""Pair construction: the noise deadband and intervals decide, and no pair crosses tasks."""

from __future__ import annotations

from cudaperf_env.ranker.pairs import config_key, dataset_pairs, task_pairs
from cudaperf_env.tasks import parse_task
from tests.cudaperf_env.ranker.conftest import label, saxpy_record


def _task(times: dict[str, float], spread: float = 0.001, mismatched: str | None = None):
    record = saxpy_record("c2cuda/pairs", "fixture")
    for impl in record["implementations"]:
        impl["labels"] = [label("perf", {"N": 67108864}, times[impl["name"]], spread)]
        impl["labels"][0]["mismatched"] = 5 if impl["name"] == mismatched else 0
    return parse_task(record)


def test_pairs_within_the_deadband_are_dropped():
    task = _task({"per_element": 1.0, "grid_stride": 1.02, "single_thread": 1.05})
    pairs = {(p.faster, p.slower) for p in task_pairs(task)}
    assert ("per_element", "grid_stride") not in pairs  # 2% apart: inside the 3% deadband
    assert ("per_element", "single_thread") in pairs  # 5% apart, tight intervals


def test_overlapping_intervals_are_not_a_pair_even_far_apart():
    task = _task({"per_element": 1.0, "grid_stride": 1.1, "single_thread": 9.0}, spread=0.2)
    assert {(p.faster, p.slower) for p in task_pairs(task)} == {("per_element", "single_thread"),
                                                                ("grid_stride", "single_thread")}


def test_pair_labels_which_is_faster_and_by_how_much():
    task = _task({"per_element": 2.0, "grid_stride": 1.0, "single_thread": 2.0})
    pair = next(p for p in task_pairs(task) if {p.faster, p.slower} == {"per_element", "grid_stride"})
    assert (pair.faster, pair.slower, pair.kind) == ("grid_stride", "per_element", "perf")
    assert abs(pair.ratio - 2.0) < 1e-9 and pair.config == config_key({"N": 67108864})


def test_mismatched_implementations_are_left_out():
    task = _task({"per_element": 1.0, "grid_stride": 2.0, "single_thread": 4.0}, mismatched="grid_stride")
    assert all("grid_stride" not in (p.faster, p.slower) for p in task_pairs(task))


def test_no_pair_across_tasks():
    a = parse_task(saxpy_record("c2cuda/a", "f", {"per_element": 1.0, "grid_stride": 0.5, "single_thread": 9.0}))
    b = parse_task(saxpy_record("c2cuda/b", "f", {"per_element": 0.01, "grid_stride": 50.0, "single_thread": 9.0}))
    pairs = dataset_pairs([a, b], ("shown", "hidden", "perf"))
    names = {t.id: {i.name for i in t.implementations} for t in (a, b)}
    assert pairs and {p.task for p in pairs} == {"c2cuda/a", "c2cuda/b"}
    for p in pairs:
        assert p.faster in names[p.task] and p.slower in names[p.task]
    by_task = {t: [p for p in pairs if p.task == t] for t in ("c2cuda/a", "c2cuda/b")}
    assert len(pairs) == len(task_pairs(a, ("shown", "hidden", "perf"))) + len(by_task["c2cuda/b"])
