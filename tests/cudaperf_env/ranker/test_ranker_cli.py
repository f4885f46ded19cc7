"""``cudaperf ranker train|eval|score`` through the ``cudaperf`` entry point."""

from __future__ import annotations

import json

import pytest

from cudaperf_env.cli import main
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
