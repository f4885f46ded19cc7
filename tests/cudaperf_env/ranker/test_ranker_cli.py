"""``cudaperf ranker train|eval|score`` through the ``cudaperf`` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudaperf_env.cli import main
from cudaperf_env.ranker.starter import labelled_starter_tasks
from tests.cudaperf_env.ranker.conftest import GRID_STRIDE


def run(argv: list[str]) -> int:
    return main(argv)


def test_train_then_eval_on_a_fixture(fixture_dataset, tmp_path, capsys):
    out = tmp_path / "model.json"
    assert run(["ranker", "train", "--dataset", str(fixture_dataset), "--out", str(out), "--kind", "logistic"]) == 0
    provenance = json.loads((tmp_path / "model_provenance.json").read_text())
    assert provenance["labels"]["card"] == "NVIDIA H200" and provenance["train_pairs"] > 0
    capsys.readouterr()
    assert run(["ranker", "eval", "--dataset", str(fixture_dataset), "--model", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    keys = {"pairwise_accuracy", "pairs", "spearman", "per_family"}
    assert keys <= result.keys() and keys <= result["structural"].keys() and keys <= result["random"].keys()
    assert result["pairs"] == result["structural"]["pairs"] == result["random"]["pairs"] > 0
    assert list(result["per_family"]) == ["fb"] and result["unseen_families"]["families"] == ["fb"]
    assert result["pairwise_accuracy"] > 0.9  # the single-thread kernel is always the slow one
    paired, structural = result["vs_structural"], result["structural"]
    assert paired["difference"] == pytest.approx(result["pairwise_accuracy"] - structural["pairwise_accuracy"])
    assert paired["ci95"][0] <= paired["difference"] <= paired["ci95"][1] and 0 < paired["p_value"] <= 1
    assert run(["ranker", "eval", "--dataset", str(fixture_dataset), "--model", str(out)]) == 0
    assert "ranker - structural:" in capsys.readouterr().out


def test_score_prints_ranker_score(tmp_path, capsys):
    submission = tmp_path / "sub.cu"
    submission.write_text(GRID_STRIDE)
    assert run(["ranker", "score", "--task", "c2cuda/saxpy_f32", "--submission", str(submission), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["task"] == "c2cuda/saxpy_f32" and 0.0 <= result["ranker_score"] <= 1.0


def test_score_unknown_task_says_what_it_accepts(tmp_path, capsys):
    (tmp_path / "sub.cu").write_text("")
    assert run(["ranker", "score", "--task", "nope/nothing", "--submission", str(tmp_path / "sub.cu")]) == 2
    assert "no task 'nope/nothing': not a file, a bundled task or a dataset task" in capsys.readouterr().err


def test_unknown_subcommand_is_an_argparse_error():
    with pytest.raises(SystemExit):
        run(["ranker", "fly"])


STARTER_LABELS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "starter_labels_h200.jsonl.gz"


def test_starter_tasks_fold_the_committed_labels():
    tasks = labelled_starter_tasks(STARTER_LABELS)
    assert len(tasks) == 34 and all(t.id.startswith("c2cuda/") for t in tasks.values())
    labelled = [i for t in tasks.values() for i in t.implementations if i.labels]
    assert labelled and {label.card for i in labelled for label in i.labels} == {"NVIDIA H200"}
    with pytest.raises(FileNotFoundError, match="no starter label stream at"):
        labelled_starter_tasks(STARTER_LABELS.with_name("nope.jsonl.gz"))


def test_train_with_starter_labels_adds_their_pairs_and_records_them(fixture_dataset, tmp_path):
    argv = ["ranker", "train", "--dataset", str(fixture_dataset), "--kind", "logistic"]
    assert run([*argv, "--out", str(tmp_path / "plain.json")]) == 0
    assert run([*argv, "--out", str(tmp_path / "model.json"), "--starter-labels", str(STARTER_LABELS)]) == 0
    plain = json.loads((tmp_path / "plain_provenance.json").read_text())
    provenance = json.loads((tmp_path / "model_provenance.json").read_text())
    assert "starter_labels" not in plain and provenance["train_pairs"] > plain["train_pairs"]
    assert provenance["starter_labels"] == {"file": STARTER_LABELS.name, "tasks": 34,
                                            "digest": provenance["starter_labels"]["digest"]}  # fmt: skip
