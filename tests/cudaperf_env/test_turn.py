"""The one turn function: grading, the info/JSON views, multi-turn credit, user tasks without implementations."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.backends.reference import ReferenceOutputs
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.reward import PRESET_TERMS, RewardConfig
from cudaperf_env.tasks import load_task, load_tasks
from cudaperf_env.turn import Grader, grade, grade_many

MINIMAL = Path(__file__).parents[1] / "fixtures" / "minimal_tasks" / "vadd.yaml"
VADD = """```cuda
__global__ void k(int n, const float* a, const float* b, float* c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void vadd(int n, const float* a, const float* b, float* c) { k<<<(n + 127) / 128, 128>>>(n, a, b, c); }
```"""


@pytest.fixture(scope="module")
def grader():
    return Grader.on(CpuBackend(timeout_s=5.0))


def test_a_task_with_only_id_entry_args_configs_and_reference_loads_and_grades(grader):
    task = load_task(MINIMAL)
    assert (task.kind, task.family, task.baseline, task.implementations) == ("c2cuda", "custom", "", ())
    turn = grader.grade(task, VADD)
    assert turn.status == "ok" and turn.correct, turn.feedback
    wrong = grader.grade(task, VADD.replace("a[i] + b[i]", "a[i] - b[i]"), turn)
    assert wrong.status == "wrong_answer" and wrong.number == 2


def test_info_has_every_preset_term_and_only_scalars(grader):
    task = load_tasks()["c2cuda/saxpy_f32"]
    for preset in ("cudaperf", "kevin", "cuda_agent", "speedup_only"):
        turn = grade(task, "no code here", evaluator=grader.evaluator, reward=RewardConfig(preset=preset))
        info = turn.info()
        assert {f"reward/{t}" for t in PRESET_TERMS[preset]} <= set(info)
        assert all(np.isscalar(v) for v in info.values())
        assert info["status"] == "format_error" and type(info["status"]) is str


def test_json_view_is_strict_json_with_terms_and_feedback(grader):
    task = load_tasks()["c2cuda/saxpy_f32"]
    record = grader.grade(task, f"```cuda\n{task.implementation(task.baseline).source}```").as_json()
    text = json.dumps(record, allow_nan=False)  # NaN became null
    assert record["status"] == "ok" and record["speedup"] is None and "reward/structure" in record
    assert record["reward"] == pytest.approx(sum(record["reward_terms"].values())) and "feedback" in json.loads(text)


def test_a_reply_cut_off_by_a_length_limit_is_told_so(grader):
    task = load_task(MINIMAL)
    cut = grader.grade(task, VADD[: VADD.index('extern "C"')])  # stopped before the entry function
    assert cut.status == "rejected" and cut.info()["cut_off"]
    assert "never closed" in cut.feedback and "shorter" in cut.feedback
    whole_but_open = grader.grade(task, VADD.removesuffix("```"))  # complete code, only the fence missing
    assert whole_but_open.status == "ok" and whole_but_open.info()["cut_off"]
    assert "never closed" not in whole_but_open.feedback
    closed = grader.grade(task, VADD.replace("a[i] + b[i]", "a[i] - b[i]"))
    assert not closed.info()["cut_off"] and "never closed" not in closed.feedback


def test_a_group_is_graded_in_order_and_each_member_continues_its_own_trajectory(grader):
    task = load_task(MINIMAL)
    first = grade_many(task, [VADD, "garbage"], evaluator=grader.evaluator)
    assert [t.status for t in first] == ["ok", "format_error"]
    second = grade_many(task, [VADD, VADD], first, evaluator=grader.evaluator)
    assert [t.number for t in second] == [2, 2]
    assert second[0].reward.total == pytest.approx(0.0)  # the same level again
    assert second[1].reward.total == pytest.approx(second[1].reward.score - first[1].reward.score)
    with pytest.raises(ValueError, match="previous has 1 entries for 2 replies"):
        grade_many(task, [VADD, VADD], first[:1], evaluator=grader.evaluator)


def test_outputs_larger_than_the_reference_cache_are_returned_not_evicted():
    """The defect: a config whose outputs exceed the cache raised KeyError from the reference cache."""
    task = load_task(MINIMAL)
    evaluator = Evaluator(CpuBackend(timeout_s=5.0), reference=ReferenceOutputs(max_bytes=1024))
    turn = grade(task, VADD, evaluator=evaluator)
    assert turn.status == "ok", turn.feedback
    assert math.isnan(turn.evaluation.speedup)


def test_the_ranker_stage_scores_compiled_code_when_a_model_ships(grader):
    from cudaperf_env.evaluate import shipped_ranker

    if shipped_ranker() is None:
        pytest.skip("no ranker model ships in cudaperf_env/ranker/data yet")
    task = load_tasks()["c2cuda/saxpy_f32"]
    turn = grader.grade(task, f"```cuda\n{task.implementation(task.baseline).source}```")
    assert 0.0 <= turn.info()["ranker_score"] <= 1.0
    assert turn.info()["reward/ranker"] == pytest.approx(0.25 * turn.info()["ranker_score"])
