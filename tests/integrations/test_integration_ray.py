"""The Ray evaluator pool on a small local cluster (CPU backend): verdicts as in-process, dead actors, timeouts."""

import threading
import time

import pytest
from tiny_models import SAXPY

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'cudaperf-env[ray]'")

from cudaperf_env.integrations.ray import EvaluatorPool  # noqa: E402
from cudaperf_env.turn import Grader  # noqa: E402

pytestmark = pytest.mark.slow

SPIN = "volatile int spin = 1; while (spin) {}"


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    cache = str(tmp_path_factory.mktemp("ray-cache"))
    pool = EvaluatorPool("cpu", num_actors=2, concurrency=2, timeout_s=120, cpus_per_actor=1, cache_root=cache,
                         backend_options={"timeout_s": 30})  # fmt: skip
    yield pool
    pool.close()
    ray.shutdown()


def replies(task):
    naive = task.implementation("naive").source
    broken = naive.replace("blockIdx.x * blockDim.x", "blockIdx.x")
    return [f"```cuda\n{naive}```", f"```cuda\n{broken}```", "no code at all"]


def spin_reply(task):
    naive = task.implementation("naive").source
    head, sep, tail = naive.partition("__global__")
    body_start = tail.index("{") + 1
    return f"```cuda\n{head}{sep}{tail[:body_start]} {SPIN} {tail[body_start:]}```"


def test_pool_verdicts_match_the_in_process_evaluator(pool, saxpy):
    assert len(pool) == 2 and pool.backend.name == "cpu" and not pool.measures_time
    group = replies(saxpy)[:3]
    remote = pool.evaluate_many(saxpy, group, seed=1)
    local = Grader.on("cpu").evaluator.evaluate_many(saxpy, group, seed=1)
    assert [str(e.status) for e in remote] == [str(e.status) for e in local] == ["ok", "wrong_answer", "format_error"]
    assert remote[0].structure is not None and remote[0].structure.score == pytest.approx(local[0].structure.score)
    turns = pool.grader().grade_many(saxpy, group, seed=1)
    assert turns[0].reward.total > 1.0 > turns[1].reward.total > turns[2].reward.total


def test_trl_reward_function_grades_through_the_pool(pool, saxpy):
    from cudaperf_env.integrations.grading import BatchGrader

    turns = BatchGrader(pool=pool).grade([SAXPY, None, SAXPY], replies(saxpy)[:3], seed=0)
    assert turns[1] is None and turns[0].correct and turns[2].status == "format_error"


def test_a_dead_actor_costs_its_submission_a_runtime_error_and_is_restarted(pool, saxpy):
    before = pool.actor_pids()
    results = {}
    worker = threading.Thread(target=lambda: results.update(out=pool.evaluate_many(saxpy, [spin_reply(saxpy)])))
    worker.start()
    time.sleep(8)  # the spinning kernel is running on one actor
    busy = max(range(len(pool)), key=lambda i: pool._in_flight[i])
    ray.kill(pool.actors[busy], no_restart=False)
    worker.join(timeout=120)
    assert not worker.is_alive()
    (verdict,) = results["out"]
    assert verdict.status == "runtime_error" and "actor" in verdict.message, verdict.message
    after = pool.actor_pids()  # waits for the restarted actor
    assert after[busy] != before[busy] and after[1 - busy] == before[1 - busy]
    assert pool.evaluate(saxpy, replies(saxpy)[0]).status == "ok"


def test_a_submission_past_the_timeout_is_a_timeout_verdict_and_the_pool_goes_on(pool, saxpy):
    pool.timeout_s = 6
    try:
        started = time.monotonic()
        (verdict,) = pool.evaluate_many(saxpy, [spin_reply(saxpy)])
        assert verdict.status == "timeout" and time.monotonic() - started < 30
    finally:
        pool.timeout_s = 120
    assert pool.evaluate(saxpy, replies(saxpy)[0]).status == "ok"


def test_agent_rollouts_grade_through_the_pool_and_stages_can_be_left_out(pool, saxpy):
    import math

    from agents.policies import ScriptedPolicy
    from agents.rollout import RolloutConfig, rollouts

    group = replies(saxpy)
    records = rollouts(ScriptedPolicy(group), [saxpy], pool, RolloutConfig(turns=1, group=3))  # each reply
    assert [r.status for r in records] == ["ok", "wrong_answer", "format_error"]  # submitted as it was written
    assert str(pool.submit(saxpy, group[1], seed=0).result(timeout=120).status) == "wrong_answer"
    assert math.isfinite(pool.evaluate(saxpy, group[0]).ranker_score)
    unranked = EvaluatorPool("cpu", num_actors=1, concurrency=1, timeout_s=120, skip_stages=("rank",),
                             cpus_per_actor=0, backend_options={"timeout_s": 30})  # fmt: skip  (the 2 CPUs are taken)
    try:
        e = unranked.evaluate(saxpy, group[0])
        assert str(e.status) == "ok" and math.isnan(e.ranker_score)
    finally:
        unranked.close()


def test_grading_inputs_are_made_ahead_on_every_actor(pool, saxpy):
    assert pool.prepare([(saxpy, 3)]).result(timeout=120) is None  # started on both actors, in the background
    assert str(pool.evaluate(saxpy, replies(saxpy)[0], seed=3).status) == "ok"
