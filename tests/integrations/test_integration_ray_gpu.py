"""The Ray pool on GPUs: one actor per GPU, each timing on its own device (run on a GPU machine)."""

import math

import pytest
from tiny_models import SAXPY

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'cudaperf-env[ray]'")

pytestmark = pytest.mark.gpu


def test_gpu_pool_has_one_actor_per_gpu_and_times_on_it():
    from cudaperf_env.integrations.grading import resolve_task
    from cudaperf_env.integrations.ray import EvaluatorPool

    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        pool = EvaluatorPool("cuda", concurrency=4)
        assert len(pool) == int(ray.cluster_resources()["GPU"]) and pool.measures_time
        task = resolve_task(SAXPY)
        naive = task.implementation("naive").source
        group = [f"```cuda\n// {k}\n{naive}```" for k in range(2 * len(pool))]
        evaluations = pool.evaluate_many(task, group, seed=1)
        assert all(e.status == "ok" and math.isfinite(e.speedup) for e in evaluations), evaluations
        pool.close()
    finally:
        ray.shutdown()
