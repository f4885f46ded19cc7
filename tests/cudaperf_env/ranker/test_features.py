"""Feature records and vectors: every feature tagged with its source, missing values NaN, the cache reused."""

from __future__ import annotations

import gzip
import json
import math

from cudaperf_env.ranker.features import FEATURES, SOURCES, implementation_record, records_for, vector
from cudaperf_env.ranker.pairs import config_key
from tests.cudaperf_env.ranker.conftest import GRID_STRIDE, SINGLE_THREAD


def test_every_feature_names_its_source():
    assert {source for _, source in FEATURES} == set(SOURCES)
    assert all(name.startswith(source + "/") for name, source in FEATURES)


def test_vector_at_a_configuration_separates_launch_shapes(saxpy_task):
    key = config_key(saxpy_task.perf_configs[0])
    names = [name for name, _ in FEATURES]
    one = vector(implementation_record(saxpy_task, "one", SINGLE_THREAD), key, names)
    grid = vector(implementation_record(saxpy_task, "grid", GRID_STRIDE), key, names)
    threads = names.index("parallelism/log2_threads")
    assert one[threads] == 0 and grid[threads] > 16
    assert math.isnan(one[names.index("compiler/registers")])  # not compiled: missing, not 0


def test_records_come_from_the_cache_when_the_source_matches(saxpy_task, tmp_path):
    impl = saxpy_task.implementations[0]
    record = implementation_record(saxpy_task, impl.name, impl.source)
    record["static"]["kernels"] = 99  # marks the cached copy
    stale = {**implementation_record(saxpy_task, "grid_stride", "changed source"), "impl": "grid_stride"}
    path = tmp_path / "f.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(record) + "\n" + json.dumps(stale) + "\n")
    records = records_for([saxpy_task], path)
    assert records[(saxpy_task.id, impl.name)]["static"]["kernels"] == 99
    assert records[(saxpy_task.id, "grid_stride")]["digest"] != stale["digest"]  # recomputed
    assert len(records) == len(saxpy_task.implementations)


def test_the_extraction_script_takes_the_knob_variants_with_variants(tmp_path):
    """``--variants`` extracts the variants' records too (the encoder and the trees train on them)."""
    from cudaperf_env.dataset.variants import load_variant_tasks
    from cudaperf_env.ranker.features import main

    train = load_variant_tasks("train")
    keys = [f"{t.id}\t{i.name}" for t in train.values() for i in t.implementations]
    variant = next(k for k in keys if "~" in k)
    done = tmp_path / "done"
    done.write_text("\n".join(k for k in keys if k != variant) + "\n")
    out = tmp_path / "f.jsonl.gz"
    assert main(["--out", str(out), "--done", str(done), "--split", "train", "--variants"]) == 0
    with gzip.open(out, "rt") as f:
        written = [json.loads(line) for line in f]
    assert [f"{r['task']}\t{r['impl']}" for r in written] == [variant]


def test_a_killed_extraction_keeps_what_it_flushed_and_resumes(tmp_path):
    """A run killed mid-write leaves a gzip member without its end; the next start repairs it and redoes the rest."""
    from cudaperf_env.dataset import load_dataset
    from cudaperf_env.ranker.features import main, read_records

    tasks = load_dataset("test")
    (ta, a), (tb, b) = [(t, i) for t in tasks.values() for i in t.implementations][:2]
    whole = tmp_path / "whole.jsonl.gz"
    with gzip.open(whole, "wt", encoding="utf-8") as f:
        f.write(json.dumps(implementation_record(ta, a.name, a.source)) + "\n")
        f.flush()  # what the script does between records
        f.write(json.dumps(implementation_record(tb, b.name, b.source)) + "\n")
    out, data = tmp_path / "f.jsonl.gz", whole.read_bytes()
    for cut in range(len(data) - 1, 0, -1):  # the longest cut that loses the second record
        out.write_bytes(data[:cut])
        if len(read_records(out)) == 1:
            break
    assert list(read_records(out)) == [(ta.id, a.name)]
    done = tmp_path / "done"
    done.write_text(f"{ta.id}\t{a.name}\n{tb.id}\t{b.name}\n")  # both marked done before the kill
    assert main(["--out", str(out), "--done", str(done), "--split", "test", "--limit", "1"]) == 0
    assert set(read_records(out)) == {(ta.id, a.name), (tb.id, b.name)}  # the lost one redone, the file whole
    with gzip.open(out, "rt") as f:
        assert len(f.read().splitlines()) == 2
    assert done.read_text().splitlines() == [f"{ta.id}\t{a.name}", f"{tb.id}\t{b.name}"]
