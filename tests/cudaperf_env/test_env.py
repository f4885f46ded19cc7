"""The environment end to end on the CPU backend: API conformance, episodes, hostile input."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import cudaperf_env  # noqa: F401
from cudaperf_env.backends.cpu.backend import CpuBackend
from cudaperf_env.env import CudaPerfEnv

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasks"
SAXPY = "c2cuda/test_saxpy"


def fence(code: str) -> str:
    return f"Here is my kernel.\n```cuda\n{code}\n```\n"


def saxpy_source(body: str = "if (i < n) y[i] = a * x[i] + y[i];", grid: str = "(n + 255) / 256") -> str:
    return (
        "__global__ void k(int n, float a, const float* x, float* y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"  {body}\n}}\n"
        'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
        f"  k<<<{grid}, 256>>>(n, a, x, y);\n}}\n"
    )


@pytest.fixture(scope="module")
def env():
    e = CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(timeout_s=3.0), max_turns=3)
    yield e
    e.close()


def step_on(env, action: str, task_id: str = SAXPY):
    env.reset(seed=0, options={"task_id": task_id})
    return env.step(action)


@pytest.mark.parametrize("env_id", cudaperf_env.ENV_IDS)
def test_registered_ids_make_and_pass_the_env_checker(env_id):
    env = gym.make(env_id, backend="cpu")
    check_env(env.unwrapped, skip_render_check=False)
    assert env.spec.nondeterministic
    env.close()
    env2 = gym.make(f"cudaperf_env:{env_id}", backend="cpu")
    assert isinstance(env2.unwrapped, CudaPerfEnv)


def test_v0_ends_at_the_first_correct_reply_and_v1_decides_by_the_backend():
    assert gym.make("CudaPerf-C2CUDA-v0", backend="cpu").unwrapped.stop_on_correct
    assert gym.make("CudaPerf-C2CUDA-v1", backend="cpu").unwrapped.stop_on_correct  # nothing timed: stop
    assert not CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(), stop_on_correct=False).stop_on_correct


def test_refining_runs_to_max_turns_and_detours_do_not_pay():
    env = CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(timeout_s=3.0), max_turns=3, stop_on_correct=False)
    env.reset(seed=0, options={"task_id": SAXPY})
    wrong, right = fence(saxpy_source(grid="n / 256")), fence(saxpy_source())
    steps = [env.step(action) for action in (wrong, right, right)]
    assert [s[2] for s in steps] == [False, False, False] and steps[-1][3]  # truncated, never terminated
    rewards = [s[1] for s in steps]
    assert rewards[2] == pytest.approx(0.0)  # the same level again earns nothing
    assert sum(rewards) == pytest.approx(steps[-1][4]["score"])  # the return is the last score
    assert steps[1][4]["reward/previous"] == pytest.approx(-steps[0][4]["score"])


def test_target_speedup_without_timing_ends_on_correct():
    env = CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(timeout_s=3.0), target_speedup=2.0)
    env.reset(seed=0, options={"task_id": SAXPY})
    assert env.step(fence(saxpy_source()))[2]


def test_a_task_id_option_stays_pinned_through_autoresets():
    envs = gym.vector.SyncVectorEnv([lambda: CudaPerfEnv(task_dir=FIXTURES, backend=CpuBackend(), max_turns=1)] * 2)
    _, info = envs.reset(seed=0, options={"task_id": "c2cuda/test_sum"})
    assert list(info["task_id"]) == ["c2cuda/test_sum"] * 2
    for _ in range(3):  # every step truncates (max_turns=1), the next one autoresets
        envs.step(["no code"] * 2)
    assert [e.task.id for e in envs.envs] == ["c2cuda/test_sum"] * 2
    single = envs.envs[0]
    single.reset(options={"task_id": None})  # unpinned: drawn again
    assert single._pinned is None
    envs.close()


def test_reset_is_seeded_and_task_can_be_chosen(env):
    obs1, info1 = env.reset(seed=123)
    obs2, info2 = env.reset(seed=123)
    assert obs1 == obs2 and info1["task_id"] == info2["task_id"]
    obs, info = env.reset(options={"task_id": "c2cuda/test_sum"})
    assert info["task_id"] == "c2cuda/test_sum" and 'extern "C" void sum(int n' in obs
    assert env.observation_space.contains(obs)


def test_correct_answer_terminates_with_reward_terms(env):
    obs, reward, terminated, truncated, info = step_on(env, fence(saxpy_source()))
    assert (info["status"], info["correct"], terminated, truncated) == ("ok", True, True, False)
    assert reward == pytest.approx(sum(v for k, v in info.items() if k.startswith("reward/"))) and reward > 1.1
    assert 0 < info["structural_score"] <= 1
    assert info["reward/structure"] == pytest.approx(0.5 * info["structural_score"])
    assert info["reward/previous"] == 0.0  # first turn: no previous score to subtract
    assert np.isnan(info["speedup"]) and info["backend"] == "cpu"
    assert "[ok] Correct on all 4 configurations" in obs
    assert all(np.isscalar(v) for v in info.values())


def test_wrong_answers_run_to_max_turns(env):
    env.reset(seed=1, options={"task_id": SAXPY})
    wrong = fence(saxpy_source(grid="n / 256"))
    for turn in range(1, 4):
        obs, reward, terminated, truncated, info = env.step(wrong)
        assert info["status"] == "wrong_answer" and info["turn"] == turn
        assert not terminated and truncated == (turn == 3)
    assert "first mismatch at flat index 768" in obs and "NaN" not in obs.split("first mismatch")[0][-5:]
    with pytest.raises(gym.error.ResetNeeded):
        env.step(wrong)


@pytest.mark.parametrize(
    ("action", "status", "phrase"),
    [
        ("", "format_error", "empty"),
        ("I think you should use shared memory here.", "format_error", "no code found"),
        (fence(saxpy_source() + "// " + "x" * 1_000_000), "format_error", "limit"),
        (fence(saxpy_source()).replace("k<<<", "k\x00<<<"), "format_error", "line"),
        (fence("__global__ void k(float* y) { y[0] = 1; }"), "rejected", "saxpy"),
        (fence(saxpy_source().replace("float a, const float* x", "double a, const float* x")),
         "compile_error", "saxpy"),
        (fence('#include <unistd.h>\n' + saxpy_source()), "rejected", "unistd.h"),
        (fence(saxpy_source(body="if (i < n) y[i] = *(float*)0;")), "runtime_error", "illegal address"),
        (fence(saxpy_source(body="while (true) {}")), "timeout", "3 s"),
        (fence(saxpy_source(body="if (i <= n) y[i] = a * x[i] + y[i];")), "runtime_error", "past the end of `y`"),
        (fence(saxpy_source(body="if (i < n) { y[i] = a * x[i] + y[i]; ((float*)x)[i] = 0; }")),
         "wrong_answer", "modified the input `x`"),
    ],
    ids=["empty", "prose", "1MB", "nul-byte", "no-entry", "wrong-signature", "forbidden-include",
         "segfault", "infinite-loop", "write-past-end", "input-mutation"],
)
def test_hostile_input_gets_a_status_and_the_env_keeps_working(env, action, status, phrase):
    obs, reward, terminated, truncated, info = step_on(env, action)
    assert info["status"] == status, obs
    assert phrase in obs
    assert not info["correct"] and not terminated
    assert env.observation_space.contains(obs)
    # the next episode is unaffected
    obs, reward, terminated, truncated, info = step_on(env, fence(saxpy_source()))
    assert info["status"] == "ok"


def test_split_selects_the_generated_dataset():
    env = CudaPerfEnv(split="train", backend=CpuBackend(timeout_s=3.0))
    _, info = env.reset(seed=0)
    assert info["task_id"] in env.tasks and len(env.tasks) > 100
    with pytest.raises(ValueError, match="split"):
        CudaPerfEnv(split="nope", backend=CpuBackend())


class TimingCpuBackend:
    """The CPU backend, claiming to time (as the GPU's does); no reply here gets as far as a timing."""

    def __init__(self) -> None:
        self.inner = CpuBackend(timeout_s=3.0)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    @property
    def capabilities(self):
        from dataclasses import replace

        return replace(self.inner.capabilities, timer=self)


@pytest.mark.parametrize("timed", [False, True])
def test_on_a_timing_backend_reset_has_the_first_replys_grading_inputs_made_ahead(monkeypatch, timed):
    env = CudaPerfEnv(task_dir=FIXTURES, backend=TimingCpuBackend() if timed else CpuBackend(timeout_s=3.0),
                      max_turns=2)  # fmt: skip
    evaluator, prepared, graded = env.grader.evaluator, [], []
    evaluate = evaluator.evaluate
    monkeypatch.setattr(evaluator, "prepare", lambda jobs: prepared.extend((t.id, s) for t, s in jobs))
    monkeypatch.setattr(evaluator, "evaluate", lambda task, action, seed=0: graded.append((task.id, seed)) or
                        evaluate(task, action, seed))  # fmt: skip
    env.reset(seed=4, options={"task_id": SAXPY})
    env.step("no code at all")
    assert prepared == (graded if timed else [])  # the seed of the first step's grading; nothing where untimed
    env.close()
