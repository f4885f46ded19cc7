"""GPU labelling on a Ray cluster: chunks spread over one actor per GPU, one stream, dead actors' tasks left over.

The actors here run a stand-in labeller on two GPUs the local cluster declares (the distribution is under
test, not the timing); `test_integration_ray_gpu.py` labels real tasks on a real GPU.
"""

import json
import os

import pytest

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'cudaperf-env[ray]'")

from cudaperf_env.datagen.label_ray import label_tasks  # noqa: E402
from cudaperf_env.tasks import load_tasks  # noqa: E402

pytestmark = pytest.mark.slow

TASKS = sorted(load_tasks(kind="c2cuda").values(), key=lambda t: t.id)[:10]


def stand_in(crash_on: str = ""):
    """A labeller class whose records name the actor's process; ``crash_on`` kills the actor on that task."""

    class StandIn:
        def __init__(self, devices, options, build_jobs=None):
            assert list(devices) == [0] and build_jobs >= 1

        def run(self, tasks, out, deadline):
            if any(t.id == crash_on for t in tasks):
                os._exit(3)
            return [{"task": t.id, "pid": os.getpid(), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"), "error": ""}
                    for t in tasks]

    return StandIn


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_every_task_is_labelled_once_by_the_actors_of_the_gpus_into_one_stream(cluster, tmp_path):
    out = tmp_path / "labels.jsonl"
    out.write_text('{"task": "earlier", "error": ""}\n')
    seen = []
    records, failed = label_tasks(TASKS, out, chunk=3, labeller=stand_in(), progress=seen.append,
                                  cache_root=str(tmp_path))  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert not failed and lines[0]["task"] == "earlier" and lines[1:] == records == seen
    assert sorted(r["task"] for r in records) == sorted(t.id for t in TASKS)
    assert len({r["pid"] for r in records}) == 2 and len({r["gpus"] for r in records}) == 2  # one actor per GPU


def test_a_dead_actors_chunk_is_left_for_the_next_run_and_nothing_hangs(cluster, tmp_path):
    victim = TASKS[4].id
    records, failed = label_tasks(TASKS, tmp_path / "labels.jsonl", chunk=2, labeller=stand_in(victim),
                                  cache_root=str(tmp_path))  # fmt: skip
    assert victim in failed and len(failed) == 2
    assert sorted([r["task"] for r in records] + failed) == sorted(t.id for t in TASKS)


def test_no_chunk_starts_after_the_deadline(cluster, tmp_path):
    records, failed = label_tasks(TASKS, tmp_path / "labels.jsonl", deadline=0.0, labeller=stand_in(),
                                  cache_root=str(tmp_path))  # fmt: skip
    assert records == [] and failed == []
