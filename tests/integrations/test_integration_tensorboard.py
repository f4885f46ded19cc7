"""TensorBoard: every reward term of a real step's info lands in the event file."""

import gymnasium as gym
import pytest
from tiny_models import SAXPY

import cudaperf_env  # noqa: F401
from cudaperf_env.reward import PRESET_TERMS

pytest.importorskip("tensorboard", reason="needs the tensorboard extra: pip install 'cudaperf-env[tensorboard]'")


def test_tensorboard_writer_writes_every_reward_term(saxpy, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from cudaperf_env.integrations.tensorboard import InfoWriter

    env = gym.make("CudaPerf-C2CUDA-v1", backend="cpu", task_ids=[SAXPY])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(f"```cuda\n{saxpy.implementation('naive').source}```")
    writer = InfoWriter(tmp_path)
    written = writer.log(info, step=3, reward=reward)
    writer.close()
    assert "speedup" not in written  # NaN on the CPU backend: not written
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {f"cudaperf/reward/{t}" for t in PRESET_TERMS["cudaperf"]} <= tags
    assert events.Scalars("cudaperf/reward")[0].value == pytest.approx(reward)
    assert events.Scalars("cudaperf/reward/correct")[0].step == 3
    env.close()
