"""The coder-and-reviewer AEC game: PettingZoo's own API and seed tests, advice reaching the coder, rewards."""

import pytest
from tiny_models import SAXPY

pytest.importorskip("pettingzoo", reason="needs the rl extra: pip install 'cudaperf-env[rl]'")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from cudaperf_env.integrations.pettingzoo import env  # noqa: E402


def test_passes_pettingzoo_api_test():
    api_test(env(backend="cpu", task_ids=[SAXPY], max_rounds=2), num_cycles=100)


def test_passes_pettingzoo_seed_test():
    seed_test(lambda: env(backend="cpu", task_ids=[SAXPY, "c2cuda/clamp_i32"], max_rounds=2), num_cycles=20)


def test_advice_reaches_the_coder_and_the_reviewer_is_paid_for_the_next_submission(saxpy):
    game = env(backend="cpu", task_ids=[SAXPY], max_rounds=3, render_mode="ansi")
    game.reset(seed=0)
    assert game.agent_selection == "coder" and "saxpy" in game.observe_text("coder").lower()
    naive = saxpy.implementation("naive").source
    game.step(f"```cuda\n{naive.replace('blockIdx.x * blockDim.x', 'blockIdx.x')}```")
    assert game.agent_selection == "reviewer" and game.rewards["coder"] > 0 and game.rewards["reviewer"] == 0
    assert "The coder submitted" in game.observe_text("reviewer") and game.infos["coder"]["status"] == "wrong_answer"
    game.step("Index with blockIdx.x * blockDim.x + threadIdx.x.")
    assert "Index with blockIdx.x * blockDim.x" in game.observe_text("coder")
    game.step(f"```cuda\n{naive}```")
    assert game.rewards["reviewer"] == game.rewards["coder"] > 0  # the fix after the advice earned both
    assert all(game.terminations.values())  # correct on the CPU backend ends the episode
    observation, reward, terminated, _, _ = game.last()
    assert terminated and game.agent_selection == "reviewer"
    game.step(None)
    game.step(None)
    assert game.agents == []
    game.close()


def test_bad_actions_are_statuses_not_exceptions():
    game = env(backend="cpu", task_ids=[SAXPY], max_rounds=1)
    game.reset(seed=1)
    game.step(12345)
    assert game.infos["coder"]["status"] == "format_error" and game.rewards["coder"] < 0
    assert all(game.truncations.values())


def test_observation_arrays_decode_to_the_text():
    from cudaperf_env.integrations.pettingzoo import decode, encode

    game = env(backend="cpu", task_ids=[SAXPY])
    game.reset(seed=0)
    observation = game.observe("coder")
    assert game.observation_space("coder").contains(observation)
    assert decode(observation) == game.observe_text("coder") and decode(encode("")) == ""
