"""The `cudaperf` command: JSON outputs, exit codes, demo."""

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from cudaperf_env.cli import main
from cudaperf_env.demo import ranker_caveat, run_demo

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasks"


def test_tasks_list_json_has_the_promised_keys(capsys):
    assert main(["tasks", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 24
    assert {"id", "kind", "family", "configs", "implementations"} <= set(rows[0])


def test_tasks_show_prints_the_prompt(capsys):
    assert main(["tasks", "show", "c2cuda/test_saxpy", "--task-dir", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert 'extern "C" void saxpy(int n, float a, const float* x, float* y)' in out


@pytest.mark.parametrize(
    ("source", "suffix", "status"),
    [("garbage", ".cu", "rejected"), ("garbage", ".txt", "format_error"), (None, ".cu", "ok")],
)
def test_eval_json_exit_zero_whatever_the_verdict(tmp_path, capsys, source, suffix, status):
    from cudaperf_env.tasks import load_task

    task = load_task(FIXTURES / "saxpy.yaml")
    submission = tmp_path / f"sub{suffix}"
    submission.write_text(source or task.implementations[0].source)
    code = main(["eval", "--task", str(FIXTURES / "saxpy.yaml"), "--submission", str(submission),
                 "--backend", "cpu", "--json"])  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == status
    assert {"status", "compiled", "correct", "speedup", "reward", "feedback", "reward_terms"} <= set(result)
    assert result["correct"] == (status == "ok") and result["speedup"] is None
    assert {f"reward/{t}" for t in ("format", "compile", "correct", "speedup", "previous")} <= set(result)
    assert "fenced block" not in result["feedback"] or suffix == ".txt"  # a .cu file is source, not a reply


def test_tasks_show_and_eval_see_dataset_ids(tmp_path, capsys):
    assert main(["tasks", "show", "c2cuda/scan_0023"]) == 0
    assert "Task c2cuda/scan_0023" in capsys.readouterr().out


def test_tasks_list_counts_every_checked_configuration(capsys):
    assert main(["tasks", "list", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    from cudaperf_env.tasks import load_tasks

    saxpy = load_tasks()["c2cuda/saxpy_f32"]
    assert rows[saxpy.id]["configs"] == len(saxpy.correctness_configs)


def test_usage_errors_exit_nonzero(capsys):
    assert main(["tasks", "show", "c2cuda/no_such_task"]) == 2
    assert "no task" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["eval", "--task", "x"])
    assert info.value.code == 2


def test_demo_plays_wrong_naive_and_optimized(capsys):
    assert main(["demo", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "episode summary" in out and "wrong_answer" in out


def test_demo_rows_show_the_scripted_progression():
    rows = run_demo("cpu", Console(file=io.StringIO()))
    assert [r["status"] for r in rows] == ["wrong_answer", "ok", "ok"]
    rewards = [r["reward"] for r in rows]
    assert rewards[0] < 1.0 < rewards[1]  # correctness dominates
    assert rows[1]["reward/previous"] == pytest.approx(-rows[0]["score"])  # credited for the change it made
    assert sum(rewards) == pytest.approx(rows[-1]["score"])  # the detour through a wrong kernel did not pay
    assert rows[-1]["truncated"] and not rows[-1]["terminated"]  # the demo refines to the last turn


def test_the_demo_says_when_the_ranker_rated_a_later_correct_kernel_lower():
    row = {"correct": True, "reward/ranker": 0.16, "label": "naive"}
    assert "rated vec4 below naive" in ranker_caveat([row, {**row, "reward/ranker": 0.08, "label": "vec4"}])
    assert ranker_caveat([row, {**row, "reward/ranker": 0.2, "label": "vec4"}]) == ""
    assert ranker_caveat([{**row, "correct": False, "reward/ranker": 0.5}, row]) == ""  # only correct ones compare


KERNELBENCH = Path(__file__).parents[1] / "fixtures" / "kernelbench_mode" / "tanh_modelnew.py"


def test_tasks_show_and_eval_take_the_kernelbench_mode(capsys):
    assert main(["tasks", "show", "torch2cuda/tanh", "--mode", "kernelbench"]) == 0
    assert "Write `class ModelNew(nn.Module)`" in capsys.readouterr().out
    assert main(["eval", "--task", "torch2cuda/tanh", "--submission", str(KERNELBENCH), "--mode", "kernelbench",
                 "--backend", "cpu"]) == 2  # fmt: skip
    assert "mode='kernelbench' runs ModelNew's CUDA extensions on a GPU" in capsys.readouterr().err
    assert main(["eval", "--task", "c2cuda/saxpy_f32", "--submission", str(KERNELBENCH), "--mode", "kernelbench",
                 "--backend", "cpu"]) == 2  # fmt: skip
    assert "is for torch2cuda tasks" in capsys.readouterr().err
