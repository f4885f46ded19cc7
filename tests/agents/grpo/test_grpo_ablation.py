"""The ablation driver: its jobs, its resumable scheduler (real subprocesses) and its results file."""

import json
import math
import sys
import time

import pytest

from agents.evaluate import evaluate_policy, write_report
from agents.grpo.ablation import AblationConfig, Job, main, plan, run_jobs, write_results
from agents.grpo.ablation_results import compare, mean_ci
from agents.grpo.logbook import Logbook
from agents.policies import ScriptedPolicy
from agents.rollout import RolloutConfig
from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_tasks

TASK = load_tasks()["c2cuda/saxpy_f32"]
OTHER = load_tasks()["c2cuda/fma3_f32"]
GOOD = f"```cuda\n{TASK.implementation('naive').source}```"


def test_plan_pairs_each_final_checkpoint_with_the_start_model_on_the_same_seed(tmp_path):
    config = AblationConfig(model="/m", out=str(tmp_path), seeds=(0, 1))
    jobs = {j.name: j for j in plan(config)}
    assert len(jobs) == 2 + 3 * 2 + 3 * 2  # one evaluation per checkpoint and seed covers both held-out splits
    speed, ranker = jobs["train-speedup_only-s1"].command, jobs["train-cudaperf_ranker-s1"].command
    assert speed[speed.index("--preset") + 1] == "speedup_only" and "--no-ranker" in speed
    assert ranker[ranker.index("--preset") + 1] == "cudaperf" and "--ranker" in ranker
    assert "--no-ranker" in jobs["train-cudaperf_no_ranker-s0"].command
    final, start = jobs["eval-cudaperf_ranker-s1"], jobs["eval-start-s1"]
    assert final.after == ("train-cudaperf_ranker-s1",) and "--adapter" not in start.command
    assert final.command[final.command.index("--adapter") + 1] == str(tmp_path / "runs/cudaperf_ranker/seed-1/final")
    for job in (final, start):
        assert job.command[job.command.index("--seed") + 1] == "1" and "--spread" in job.command
        splits = [job.command[i + 1] for i, arg in enumerate(job.command) if arg == "--split"]
        assert splits == ["validation", "test"] and job.command[job.command.index("--batch-tasks") + 1] == "128"
    with pytest.raises(ValueError, match="unknown arms"):
        AblationConfig(model="/m", arms=("best",))


def _job(tmp_path, name, after=(), trains=False, fail=False):
    marker = tmp_path / name
    write = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(' '.join(sys.argv[2:]))"
    code = "import sys; sys.exit(3)" if fail else write
    return Job(name, [sys.executable, "-c", code, str(marker)], marker, after=after, trains=trains,
               log=tmp_path / "logs" / f"{name}.log")  # fmt: skip


def test_scheduler_respects_order_budget_and_resumes(tmp_path):
    jobs = [_job(tmp_path, "train", trains=True), _job(tmp_path, "eval", after=("train",)),
            _job(tmp_path, "broken", fail=True), _job(tmp_path, "after-broken", after=("broken",))]  # fmt: skip
    # no time left for an evaluation: only the training job starts, and it gets the budget as its own
    state = run_jobs(jobs, gpus=2, max_minutes=2.0, eval_minutes=5.0, train_minutes=1.0)
    assert state == {"train": "done", "eval": "pending", "broken": "pending", "after-broken": "pending"}
    flag = (tmp_path / "train").read_text().split()
    assert flag[0] == "--max-minutes" and 1.0 < float(flag[1]) < 1.6
    # re-run with no budget: finished work is skipped, the rest runs in dependency order
    state = run_jobs(jobs, gpus=2, max_minutes=0, eval_minutes=5.0, train_minutes=1.0)
    assert state == {"train": "done", "eval": "done", "broken": "failed", "after-broken": "pending"}
    assert (tmp_path / "eval").read_text() == ""  # not a training job: no budget flag
    assert "$ " in (tmp_path / "logs" / "eval.log").read_text()


def test_mean_ci_by_hand():
    # mean 0.3, sd 0.1414, se 0.1, t(0.975, 1 dof) = 12.706
    assert mean_ci([0.2, 0.4]) == {"mean": pytest.approx(0.3), "ci95": pytest.approx([0.3 - 1.2706, 0.3 + 1.2706]),
                                   "n": 2}  # fmt: skip
    assert mean_ci([0.5, None]) == {"mean": 0.5, "ci95": None, "n": 1}
    assert mean_ci([math.nan]) == {"mean": None, "ci95": None, "n": 0}


def test_checkpoints_compare_sample_by_sample_on_the_tasks_both_have():
    a = {"samples": {"t1": [[1, 1], [1, 0]], "t2": [[0, 0]], "only-a": [[1, 1]]}}
    b = {"samples": {"t1": [[0, 0], [1, 0], [1, 1]], "t2": [[1, 0]], "only-b": [[0, 0]]}}
    found = compare([a, None, a], [b, b, {"samples": {}}], seeds=[0, 1, 2])  # seeds 1, 2: one side unmeasured
    assert (found["seeds"], found["tasks"], found["samples"]) == ([0], 2, 3)  # t1's third sample of b unpaired
    # pass@1: t1 +1, 0; t2 -1 -> difference 0, one win, one loss; fast_1: t1 +1, 0; t2 0 -> +1/3, sign test p = 1
    assert found["pass_at_1"] | {"ci95": None} == {"difference": 0.0, "wins": 1, "losses": 1, "p_value": 1.0,
                                                   "ci95": None, "groups": 2}  # fmt: skip
    assert found["fast_1"]["difference"] == pytest.approx(1 / 3) and found["fast_1"]["p_value"] == 1.0
    assert compare([None], [b], seeds=[0]) is None


def test_results_file_has_the_issue_schema(tmp_path):
    config = AblationConfig(model="/m", out=str(tmp_path / "abl"), results=str(tmp_path / "res" / "grpo_ablation.json"),
                            arms=("speedup_only", "cudaperf_ranker"), seeds=(0, 1), steps=3, turns=1,
                            eval_splits=("validation", "test"))  # fmt: skip
    evaluator = Evaluator(make_backend("cpu"))
    splits = {"validation": [TASK.id], "test": [OTHER.id]}  # saxpy is a validation task here, fma3 a test one

    def replies(kernels):  # the saxpy kernel where saxpy is asked (each kernel of the list in turn), else prose
        return lambda messages, j: kernels[j % len(kernels)] if "saxpy" in messages[-1]["content"] else "no code"

    for seed in config.seeds:  # the start model writes no code; both arms' final checkpoints write the kernel
        for which, kernels in (("start", ["no code"]), ("speedup_only", [GOOD, "no"]), ("cudaperf_ranker", [GOOD])):
            d = tmp_path / "abl" / "eval" / which / f"seed-{seed}"
            rc = RolloutConfig(turns=1, group=2, seed=seed)
            records = evaluate_policy(ScriptedPolicy(replies(kernels)), [TASK, OTHER], evaluator, rc,
                                      d / "trajectories.jsonl")  # fmt: skip
            write_report(records, d, plots=False, splits=splits)
        for arm in config.arms:
            book = Logbook(tmp_path / "abl" / "runs" / arm / f"seed-{seed}", 3, False, False, 0)
            for step in (1, 2, 3):
                book.log(step, {"reward/total": step / 3, "pass_rate/trajectory": 0.5, "time/step_s": 10.0,
                                "time/eval_wait_share": 0.1})  # fmt: skip
            book.close()
    results = write_results(config, {"x": "done"}, "python -m agents.grpo.ablation ...")
    saved = json.loads((tmp_path / "res" / "grpo_ablation.json").read_text())
    assert saved["complete"] and saved["command"].startswith("python -m") and "card" in saved["device"]
    assert (tmp_path / "res" / "grpo_ablation_curves.png").stat().st_size > 1000
    assert [a["preset"] for a in saved["arms"]] == ["speedup_only", "cudaperf"]
    assert [a["ranker"] for a in saved["arms"]] == [False, True]
    for arm in saved["arms"]:
        assert arm["seeds"] == [0, 1] and arm["steps"] == 3
        for entry in arm["per_seed"]:
            for which in ("start", "final"):
                assert {"pass_at_1", "fast_1", "fast_1_5", "geomean_speedup"} <= set(entry[which])
            assert entry["start"]["pass_at_1"] == 0.0 and entry["step_times"]["step_s"] == 10.0
    speed, ranker = results["arms"]
    final = speed["per_seed"][0]["final"]
    assert final["pass_at_1"] == pytest.approx(0.25)  # saxpy: one of two samples correct; fma3: none
    assert final["per_split"]["validation"]["pass_at_1"] == pytest.approx(0.5)
    assert final["per_split"]["test"] == {**final["per_split"]["test"], "pass_at_1": 0.0, "tasks": 1}
    assert ranker["summary"]["delta"]["pass_at_1"] == {"mean": 0.5, "ci95": [0.5, 0.5], "n": 2}
    assert final["samples"] == {TASK.id: [[1, 0], [0, 0]], OTHER.id: [[0, 0], [0, 0]]}  # CPU backend: never fast
    found = {(c["a"], c["b"]): c for c in saved["comparisons"]}
    assert set(found) == {("speedup_only", "start"), ("cudaperf_ranker", "start"), ("cudaperf_ranker", "speedup_only")}
    # 2 seeds x 2 tasks x 2 samples; the ranker arm's 4 saxpy samples right where the start model's were not
    vs_start = found["cudaperf_ranker", "start"]
    assert (vs_start["seeds"], vs_start["tasks"], vs_start["samples"]) == ([0, 1], 4, 8)
    assert vs_start["pass_at_1"] | {"ci95": None} == {"difference": 0.5, "wins": 4, "losses": 0, "p_value": 0.125,
                                                      "ci95": None, "groups": 4}  # fmt: skip
    assert 0.0 <= vs_start["pass_at_1"]["ci95"][0] <= 0.5 <= vs_start["pass_at_1"]["ci95"][1] <= 1.0
    assert found["cudaperf_ranker", "speedup_only"]["pass_at_1"]["difference"] == 0.25  # saxpy's second sample
    assert found["cudaperf_ranker", "speedup_only"]["fast_1"]["difference"] == 0.0


def test_spread_subset_covers_the_families_round_robin():
    from agents.evaluate import spread_over_families
    from cudaperf_env.dataset import load_dataset

    tasks = list(load_dataset("validation", labels=False).values())
    families = list(dict.fromkeys(t.family for t in tasks))
    picked = spread_over_families(tasks, len(families) + 2)
    assert [t.family for t in picked[: len(families)]] == families  # one of each family first, in order
    assert picked[len(families)].family == families[0] and len({t.id for t in picked}) == len(picked)
    assert picked == spread_over_families(tasks, len(families) + 2)
    assert len(spread_over_families(tasks[:3], 10)) == 3


def test_driver_kills_a_job_at_the_deadline(tmp_path):
    sleeper = Job("train", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "never", trains=True,
                  log=tmp_path / "train.log")  # fmt: skip
    started = time.monotonic() - 60 * 1.96  # 2.4 s of a 2-minute budget left
    assert run_jobs([sleeper], 1, max_minutes=2.0, eval_minutes=5.0, train_minutes=0.01, started=started) == {
        "train": "incomplete"}  # fmt: skip
    assert time.monotonic() - started < 60 * 1.96 + 10


def test_a_failed_job_is_started_again_once(tmp_path):
    # each start appends a line; the flaky job fails on its first start only, the broken one always
    code = ("import sys, pathlib; log = pathlib.Path(sys.argv[1]); log.write_text(log.read_text() + 'x' "
            "if log.exists() else 'x'); n = len(log.read_text()); flaky = sys.argv[2] == 'flaky'; "
            "ok = flaky and n >= 2; ok and pathlib.Path(sys.argv[3]).write_text('done'); sys.exit(0 if ok else 3)")
    jobs = [Job(name, [sys.executable, "-c", code, str(tmp_path / f"{name}.starts"), name, str(tmp_path / name)],
                tmp_path / name, trains=True, log=tmp_path / "logs" / f"{name}.log") for name in ("flaky", "broken")]
    state = run_jobs(jobs, gpus=1, max_minutes=0, eval_minutes=0, jobs_per_gpu=2)
    assert state == {"flaky": "done", "broken": "failed"}
    assert (tmp_path / "flaky.starts").read_text() == "xx" and (tmp_path / "broken.starts").read_text() == "xx"
    assert run_jobs(jobs[1:], gpus=1, max_minutes=0, eval_minutes=0, retries=0) == {"broken": "failed"}
    assert (tmp_path / "broken.starts").read_text() == "xxx"


def test_dry_run_lists_every_job(tmp_path, capsys):
    assert main(["--model", "/m", "--out", str(tmp_path), "--seeds", "0", "--arms", "speedup_only", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 1 + 1 and all(line.startswith("[pending] ") for line in lines)
    assert "--save-every 1" in lines[1] and "--preset speedup_only" in lines[1]


def test_several_jobs_share_a_gpu_at_once(tmp_path):
    # each job records its GPU and waits until every job has started: only concurrent jobs finish
    code = ("import os, sys, time, pathlib; d = pathlib.Path(sys.argv[1]); "
            "(d / sys.argv[2]).write_text(os.environ['CUDA_VISIBLE_DEVICES']); t = time.time(); "
            "[time.sleep(0.05) for _ in iter(lambda: len(list(d.glob('job*'))) < 3 and time.time() - t < 20, False)]; "
            "sys.exit(0 if len(list(d.glob('job*'))) == 3 else 4)")  # fmt: skip
    jobs = [Job(f"job{i}", [sys.executable, "-c", code, str(tmp_path), f"job{i}"], tmp_path / f"job{i}",
                log=tmp_path / "logs" / f"job{i}.log") for i in range(3)]  # fmt: skip
    assert run_jobs(jobs, gpus=1, max_minutes=0, eval_minutes=0, jobs_per_gpu=3) == dict.fromkeys(
        ("job0", "job1", "job2"), "done")  # fmt: skip
    assert {(tmp_path / f"job{i}").read_text() for i in range(3)} == {"0"}


def test_boolean_options_are_flags_passed_to_the_runs(tmp_path, capsys):
    args = ["--model", "/m", "--out", str(tmp_path), "--seeds", "0", "--arms", "speedup_only", "--dry-run"]
    assert main([*args, "--no-tensorboard", "--jobs-per-gpu", "4"]) == 0
    train = capsys.readouterr().out.splitlines()[1]
    assert train.endswith("--no-tensorboard --no-static-cache --no-source-tokens-only")
    assert main([*args, "--static-cache", "--eval-policy", "transformers", "--source-tokens-only"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].endswith("--tensorboard --static-cache --source-tokens-only")
    assert lines[0].endswith("--no-plots --source-tokens-only --static-cache")


def session(seed, pass_at_1, **config):
    """Results of a session that ran one seed of one arm (as write_results lays them out)."""
    metrics = {"pass_at_1": pass_at_1, "fast_1": 0.0, "fast_1_5": 0.0, "geomean_speedup": None}
    entry = {"seed": seed, "start": {**metrics, "pass_at_1": 0.0}, "final": metrics,
             "step_times": {"steps_logged": 2}, "curve": [{"step": 1, "reward/total": 0.1}]}  # fmt: skip
    unmeasured = {"seed": 1 - seed, "start": None, "final": None, "step_times": {"steps_logged": 0}, "curve": []}
    entries = sorted([entry, unmeasured], key=lambda e: e["seed"]) if config.pop("both", False) else [entry]
    arm = {"name": "speedup_only", "preset": "speedup_only", "ranker": False, "seeds": [seed], "steps": 2,
           "per_seed": entries}
    return {"experiment": "grpo_reward_ablation", "command": f"python -m agents.grpo.ablation --seeds {seed}",
            "complete": True, "jobs": {f"train-speedup_only-s{seed}": "done"},
            "config": {"steps": 2, "eval_limit": 12, "seeds": [seed], **config}, "arms": [arm]}  # fmt: skip


def test_sessions_of_one_seed_each_merge_into_one_ablation():
    from agents.grpo.ablation import SETTING_BEFORE_IT_EXISTED, MergeMismatchError, merged

    both = merged(session(0, 0.25), session(1, 0.75, both=True))  # the second session listed seed 0 unmeasured
    arm = both["arms"][0]
    assert arm["seeds"] == [0, 1] and [e["final"]["pass_at_1"] for e in arm["per_seed"]] == [0.25, 0.75]
    assert arm["summary"]["delta"]["pass_at_1"]["mean"] == pytest.approx(0.5)
    assert arm["summary"]["delta"]["pass_at_1"]["n"] == 2
    assert both["config"]["seeds"] == [0, 1] and both["complete"] and len(both["commands"]) == 2
    assert set(both["jobs"]) == {"train-speedup_only-s0", "train-speedup_only-s1"}
    again = merged(both, session(1, 0.5))  # a seed measured again: this session's figures win
    assert [e["final"]["pass_at_1"] for e in again["arms"][0]["per_seed"]] == [0.25, 0.5]
    other_arm = session(1, 0.5)
    other_arm["arms"][0] = {**other_arm["arms"][0], "name": "cudaperf_ranker"}
    assert [a["name"] for a in merged(session(0, 0.25), other_arm)["arms"]] == ["cudaperf_ranker", "speedup_only"]
    with pytest.raises(MergeMismatchError, match="eval_limit"):
        merged(session(0, 0.25), session(1, 0.75, eval_limit=64))
    # results written before source_tokens_only existed ran without it: they merge with runs that are off only
    assert merged(session(0, 0.25), session(1, 0.75, source_tokens_only=False))["arms"][0]["seeds"] == [0, 1]
    with pytest.raises(MergeMismatchError, match="source_tokens_only"):
        merged(session(0, 0.25), session(1, 0.75, source_tokens_only=True))
    # results written before the start model was recorded started from the interim SFT adapter
    interim = SETTING_BEFORE_IT_EXISTED["start"]
    assert merged(session(0, 0.25), session(1, 0.75, start=interim))["arms"][0]["seeds"] == [0, 1]
    with pytest.raises(MergeMismatchError, match="start"):
        merged(session(0, 0.25), session(1, 0.75, start="0123456789abcdef"))


def test_results_name_their_start_model_by_its_adapter(tmp_path):
    from agents.grpo.ablation import AblationConfig, results_config
    from agents.grpo.start_model import adapter_digest, start_identity

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    start = tmp_path / "start"
    start.mkdir()
    digest = adapter_digest(adapter)
    (start / "start_model.json").write_text(json.dumps({"adapter": str(adapter), "adapter_sha256": digest}))
    assert results_config(AblationConfig(model=str(start), out=str(tmp_path)))["start"] == adapter_digest(adapter)
    assert len(adapter_digest(adapter)) == 16
    (start / "start_model.json").write_text(json.dumps({"adapter": None}))
    assert start_identity(start) == "none" and start_identity(tmp_path / "nothing") == "unknown"


def test_a_merge_with_other_settings_is_refused_before_any_job_runs(tmp_path):
    from agents.grpo.ablation import MergeMismatchError, main

    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"experiment": "grpo_reward_ablation", "config": {"steps": 10}}))
    with pytest.raises(MergeMismatchError, match="steps"):
        main(["--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "abl"), "--steps", "4",
              "--merge", str(earlier)])  # fmt: skip
    assert not (tmp_path / "abl").exists()  # refused before planning: nothing ran, nothing written
