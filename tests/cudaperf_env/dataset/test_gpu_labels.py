"""GPU timing labels as data: noise tests, streams, digests, folding into the dataset, statistics, the card."""

import copy
import gzip
import json
import math

import pytest

from cudaperf_env.datagen.card import _bar_chart
from cudaperf_env.dataset.gpu_labels import (
    best_speedup,
    distinguishable,
    fold_labels,
    implementation_labels,
    median_interval,
    perf_medians,
    perf_summary,
    read_stream,
    record_digest,
    record_timings,
    task_digest,
)
from cudaperf_env.dataset.load import DATA_FILE, load_records
from cudaperf_env.dataset.stats import label_stats
from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks import load_tasks, parse_task

TASKS = load_tasks(kind="c2cuda")


def timing(median, spread=0.01):
    return {"median_ms": median, "lo_ms": median * (1 - spread), "hi_ms": median * (1 + spread), "trials": 10}


def record(task, configs, error=""):
    return {"task": task, "digest": "d", "baseline": "naive", "configs": configs, "error": error}


def test_median_interval_brackets_the_median_and_narrows_with_agreement():
    noisy = [1.0, 1.5, 0.7, 1.2, 0.9, 1.4, 1.1, 0.8, 1.3, 1.0]
    median, lo, hi = median_interval(noisy)
    assert lo <= median <= hi and hi - lo > 0.1
    median, lo, hi = median_interval([2.0] * 8)
    assert (median, lo, hi) == (2.0, 2.0, 2.0)


def test_distinguishable_needs_disjoint_intervals_and_more_than_the_deadband():
    assert distinguishable(timing(1.0), timing(2.0))
    assert distinguishable(timing(2.0), timing(1.0))  # order does not matter
    assert not distinguishable(timing(1.0, 0.2), timing(1.1, 0.2))  # intervals overlap
    assert not distinguishable(timing(1.0, 0.001), timing(1.02, 0.001))  # within the 3% deadband


def test_perf_summary_counts_pairs_on_perf_configs_only():
    perf = {"kind": "perf", "impls": {"naive": timing(4.0), "tiled": timing(1.0), "tiled2": timing(1.001)}}
    shown = {"kind": "shown", "impls": {"naive": timing(1.0), "tiled": timing(1.0), "tiled2": timing(1.0)}}
    summary = perf_summary(record("t", [shown, perf]))
    assert summary == {"pairs": 3, "distinguishable_pairs": 2, "distinguishable": True}
    tied = {"kind": "perf", "impls": {"naive": timing(1.0), "tiled": timing(1.0)}}
    assert not perf_summary(record("t", [tied]))["distinguishable"]
    assert not perf_summary(record("t", [shown]))["distinguishable"]  # no perf timing at all


def test_best_speedup_and_perf_medians_use_the_geometric_mean_over_perf_configs():
    configs = [{"kind": "perf", "impls": {"naive": timing(8.0), "fast": timing(2.0)}},
               {"kind": "perf", "impls": {"naive": timing(2.0), "fast": timing(2.0)}}]
    assert best_speedup(record("t", configs), "naive") == pytest.approx(2.0)
    assert perf_medians([record("t", configs)]) == {"t": {"naive": pytest.approx(4.0), "fast": pytest.approx(2.0)}}
    assert perf_medians([record("t", configs, error="boom")]) == {}
    assert math.isnan(best_speedup(record("t", []), "naive"))


def test_read_stream_merges_files_later_lines_win_and_skips_missing(tmp_path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_text(json.dumps(record("x", [], "old")) + "\n" + json.dumps(record("y", [])) + "\n")
    with gzip.open(packed, "wt") as f:
        f.write(json.dumps(record("x", [])) + "\n")
    records = read_stream([plain, packed, tmp_path / "missing.jsonl"])
    assert sorted(records) == ["x", "y"] and records["x"]["error"] == ""


def test_task_digest_changes_with_any_implementation():
    task = TASKS["c2cuda/saxpy_f32"]
    assert task_digest(task) == task_digest(task)
    assert task_digest(task) != task_digest(TASKS["c2cuda/matmul_f32"])


def stored(record_id="c2cuda/x_0"):
    """A data-file record of two implementations (labels empty, as built)."""
    return {"id": record_id, "family": "x", "baseline": "naive", "reference": {"source": "void f() {}"},
            "configs": [{"N": 10}], "hidden_configs": [{"N": 11}], "perf_configs": [{"N": 1000}],
            "implementations": [{"name": "naive", "source": "a", "labels": []},
                                {"name": "fast", "source": "b", "labels": []}]}  # fmt: skip


MISMATCH = {"set": 0, "arg": 2, "count": 3, "first": 7, "total": 1000}


def streamed(record, error=""):
    """What the labeller writes for ``record``: one shown and one perf configuration."""
    return {"task": record["id"], "digest": record_digest(record), "baseline": "naive", "error": error,
            "date": "2026-11-30", "driver": "580", "device": {"name": "NVIDIA H200"},
            "configs": [{"kind": "shown", "config": {"N": 10}, "impls": {"naive": timing(0.01), "fast": timing(0.01)},
                         "mismatches": {}},
                        {"kind": "perf", "config": {"N": 1000}, "impls": {"naive": timing(4.0), "fast": timing(1.0)},
                         "mismatches": {"fast": [MISMATCH]}}]}  # fmt: skip


def test_record_digest_equals_the_parsed_tasks_digest_on_the_shipped_data():
    records = load_records(labels=False)[::97]
    assert all(record_digest(r) == task_digest(parse_task(r)) for r in records)


def test_implementation_labels_carry_where_what_and_how_far_off():
    labels = implementation_labels(streamed(stored()))
    assert set(labels) == {"naive", "fast"} and len(labels["fast"]) == 2
    perf = labels["fast"][1]
    assert perf["card"] == "NVIDIA H200" and perf["driver"] == "580" and perf["date"] == "2026-11-30"
    assert (perf["kind"], perf["config"], perf["median_ms"], perf["mismatched"]) == ("perf", {"N": 1000}, 1.0, 3)
    assert labels["naive"][1]["mismatched"] == 0


def test_fold_labels_only_where_the_digest_matches_and_the_run_succeeded():
    fresh, changed, failed, missing = (stored(f"c2cuda/x_{k}") for k in range(4))
    streams = {r["id"]: streamed(r) for r in (fresh, changed)}
    streams[failed["id"]] = streamed(failed, error="build failed")
    changed["implementations"][1]["source"] = "b2"  # rebuilt since it was timed
    assert fold_labels([fresh, changed, failed, missing], streams) == 1
    assert all(i["labels"] for i in fresh["implementations"])
    assert not any(i["labels"] for r in (changed, failed, missing) for i in r["implementations"])


def test_an_implementation_the_labeller_dropped_gets_no_labels_and_the_others_fold():
    kept, unexplained = stored("c2cuda/x_0"), stored("c2cuda/x_1")
    streams = {}
    for r in (kept, unexplained):
        entry = streamed(r)
        for c in entry["configs"]:
            del c["impls"]["fast"]
            c["mismatches"] = {}
        streams[r["id"]] = entry
    streams[kept["id"]]["dropped"] = {"fast": "build: error: identifier undefined"}
    assert fold_labels([kept, unexplained], streams) == 1  # a missing implementation needs its reason
    naive, fast = kept["implementations"]
    assert [label["kind"] for label in naive["labels"]] == ["shown", "perf"] and fast["labels"] == []
    assert not any(i["labels"] for i in unexplained["implementations"])


def test_folded_labels_parse_and_regroup_to_the_same_noise_verdicts():
    record = stored()
    entry = streamed(record)
    fold_labels([record], {record["id"]: entry})
    task = parse_task({**record, "schema": 1, "kind": "c2cuda", "family": "x", "description": "d", "entry": "f",
                       "reference": {"language": "c", "source": "void f(int n, float* y) {}"},
                       "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
                                {"name": "y", "role": "out", "dtype": "float32", "shape": ["N"]}]})  # fmt: skip
    fast = task.implementation("fast")
    assert [label.kind for label in fast.labels] == ["shown", "perf"] and fast.labels[1].mismatched == 3
    regrouped = record_timings(record)
    assert perf_summary(regrouped) == perf_summary(entry)
    assert best_speedup(regrouped, "naive") == best_speedup(entry, "naive")


def test_a_malformed_label_is_named_by_its_field():
    record = stored()
    fold_labels([record], {record["id"]: streamed(record)})
    base = {**record, "schema": 1, "kind": "c2cuda", "family": "x", "description": "d", "entry": "f",
            "reference": {"language": "c", "source": "void f(int n, float* y) {}"},
            "args": [{"name": "n", "role": "scalar", "dtype": "int32", "value": "N"},
                     {"name": "y", "role": "out", "dtype": "float32", "shape": ["N"]}]}  # fmt: skip
    for key, value, field in (("median_ms", -1.0, "median_ms"), ("kind", "warm", "kind"), ("card", "", "card"),
                              ("config", None, "config")):  # fmt: skip
        bad = copy.deepcopy(base)
        bad["implementations"][1]["labels"][0][key] = value
        with pytest.raises(TaskFormatError, match=rf"implementations\[1\]\.labels\[0\]\.{field}"):
            parse_task(bad)


def test_label_stats_count_noise_mismatches_and_speedups():
    a, b = stored("c2cuda/x_0"), stored("c2cuda/x_1")
    fold_labels([a, b], {a["id"]: streamed(a)})
    stats = label_stats([a, b])
    assert stats["tasks"] == 1 and stats["cards"] == ["NVIDIA H200"]
    # the one perf configuration has a mismatch, so no perf configuration is usable for the noise test
    assert stats["distinguishable_tasks"] == 0 and stats["implementations_mismatched"] == 1
    assert stats["best_speedup_quantiles"]["p50"] == 4.0
    assert [count for _, count in stats["best_speedup_histogram"]] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]  # 4x: [4, 8)
    assert stats["per_family"] == {"x": {"tasks": 1, "distinguishable": 0, "median_best_speedup": 4.0}}
    assert stats["baseline_perf_ms"] == {"min": 4.0, "p1": 4.0, "median": 4.0, "max": 4.0}


def test_bar_chart_scales_to_the_largest_bin():
    lines = _bar_chart([[1.0, 10], [2.0, 5], [4.0, 0]], width=10)
    assert lines[0].endswith("#" * 10 + " 10") and "#" * 5 + " " * 5 + " 5" in lines[1]
    assert lines[2].strip().startswith(">= 4x") and lines[2].endswith(" 0")


def test_shipped_labels_match_the_data_they_label():
    streams = read_stream(sorted(DATA_FILE.parent.glob("labels-*.jsonl.gz")))
    records = {r["id"]: r for r in load_records(labels=False)}
    assert streams and set(streams) <= set(records)
    assert sum(s["digest"] == record_digest(records[i]) and not s["error"] for i, s in streams.items()) == len(streams)
