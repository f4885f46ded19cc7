"""verifiers (v1): loads through verifiers' loader, plays multi-turn, and its rubric sums to the score."""

import asyncio
import contextlib
import math

import pytest
from tiny_models import SAXPY

vf = pytest.importorskip("verifiers.v1", reason="needs verifiers: pip install 'cudaperf-env[verifiers]'")

from verifiers.v1.types import AssistantMessage  # noqa: E402

from cudaperf_env.integrations import verifiers as cp_vf  # noqa: E402
from cudaperf_env.reward import PRESET_TERMS, RewardConfig  # noqa: E402
from cudaperf_env.turn import Grader  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cpu_grading():
    cp_vf.configure(grader=Grader.on("cpu"))
    yield
    cp_vf.configure()


def test_loads_through_verifiers_own_loader_by_taskset_id():
    config = cp_vf.CudaPerfEnvConfig(taskset={"id": "cudaperf-c2cuda", "split": "validation", "limit": 2})
    env = vf.load_environment(config)
    assert isinstance(env, cp_vf.CudaPerfEnv)
    tasks = list(env.taskset)
    assert len(tasks) == 2 and all(t.data.task_id.startswith("c2cuda/") and t.data.prompt for t in tasks)


def test_rubric_has_every_reward_term_with_the_preset_weight():
    env = cp_vf.load_environment(task_ids=[SAXPY])
    (task,) = list(env.taskset)
    weights = {fn.__name__: fn._vf_weight for fn in task.hooks("reward")}
    config = RewardConfig()
    assert set(weights) == set(PRESET_TERMS["cudaperf"]) - {"previous"}
    assert weights == {"format": config.format_penalty, "compile": config.compile_weight,
                       "correct": config.correct_weight, "speedup": config.speedup_weight,
                       "structure": config.structure_weight, "ranker": config.ranker_weight}  # fmt: skip


class ScriptedSeat:
    """An agent seat replaying fixed replies through the Interaction interface the env's run() uses."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.heard = []

    @contextlib.asynccontextmanager
    async def interaction(self, task):
        seat = self

        class Interaction:
            trace = vf.Trace.model_construct(info={}, rewards={}, metrics={})

            async def turn(self, message=None):
                seat.heard.append(message)
                if not seat.replies:
                    return vf.Segment(messages=[], terminated=True)
                return vf.Segment(messages=[AssistantMessage(content=seat.replies.pop(0))])

        yield Interaction()


def test_multi_turn_rollout_feeds_back_and_the_weighted_rubric_is_the_final_score(saxpy):
    env = cp_vf.load_environment(task_ids=[SAXPY], max_turns=3)
    (task,) = list(env.taskset)
    naive = saxpy.implementation("naive").source
    seat = ScriptedSeat([f"```cuda\n{naive.replace('blockIdx.x * blockDim.x', 'blockIdx.x')}```",
                         f"```cuda\n{naive}```", "unused"])  # fmt: skip
    agents = type("Agents", (), {"agent": seat})()
    trace = None

    async def play():
        nonlocal trace
        original = seat.interaction

        @contextlib.asynccontextmanager
        async def keep(task):
            nonlocal trace
            async with original(task) as interaction:
                trace = interaction.trace
                yield interaction

        seat.interaction = keep
        await env.run(task, agents)
        await task.score(trace)

    asyncio.run(play())
    assert seat.heard[0] is None and "feedback" in seat.heard[1].lower()  # the model opens; feedback comes back
    assert len(seat.heard) == 2  # correct on the CPU backend: the rollout ends there
    record = trace.info["cudaperf"]
    assert record["status"] == "ok" and record["turn"] == 2
    assert trace.rewards["correct"].score == 1.0 and trace.rewards["format"].score == 0.0
    assert math.isclose(trace.reward, record["score"], rel_tol=1e-9) and trace.reward > 1.0
