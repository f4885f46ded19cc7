"""``cudaperf agent run`` and ``cudaperf evaluate`` through :func:`add_agent_commands`."""

import argparse
import json
import sys

import pytest

import agents.cli as cli
from agents.policies import ScriptedPolicy
from cudaperf_env.errors import BackendUnavailableError
from cudaperf_env.tasks import load_tasks

TASK = load_tasks()["c2cuda/saxpy_f32"]
GOOD = f"```cuda\n{TASK.implementation('naive').source}```"


def run(argv):
    parser = argparse.ArgumentParser(prog="cudaperf")
    cli.add_agent_commands(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.run(args)


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(cli, "_policy", lambda args: ScriptedPolicy(["no code here", GOOD], name="canned"))


def test_agent_run_writes_jsonl_and_shows_turns(scripted, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert run(["agent", "run", "--task", TASK.id, "--backend", "cpu", "--turns", "2", "--seed", "1",
                "--out", str(out)]) == 0  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["turn"], r["status"], r["model"], r["seed"]) for r in lines] == [
        (1, "format_error", "canned", 1), (2, "ok", "canned", 1)]  # fmt: skip
    shown = capsys.readouterr().out
    assert "turn 2: ok" in shown and "feedback" in shown and "2 turn records" in shown


def test_a_dataset_task_is_found_by_its_id(scripted, tmp_path):
    out = tmp_path / "t.jsonl"
    assert run(["agent", "run", "--task", "c2cuda/map_binary_0001", "--backend", "cpu", "--turns", "1",
                "--out", str(out), "--no-show"]) == 0  # fmt: skip
    assert json.loads(out.read_text().splitlines()[0])["task_id"] == "c2cuda/map_binary_0001"


def test_evaluate_reports_on_an_existing_trajectory_file(scripted, tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    run(["agent", "run", "--task", TASK.id, "--backend", "cpu", "--turns", "2", "--out", str(out), "--no-show"])
    assert run(["evaluate", "--trajectories", str(out), "--out-dir", str(tmp_path / "r")]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["pass_at_k"]["1"] == 1.0 and [row["correct_by_turn"] for row in report["per_turn"]] == [0.0, 1.0]
    assert (tmp_path / "r" / "per_turn.png").is_file()
    assert "pass@1" in capsys.readouterr().out


def test_agent_run_needs_a_task_or_split():
    with pytest.raises(SystemExit):
        run(["agent", "run", "--backend", "cpu"])


def test_ray_flag_without_ray_says_what_to_install(scripted, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(BackendUnavailableError, match=r"pip install 'cudaperf-env\[ray\]'"):
        run(["agent", "run", "--task", TASK.id, "--backend", "cpu", "--turns", "1", "--ray", "local",
             "--out", str(tmp_path / "t.jsonl")])


def test_evaluate_rolls_several_splits_out_together_and_reports_each(scripted, tmp_path, capsys):
    from cudaperf_env.dataset import load_splits

    out = tmp_path / "r"
    assert run(["evaluate", "--split", "validation", "--split", "test", "--limit", "2", "--spread", "--backend", "cpu",
                "--turns", "1", "--out-dir", str(out), "--no-plots"]) == 0  # fmt: skip
    report = json.loads((out / "report.json").read_text())
    rolled = {json.loads(line)["task_id"] for line in (out / "trajectories.jsonl").read_text().splitlines()}
    splits = load_splits()
    assert report["tasks"] == 4 and set(report["per_split"]) == {"validation", "test"}
    for name in ("validation", "test"):
        assert report["per_split"][name]["tasks"] == 2 and len(rolled & set(splits[name])) == 2
    header = next(line for line in capsys.readouterr().out.splitlines() if "metric" in line)
    assert [w for w in header.replace("┃", " ").split()] == ["metric", "all", "validation", "test"]
    # the same report again from the trajectory file alone
    assert run(["evaluate", "--trajectories", str(out / "trajectories.jsonl"), "--split", "validation", "--split",
                "test", "--out-dir", str(tmp_path / "again"), "--no-plots"]) == 0  # fmt: skip
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    for name in ("validation", "test"):  # counts equal; float sums may differ in the last bit (another order)
        assert {k: again["per_split"][name][k] for k in ("tasks", "pass_at_k", "status")} == \
            {k: report["per_split"][name][k] for k in ("tasks", "pass_at_k", "status")}


def test_sampling_keeps_to_source_tokens_unless_told_not_to():
    parser = argparse.ArgumentParser(prog="cudaperf")
    cli.add_agent_commands(parser.add_subparsers())
    for command in (["evaluate", "--split", "test"], ["agent", "run", "--task", "c2cuda/saxpy_f32"]):
        assert cli._config(parser.parse_args(command)).sampling.source_tokens_only
        assert not cli._config(parser.parse_args([*command, "--no-source-tokens-only"])).sampling.source_tokens_only
