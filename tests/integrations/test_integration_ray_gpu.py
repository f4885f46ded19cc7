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


def test_labelling_on_the_gpus_of_a_ray_cluster_writes_one_stream(tmp_path):
    from cudaperf_env.datagen.label import load_label_tasks
    from cudaperf_env.datagen.label_ray import label_tasks
    from cudaperf_env.dataset.gpu_labels import read_stream

    tasks = [t for t in load_label_tasks("starter") if t.id in ("c2cuda/saxpy_f32", "c2cuda/clamp_i32")]
    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        records, failed = label_tasks(tasks, tmp_path / "labels.jsonl", chunk=1, cache_root=str(tmp_path))
    finally:
        ray.shutdown()
    assert not failed and sorted(r["task"] for r in records) == sorted(t.id for t in tasks)
    assert all(not r["error"] and r["configs"] for r in records), [r["error"] for r in records]
    assert set(read_stream([tmp_path / "labels.jsonl"])) == {t.id for t in tasks}
