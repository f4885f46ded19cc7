"""The builder: deterministic generation, dedupe by normalized reference, splits, a real small build."""

import dataclasses
import gzip
import json

import pytest

from cudaperf_env.cli import main as cli_main
from cudaperf_env.datagen.build import BuildConfig, build, dedupe, generate
from cudaperf_env.datagen.normalize import dedupe_key, normalized_reference
from cudaperf_env.datagen.registry import family_names
from cudaperf_env.datagen.splits import assign_splits
from cudaperf_env.tasks import parse_task


@pytest.mark.parametrize("family", family_names())
def test_generation_is_deterministic_and_valid(family):
    first = [generate(family, 3, v) for v in range(3)]
    assert first == [generate(family, 3, v) for v in range(3)]
    assert first != [generate(family, 4, v) for v in range(3)]  # the seed matters
    for data in first:
        task = parse_task(data, data["id"])
        assert len(task.implementations) >= 3 and len({i.name for i in task.implementations}) >= 3
        assert len(task.configs) >= 3 and task.hidden_configs and task.perf_configs
        assert any(v % 2 for c in task.configs for v in c.values()), f"{task.id}: no odd size"
        assert all(impl["labels"] == [] for impl in data["implementations"])


REF = """#include <math.h>
static float f(float a) { return sinf(a) * 2.5f; }  /* scaled */
void elementwise(int n, const float* x, float* y) { for (int i = 0; i < n; ++i) y[i] = f(x[i]); }
"""


def test_normalization_ignores_names_literals_and_comments_only():
    renamed = (REF.replace("2.5f", "0.75f").replace("elementwise", "scale").replace("x", "src")
               .replace("/* scaled */", "// other comment"))  # fmt: skip
    assert dedupe_key(REF, "elementwise") == dedupe_key(renamed, "scale")
    assert dedupe_key(REF, "elementwise") != dedupe_key(REF.replace("sinf", "cosf"), "elementwise")
    assert dedupe_key(REF, "elementwise") != dedupe_key(REF.replace("float", "double"), "elementwise")
    assert "sinf" in normalized_reference(REF, "elementwise") and "2.5f" not in normalized_reference(REF, "elementwise")


def test_normalization_reaches_into_macro_definitions():
    sized = "#include <math.h>\n#define K 3\nvoid f(float* y) { for (int k = 0; k < K; ++k) y[k] = sqrtf(k); }\n"
    assert dedupe_key(sized, "f") == dedupe_key(sized.replace("K 3", "K 5").replace("#define K", "#define KK")
                                                 .replace("< K", "< KK"), "f")  # fmt: skip
    assert dedupe_key(sized, "f") != dedupe_key(sized.replace("#define K 3", "#define K (3 + n)"), "f")
    assert "#include <math.h>" in normalized_reference(sized, "f") and " 3" not in normalized_reference(sized, "f")


def test_dedupe_keeps_the_first_and_counts_per_family():
    a = generate("map_unary", 0, 0)
    b = json.loads(json.dumps(a).replace("elementwise", "elementwise2"))
    b["id"], b["entry"] = "c2cuda/copy", "elementwise2"
    c = generate("stencil1d", 0, 0)
    kept, dropped = dedupe([a, b, c])
    assert [d["id"] for d in kept] == [a["id"], c["id"]]
    assert dropped == {"map_unary": 1}


def test_splits_hold_out_whole_families_and_partition_the_ids():
    ids = {f"fam{k}": [f"c2cuda/fam{k}_{i}" for i in range(10)] for k in range(8)}
    splits = assign_splits(ids, seed=5)
    assert splits == assign_splits(ids, seed=5)
    every = [i for name in ("train", "validation", "test") for i in splits[name]]
    assert sorted(every) == sorted(i for v in ids.values() for i in v)
    assert len(splits["test_families"]) == 1
    held = splits["test_families"][0]
    assert set(ids[held]) <= set(splits["test"]) and not set(ids[held]) & set(splits["train"])
    seen_test = [i for i in splits["test"] if not i.startswith(f"c2cuda/{held}_")]
    assert len(seen_test) == 7 and len(splits["validation"]) == 7  # one per seen family


def test_a_small_real_build_is_byte_identical_when_repeated(tmp_path):
    def run(out):
        return build(BuildConfig(families=("map_unary",), per_family=2, seed=1, workers=1, out=out, card=None))

    report = run(tmp_path / "a" / "d.jsonl.gz")
    run(tmp_path / "b" / "d.jsonl.gz")
    for name in ("d.jsonl.gz", "splits.json"):  # the card also shows the build's wall time
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    with gzip.open(tmp_path / "a" / "d.jsonl.gz", "rt") as f:
        records = [json.loads(line) for line in f]
    assert report["kept"] == len(records) == 2 - sum(report["drops"].values())
    assert report["candidates"] == 2


def test_a_build_cut_by_its_deadline_resumes_from_its_verdict_log(tmp_path):
    log = tmp_path / "verdicts.jsonl"
    cut = BuildConfig(families=("map_unary",), per_family=4, seed=1, workers=1, out=tmp_path / "a" / "d.jsonl.gz",
                      card=None, verdicts=log, deadline_s=0)  # fmt: skip
    first = build(cut)  # past its deadline at once: nothing verified, nothing written
    assert first["complete"] is False and first["verified"] == 0 and not cut.out.exists()
    half = build(dataclasses.replace(cut, per_family=2, deadline_s=None))  # the first two candidates
    assert half["complete"] and len(log.read_text().splitlines()) == half["candidates"] - half["duplicates"]
    report = build(dataclasses.replace(cut, deadline_s=None))
    assert report["complete"] and len(log.read_text().splitlines()) == first["unique"]  # only the rest verified
    straight = build(BuildConfig(families=("map_unary",), per_family=4, seed=1, workers=1,
                                 out=tmp_path / "b" / "d.jsonl.gz", card=None))  # fmt: skip
    assert (tmp_path / "a" / "d.jsonl.gz").read_bytes() == (tmp_path / "b" / "d.jsonl.gz").read_bytes()
    assert report["kept"] == straight["kept"] and report["drops"] == straight["drops"]


def test_a_deadline_without_a_verdict_log_is_refused_with_what_to_add(capsys):
    assert cli_main(["dataset", "build", "--families", "map_unary", "--per-family", "1", "--deadline-s", "60"]) == 2
    assert "--verdicts FILE" in capsys.readouterr().err
