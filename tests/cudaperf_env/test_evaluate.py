"""The evaluation pipeline's batch entry point."""

import math
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.evaluate import Evaluator
from cudaperf_env.tasks import load_task

TASK = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")


def test_evaluate_many_judges_a_group_in_order_like_one_by_one():
    good = TASK.implementation("naive").source
    wrong = good.replace("(n + 255) / 256", "n / 256")
    actions = [good, "no code here", wrong, TASK.implementation("grid_stride").source]
    evaluator = Evaluator(CpuBackend(timeout_s=5.0))
    together = [e.status for e in evaluator.evaluate_many(TASK, actions, seed=3, max_workers=2)]
    alone = [evaluator.evaluate(TASK, a, seed=3).status for a in actions]
    assert together == alone == ["ok", "format_error", "wrong_answer", "ok"]


def test_speedup_over_the_c_reference_uses_configurations_where_both_times_are_known():
    from cudaperf_env.evaluate import speedup_over

    assert speedup_over([8.0, 2.0], [2.0, 2.0]) == pytest.approx(2.0)
    assert speedup_over([8.0, math.nan], [2.0, 1.0]) == pytest.approx(4.0)
    assert math.isnan(speedup_over([math.nan], [1.0])) and math.isnan(speedup_over([], []))
