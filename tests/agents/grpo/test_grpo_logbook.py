"""Step metrics from graded turns, and where they are written."""

import math
from dataclasses import replace

import pytest

from agents.grpo.logbook import Logbook, read_metrics, rollout_metrics, timing
from agents.records import TurnRecord


def record(traj, turn, correct, reward, status, speedup=None, tokens=10):
    return TurnRecord(task_id="t", family="f", trajectory=traj, turn=turn, reply="", status=status, correct=correct,
                      compiled=correct, speedup=speedup, reward=reward, score=reward, returns=reward,
                      reward_terms={"correct": float(correct), "format": 0.0 if correct else -0.5}, model="m",
                      seed=7, completion_tokens=tokens, grade_seconds=2.0 * turn)  # fmt: skip


RECORDS = [record(0, 1, False, -0.5, "format_error"), record(0, 2, True, 1.0, "ok", 2.0, 30),
           record(1, 1, True, 1.0, "ok", 8.0)]  # fmt: skip


def test_rollout_metrics_by_hand():
    m = rollout_metrics(RECORDS)
    assert m["reward/total"] == pytest.approx(0.5) and m["reward/correct"] == pytest.approx(2 / 3)
    assert m["reward/format"] == pytest.approx(-0.5 / 3)
    assert m["pass_rate/trajectory"] == 1.0 and m["pass_rate/first_turn"] == 0.5
    assert m["speedup/geomean_correct"] == pytest.approx(4.0)  # sqrt(2 * 8)
    assert m["length/completion_mean"] == pytest.approx(50 / 3) and m["length/completion_max"] == 30
    assert m["status/format_error"] == pytest.approx(1 / 3) and m["turns/mean"] == 1.5


def test_timing_splits_the_step_and_measures_the_wait_for_evaluation():
    t = timing(RECORDS, rollout_s=10.0, gen_s=7.0, opt_s=5.0, step_s=16.0)
    # grading time counted once per (task, seed, turn): turn 1 (2 s) and turn 2 (4 s)
    assert t["time/evaluation_s"] == 6.0 and t["time/eval_wait_s"] == 3.0
    assert t["time/eval_wait_share"] == pytest.approx(3 / 16) and t["time/eval_hidden_share"] == pytest.approx(0.5)


def test_a_batched_grading_call_shared_by_several_tasks_counts_once():
    batched = [replace(r, task_id=task) for task in ("a", "b", "c", "d") for r in RECORDS]
    t = timing(batched, rollout_s=13.0, gen_s=7.0, opt_s=1.0, step_s=14.0)
    assert t["time/evaluation_s"] == 6.0 and t["time/eval_wait_s"] == 6.0  # the generator waited for all of it
    assert t["time/eval_hidden_share"] == 0.0


def test_metrics_file_drops_steps_after_the_resumed_checkpoint(tmp_path):
    book = Logbook(tmp_path, 5, tensorboard=False, progress=False, start_step=0)
    for step in (1, 2, 3):
        book.log(step, {"reward/total": float(step), "speedup/geomean_correct": math.nan})
    book.close()
    assert read_metrics(tmp_path / "metrics.jsonl")[0] == {"step": 1, "reward/total": 1.0,
                                                           "speedup/geomean_correct": None}  # fmt: skip
    Logbook(tmp_path, 5, tensorboard=False, progress=False, start_step=2).close()
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2]


def test_tensorboard_scalars_are_written(tmp_path):
    pytest.importorskip("tensorboard", reason="needs the grpo extra: pip install 'cudaperf-env[grpo]'")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    book = Logbook(tmp_path, 2, tensorboard=True, progress=True, start_step=0)
    book.log(1, {"reward/total": 0.25, "time/eval_wait_share": 0.1})
    book.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"reward/total", "time/eval_wait_share"}
    assert events.Scalars("reward/total")[0].value == 0.25


def test_grading_stages_are_averaged_per_reply():
    timed = [replace(RECORDS[0], info={"seconds/build": 2.0, "seconds/total": 3.0}),
             replace(RECORDS[1], info={"seconds/total": 1.0})]  # fmt: skip
    m = rollout_metrics(timed)
    assert m["grade/seconds/build"] == 1.0 and m["grade/seconds/total"] == 2.0
