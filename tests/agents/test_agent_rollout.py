"""Rollouts with a scripted policy, graded for real on the CPU backend, and their JSONL records."""

import gzip
import json
import threading
from dataclasses import replace

import pytest

from agents.context import Exchange, conversation
from agents.evaluate import evaluate_policy, write_report
from agents.policies import Sampling, ScriptedPolicy
from agents.records import read_records
from agents.rollout import RolloutConfig, rollout
from cudaperf_env.backends import make_backend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.reward import discounted_returns
from cudaperf_env.tasks import load_tasks

TASK = load_tasks()["c2cuda/saxpy_f32"]
GOOD = f"```cuda\n{TASK.implementation('naive').source}```"
GARBAGE = "I am not sure how to do this."


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator(make_backend("cpu"))


def test_group_rollout_records_every_turn_with_rewards_and_returns(evaluator, tmp_path):
    # trajectory 0 fails twice then succeeds; trajectory 1 is correct at once and stops.
    def script(messages, j):
        turn = sum(m["role"] == "assistant" for m in messages) + 1
        if turn == 1:
            return [GARBAGE, GOOD][j]
        return GARBAGE if turn == 2 else GOOD

    policy = ScriptedPolicy(script, name="script")
    config = RolloutConfig(turns=3, group=2, seed=0, gamma=0.5)
    out = tmp_path / "traj.jsonl"
    seen = []
    records = evaluate_policy(policy, [TASK], evaluator, config, out, on_turn=lambda t, n, rs: seen.append(n))
    assert seen == [1, 2, 3]
    assert [(r.trajectory, r.turn, r.status, r.correct) for r in records] == [
        (0, 1, "format_error", False),
        (0, 2, "format_error", False),
        (0, 3, "ok", True),
        (1, 1, "ok", True),
    ]
    t0 = [r for r in records if r.trajectory == 0]
    # potential-based: the rewards of a trajectory sum to its last score
    assert sum(r.reward for r in t0) == pytest.approx(t0[-1].score)
    assert [r.returns for r in t0] == pytest.approx(discounted_returns([r.score for r in t0], 0.5))
    # the conversation grows: turn 3 saw both earlier replies and their feedback
    assert [m["role"] for m in t0[2].prompt] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert t0[2].prompt[2]["content"] == GARBAGE and "Turn 2/3 feedback" in t0[2].prompt[5]["content"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4
    for key in ("task_id", "trajectory", "turn", "reply", "status", "correct", "reward", "model", "reward_terms",
                "prompt", "feedback", "generate_seconds", "grade_seconds"):  # fmt: skip
        assert key in lines[0]
    assert lines[0]["model"] == "script" and lines[3]["reward_terms"]["correct"] == 1.0
    assert read_records(out) == records
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(out.read_bytes()))
    assert read_records(packed) == records  # a committed run's file, compressed
    # where grading time went, stage by stage: a correct reply was built (or found built) and run
    ok = records[3].info
    assert ok["seconds/total"] > 0 and {"seconds/build", "seconds/run"} <= set(ok)  # build: 0 when cached


def test_report_over_the_written_trajectories(evaluator, tmp_path):
    policy = ScriptedPolicy([GOOD, GARBAGE, GARBAGE, GARBAGE])
    records = rollout(policy, TASK, evaluator, RolloutConfig(turns=1, group=4))
    report = write_report(records, tmp_path)
    assert report["pass_at_k"] == {"1": pytest.approx(0.25), "4": 1.0}
    assert report["fast_p"]["0.0"] == pytest.approx(0.25) and report["fast_p"]["1.0"] == 0.0  # CPU: no speedup
    assert report["status"] == {"format_error": 0.75, "ok": 0.25}
    assert report["per_family"]["elementwise"]["tasks"] == 1
    assert (tmp_path / "fast_p.png").stat().st_size > 1000 and (tmp_path / "per_turn.png").is_file()
    # runs of two seeds reported together: their trajectory 0s are different samples
    other = rollout(ScriptedPolicy([GARBAGE] * 4), TASK, evaluator, RolloutConfig(turns=1, group=4, seed=1))
    both = write_report(records + other, tmp_path / "both")
    assert both["trajectories"] == 8 and both["pass_at_k"]["1"] == pytest.approx(1 / 8)


def test_report_counts_replies_cut_off_at_the_token_limit(evaluator, tmp_path):
    cut = GOOD[: GOOD.index('extern "C"')]  # the token limit struck before the entry function
    records = rollout(ScriptedPolicy([GOOD, cut, GARBAGE, cut]), TASK, evaluator, RolloutConfig(turns=1, group=4))
    assert [r.info["cut_off"] for r in records] == [False, True, False, True]
    assert write_report(records, tmp_path, plots=False)["cut_off_rate"] == pytest.approx(0.5)
    said_so = [replace(records[2], finish_reason="length")] + records[:2]  # a policy's own word counts too
    assert write_report(said_so, tmp_path, plots=False)["cut_off_rate"] == pytest.approx(2 / 3)


def test_context_drops_oldest_exchanges_and_summarizes_them():
    history = [Exchange("x" * 400, f"feedback {i}", s) for i, s in enumerate(["compile_error", "wrong_answer", "ok"])]
    count = ScriptedPolicy(["-"]).count_tokens
    full, dropped = conversation("sys", "task", history, budget=10_000, count_tokens=count)
    assert dropped == 0 and len(full) == 8
    small, dropped = conversation("sys", "task", history, budget=150, count_tokens=count)
    assert dropped == 2
    assert "turn 1: compile_error" in small[3]["content"] and "turn 2: wrong_answer" in small[3]["content"]
    assert small[-1]["content"] == "feedback 2"  # the latest exchange is always kept
    assert [m["role"] for m in small] == ["system", "user", "assistant", "user", "assistant", "user"]


def test_rollout_config_rejects_bad_values():
    with pytest.raises(ValueError, match="turns and group must be >= 1"):
        RolloutConfig(turns=0)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(top_p=0.0)


def test_tasks_rolled_out_together_give_the_records_of_one_by_one_with_one_generation_per_turn(evaluator, tmp_path):
    other = load_tasks()["c2cuda/clamp_i32"]
    good = {TASK.id: GOOD, other.id: f"```cuda\n{other.implementation(other.baseline).source}```"}

    def script(messages, j):  # trajectory 0 of each task fails once, then answers right
        turn = sum(m["role"] == "assistant" for m in messages) + 1
        task_id = TASK.id if "clamp" not in messages[1]["content"] else other.id
        return GARBAGE if (j == 0 and turn == 1) else good[task_id]

    class Counting(ScriptedPolicy):
        calls = 0

        def generate(self, messages_batch, n, sampling, **kwargs):
            Counting.calls += 1
            return super().generate(messages_batch, n, sampling, **kwargs)

    config = RolloutConfig(turns=2, group=2, seed=3)
    one_by_one = [r for t in (TASK, other) for r in rollout(ScriptedPolicy(script), t, evaluator, config)]
    together = evaluate_policy(Counting(script), [TASK, other], evaluator, config, tmp_path / "t.jsonl", batch_tasks=2)
    assert Counting.calls == 2  # turn 1: both tasks' groups in one call; turn 2: the two failed trajectories

    def key(r):
        return (r.task_id, r.trajectory, r.turn, r.status, r.correct, r.reply, r.reward, r.returns)

    assert [key(r) for r in together] == [key(r) for r in one_by_one]
    assert [(r.task_id, r.trajectory, r.turn, r.correct) for r in together] == [
        (TASK.id, 0, 1, False), (TASK.id, 0, 2, True), (TASK.id, 1, 1, True),
        (other.id, 0, 1, False), (other.id, 0, 2, True), (other.id, 1, 1, True),
    ]  # fmt: skip
    assert read_records(tmp_path / "t.jsonl") == together


def test_grading_inputs_are_made_while_the_first_turn_is_generated(evaluator, monkeypatch):
    order = []
    monkeypatch.setattr(evaluator, "prepare", lambda jobs: order.append(("prepare", [(t.id, s) for t, s in jobs])))
    policy = ScriptedPolicy(lambda messages, j: order.append(("generate",)) or GOOD, name="script")
    rollout(policy, TASK, evaluator, RolloutConfig(turns=1, group=2, seed=5))
    assert order[:2] == [("prepare", [(TASK.id, 5)]), ("generate",)]


class _Watched:
    """The evaluator, with an event set once the first of its verdicts is in."""

    def __init__(self, evaluator):
        self.inner, self.first_verdict = evaluator, threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def evaluate(self, task, action, seed=0):
        evaluation = self.inner.evaluate(task, action, seed)
        self.first_verdict.set()
        return evaluation

    def submit(self, task, action, seed=0):
        return self.inner._grading.submit(self.evaluate, task, action, seed)


@pytest.mark.parametrize("streaming", [True, False])
def test_replies_are_graded_while_the_rest_of_the_batch_is_written(evaluator, streaming):
    watched = _Watched(evaluator)
    seen_before_last = []

    def script(messages, j):  # the last reply is written only once the first has its verdict, or 20 s passed
        if j == 3:
            seen_before_last.append(watched.first_verdict.wait(timeout=20 if streaming else 0.5))
        return [GOOD, GARBAGE, GOOD, GARBAGE][j]

    config = RolloutConfig(turns=1, group=4, seed=2, grade_while_generating=streaming)
    records = rollout(ScriptedPolicy(script), TASK, watched, config)
    assert seen_before_last == [streaming]
    assert [(r.status, r.correct) for r in records] == [("ok", True), ("format_error", False)] * 2
    assert records[0].grade_seconds == records[3].grade_seconds > 0  # one span for the turn's grading


def test_a_reply_told_early_is_graded_again_if_its_final_text_differs(evaluator):
    class Revising(ScriptedPolicy):  # tells of a wrong draft, then returns the right reply
        def generate(self, messages_batch, n, sampling, on_reply=None):
            out = super().generate(messages_batch, n, sampling)
            on_reply(0, GARBAGE)
            return out

    records = rollout(Revising([GOOD]), TASK, evaluator, RolloutConfig(turns=1, group=1))
    assert [(r.reply, r.status) for r in records] == [(GOOD, "ok")]


def test_an_evaluator_without_submit_grades_a_turn_after_its_generation(evaluator):
    class BatchOnly:  # a user's own evaluator: evaluate_batch and prepare only
        def evaluate_batch(self, jobs):
            return evaluator.evaluate_batch(jobs)

        def prepare(self, jobs):
            return evaluator.prepare(jobs)

    records = rollout(ScriptedPolicy([GOOD, GARBAGE]), TASK, BatchOnly(), RolloutConfig(turns=1, group=2))
    assert [r.status for r in records] == ["ok", "format_error"]


def test_a_policy_that_fails_mid_batch_leaves_no_grading_queued():
    from concurrent.futures import ThreadPoolExecutor

    class OneAtATime:  # grades on one thread, the first grading held until the policy has failed
        def __init__(self):
            self.pool, self.gate, self.futures = ThreadPoolExecutor(1), threading.Event(), []

        def prepare(self, jobs):
            return None

        def submit(self, task, action, seed=0):
            self.futures.append(self.pool.submit(self.gate.wait, 20))
            return self.futures[-1]

    class Failing(ScriptedPolicy):  # tells of three replies, then its server gives up
        def generate(self, messages_batch, n, sampling, on_reply=None):
            for j in range(3):
                on_reply(j, GOOD)
            raise RuntimeError("the server gave up")

    evaluator = OneAtATime()
    with pytest.raises(RuntimeError, match="gave up"):
        rollout(Failing([GOOD]), TASK, evaluator, RolloutConfig(turns=1, group=4))
    evaluator.gate.set()
    assert [f.cancelled() for f in evaluator.futures] == [False, True, True]  # the running one ends on its own
    evaluator.pool.shutdown()
