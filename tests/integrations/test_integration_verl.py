"""verl: compute_score through verl's own reward managers (naive and batch), and the multi-turn tool."""

import asyncio

import numpy as np
import pytest
from tiny_models import SAXPY, build_byte_tokenizer

pytest.importorskip("verl", reason="needs verl: pip install 'cudaperf-env[verl]' (see pyproject for the pins)")

from cudaperf_env.integrations import verl as cp_verl  # noqa: E402
from cudaperf_env.turn import Grader  # noqa: E402

pytestmark = pytest.mark.slow
CHATML = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


@pytest.fixture(scope="module", autouse=True)
def cpu_grading():
    cp_verl.configure(grader=Grader.on("cpu"))
    yield
    cp_verl.configure()


def batch_of(tokenizer, responses, task_ids):
    """A DataProto as verl's trainer hands it to a reward manager: left-padded prompts, right-padded responses."""
    import torch
    from verl import DataProto

    prompts = [tokenizer("write a kernel", add_special_tokens=False)["input_ids"] for _ in responses]
    answers = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in responses]
    p_len, r_len = max(map(len, prompts)), max(map(len, answers))
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([a + [pad] * (r_len - len(a)) for a in answers])
    mask = torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) + [1] * len(a) + [0] * (r_len - len(a))
                         for p, a in zip(prompts, answers, strict=True)])  # fmt: skip
    rows = cp_verl.build_rows(task_ids)
    non_tensors = {
        "data_source": np.array([r["data_source"] for r in rows], dtype=object),
        "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
        "extra_info": np.array([r["extra_info"] for r in rows], dtype=object),
    }
    tensors = {"prompts": prompt_ids, "responses": response_ids, "attention_mask": mask,
               "input_ids": torch.cat([prompt_ids, response_ids], dim=1)}  # fmt: skip
    return DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)


def responses(task):
    naive = task.implementation("naive").source
    return [f"```cuda\n{naive}```", f"```cuda\n{naive.replace('256', '0')}```", "I cannot."]


@pytest.mark.parametrize("manager", ["naive", "batch"])
def test_reward_manager_scores_with_our_function(manager, saxpy):
    from verl.workers.reward_manager.batch import BatchRewardManager
    from verl.workers.reward_manager.naive import NaiveRewardManager

    tokenizer = build_byte_tokenizer(CHATML)
    data = batch_of(tokenizer, responses(saxpy), [SAXPY] * 3)
    if manager == "naive":
        rm = NaiveRewardManager(tokenizer, num_examine=0, compute_score=cp_verl.compute_score)
    else:
        rm = BatchRewardManager(tokenizer, num_examine=0, compute_score=cp_verl.compute_score_batch)
    out = rm(data, return_dict=True)
    rewards = out["reward_tensor"].sum(dim=1).tolist()  # one non-zero entry: the last response token
    assert rewards[0] > 1.0 > rewards[1] > rewards[2], rewards
    extra = out["reward_extra_info"]
    assert list(extra["correct"]) == [1.0, 0.0, 0.0] and "reward/compile" in extra


def test_submit_kernel_tool_refines_over_a_trajectory(saxpy):
    from verl.tools.base_tool import BaseTool

    class AgentData:  # what verl's tool agent loop passes: per-trajectory extra_fields
        extra_fields: dict = {}

    tool = cp_verl.SubmitKernelTool()
    assert isinstance(tool, BaseTool) and tool.name == "submit_kernel"
    data = AgentData()
    naive = saxpy.implementation("naive").source

    async def call(source):
        instance, _ = await tool.create(create_kwargs={"task_id": SAXPY})
        try:
            return await tool.execute(instance, {"source": source}, agent_data=data)
        finally:
            await tool.release(instance)

    first, r1, _ = asyncio.run(call(naive.replace("blockIdx.x * blockDim.x", "blockIdx.x")))
    second, r2, metrics = asyncio.run(call(naive))
    assert r1 > 0 and r2 > 0 and metrics["correct"] == 1.0 and "correct" in second.text.lower()
    assert r1 + r2 == pytest.approx(data.extra_fields["cudaperf_turns"][-1].reward.score)
    bad, r3, _ = asyncio.run(call(12345))
    assert r3 < 0 and bad.text
