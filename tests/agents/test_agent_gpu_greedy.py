"""On a GPU: the vLLM policy and the transformers policy give the same greedy reply for the same prompt.

Run on the GPU machine, one test per process (one vLLM engine each):
``pytest -m gpu tests/agents/test_agent_gpu_greedy.py -k NAME`` (needs vllm and the embedded model,
or ``CUDAPERF_AGENT_MODEL=/path/to/model``).
"""

import os

import pytest

pytestmark = pytest.mark.gpu

GREEDY_TOKENS = 96


@pytest.fixture
def model(tmp_path):
    """The embedded model (or ``$CUDAPERF_AGENT_MODEL``) as a plain transformers directory, which both load."""
    pytest.importorskip("vllm", reason="needs vLLM: pip install 'cudaperf-env[vllm]'")
    from agents.model import default_model_path, export_hf_model

    return export_hf_model(os.environ.get("CUDAPERF_AGENT_MODEL") or default_model_path(), tmp_path / "hf")


def saxpy_messages():
    """The saxpy task's first-turn conversation."""
    from agents.context import SYSTEM_PROMPT
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import load_tasks

    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_prompt(load_tasks()["c2cuda/saxpy_f32"])}]  # fmt: skip


def greedy_reply(policy):
    """``policy``'s greedy reply to the saxpy task's first-turn prompt."""
    from agents.policies.base import Sampling

    [[reply]] = policy.generate([saxpy_messages()], 1, Sampling(temperature=0.0, max_tokens=GREEDY_TOKENS,
                                                        stop_after_code_block=False))  # fmt: skip
    return reply


def test_vllm_and_transformers_agree_on_greedy_replies(model):
    from agents.policies.transformers_policy import TransformersPolicy
    from agents.policies.vllm_policy import VLLMPolicy

    hf = greedy_reply(TransformersPolicy(model, device="cuda", dtype="float32"))
    vl = greedy_reply(VLLMPolicy(model, dtype="float32", gpu_memory_utilization=0.3, enforce_eager=True))
    assert hf.text == vl.text
    assert hf.token_ids == vl.token_ids[: len(hf.token_ids)]


def test_vllm_serves_the_shipped_lora_adapter_as_transformers_applies_it(model):
    """The vLLM policy with ``adapter=`` (a ``LoRARequest``, unmerged, bfloat16: vLLM's LoRA kernels
    take no float32) against transformers with the adapter merged (float32): fed vLLM's greedy reply,
    transformers' own greedy choice agrees with nearly every token (bfloat16 flips only near-ties),
    and agrees less without the adapter, so the adapter vLLM applied is the one transformers applies."""
    from agents.model import default_adapter_path
    from agents.policies.transformers_policy import TransformersPolicy
    from agents.policies.vllm_policy import VLLMPolicy

    adapter = default_adapter_path()
    engine = VLLMPolicy(model, adapter=adapter, max_lora_rank=8, dtype="bfloat16", gpu_memory_utilization=0.3,
                        enforce_eager=True)  # fmt: skip
    reply = greedy_reply(engine).token_ids
    merged = greedy_agreement(TransformersPolicy(model, adapter=adapter, device="cuda", dtype="float32"), reply)
    base = greedy_agreement(TransformersPolicy(model, device="cuda", dtype="float32"), reply)
    assert merged >= 0.9 and merged > base, (merged, base)


def greedy_agreement(policy, reply):
    """The fraction of ``reply``'s tokens that ``policy``'s model, fed the reply so far, would pick greedily."""
    import torch

    prompt = policy._encode(saxpy_messages())
    ids = torch.tensor([prompt + list(reply)], device=policy.model.device)
    with torch.no_grad():
        picks = policy.model(ids).logits[0, len(prompt) - 1 : -1].argmax(-1).tolist()
    return sum(a == b for a, b in zip(picks, reply, strict=True)) / len(reply)
