"""Async vector envs (spawned workers, a cold shared cache), flat info for loggers, TensorBoard scalars."""

import math

import gymnasium as gym
import numpy as np
import pytest
from tiny_models import SAXPY

import cudaperf_env  # noqa: F401
from cudaperf_env.integrations.gym_vector import FlattenInfo, flatten_info, info_scalars, make_vec
from cudaperf_env.reward import PRESET_TERMS
from cudaperf_env.status import STATUSES


def _replies(saxpy):
    naive = saxpy.implementation("naive").source
    return np.array([f"```cuda\n{naive}```", f"```cuda\n{naive.replace('blockIdx.x * blockDim.x', 'blockIdx.x')}```"],
                    dtype=object)  # fmt: skip


@pytest.mark.slow
def test_make_vec_async_spawn_workers_grade_on_a_cold_cache(saxpy, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))  # inherited by the spawned workers
    envs = gym.make_vec("CudaPerf-C2CUDA-v1", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"context": "spawn"}, backend="cpu", task_ids=[SAXPY], max_turns=2)  # fmt: skip
    try:
        observations, infos = envs.reset(seed=0)
        assert len(observations) == 2 and list(infos["task_id"]) == [SAXPY, SAXPY]
        _, rewards, terminated, _, infos = envs.step(_replies(saxpy))
        assert list(infos["status"]) == ["ok", "wrong_answer"], infos
        assert rewards[0] > 1.0 > rewards[1] and terminated[0]  # v1 on the CPU ends at the first correct reply
        scalars = info_scalars(infos)
        assert scalars["status/ok"] == 0.5 and scalars["correct"] == 0.5
        assert {f"reward/{t}" for t in PRESET_TERMS["cudaperf"]} <= scalars.keys()
    finally:
        envs.close()


@pytest.mark.slow
def test_make_vec_helper_flattens_every_worker_info_to_fixed_float_keys(saxpy):
    envs = make_vec("CudaPerf-C2CUDA-v1", num_envs=2, flatten=True, backend="cpu", task_ids=[SAXPY])
    try:
        envs.reset(seed=1)
        _, _, _, _, infos = envs.step(_replies(saxpy))
        assert all(isinstance(v, np.ndarray) and v.dtype.kind == "f" for k, v in infos.items() if not k.startswith("_"))
        assert list(infos["status/ok"]) == [1.0, 0.0] and list(infos["status/wrong_answer"]) == [0.0, 1.0]
    finally:
        envs.close()


def test_flatten_info_fixed_keys_one_hot_status_nested_episode():
    info = {"task_id": "x", "status": "compile_error", "turn": 2, "correct": False, "speedup": math.nan,
            "episode": {"r": np.float32(1.5), "l": np.int64(2)}, "reward/compile": 0.0}  # fmt: skip
    flat = flatten_info(info)
    assert "task_id" not in flat and flat["turn"] == 2.0 and flat["correct"] == 0.0 and math.isnan(flat["speedup"])
    assert flat["episode/r"] == 1.5 and flat["episode/l"] == 2.0
    assert {k for k in flat if k.startswith("status/")} == {f"status/{s}" for s in STATUSES}
    assert flat["status/compile_error"] == 1.0 and sum(flat[f"status/{s}"] for s in STATUSES) == 1.0


def test_info_scalars_masks_vector_entries_and_skips_nan():
    info = {"score": np.array([1.0, 3.0, 100.0]), "_score": np.array([True, True, False]),
            "speedup": np.array([math.nan, 2.0, 4.0]), "status": np.array(["ok", "timeout", "ok"], dtype=object),
            "episode": {"r": np.array([0.0, 2.0, 0.0]), "_r": np.array([False, True, False])}}  # fmt: skip
    scalars = info_scalars(info)
    assert scalars["score"] == 2.0 and scalars["speedup"] == 3.0 and scalars["episode/r"] == 2.0
    assert scalars["status/ok"] == pytest.approx(2 / 3) and scalars["status/timeout"] == pytest.approx(1 / 3)


def test_flatten_info_wrapper_on_a_real_env(saxpy):
    env = FlattenInfo(gym.make("CudaPerf-C2CUDA-v1", backend="cpu", task_ids=[SAXPY]))
    _, info = env.reset(seed=0)
    assert all(isinstance(v, float) for v in info.values())
    _, _, _, _, info = env.step("no code here")
    assert info["status/format_error"] == 1.0 and info["reward/format"] < 0
    env.close()
