"""On a GPU: the vLLM policy and the transformers policy give the same greedy reply for the same prompt.

Run on the GPU machine: ``pytest -m gpu tests/agents/test_agent_gpu_greedy.py`` (needs vllm and the
embedded model, or ``CUDAPERF_AGENT_MODEL=/path/to/model``).
"""

import os

import pytest

pytestmark = pytest.mark.gpu


def test_vllm_and_transformers_agree_on_greedy_replies(tmp_path):
    pytest.importorskip("vllm", reason="needs vLLM: pip install 'cudaperf-env[vllm]'")
    from agents.context import SYSTEM_PROMPT
    from agents.model import default_model_path, export_hf_model
    from agents.policies.base import Sampling
    from agents.policies.transformers_policy import TransformersPolicy
    from agents.policies.vllm_policy import VLLMPolicy
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import load_tasks

    model = export_hf_model(os.environ.get("CUDAPERF_AGENT_MODEL") or default_model_path(), tmp_path / "hf")
    task = load_tasks()["c2cuda/saxpy_f32"]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task_prompt(task)}]
    greedy = Sampling(temperature=0.0, max_tokens=96, stop_after_code_block=False)
    [[hf]] = TransformersPolicy(model, device="cuda", dtype="float32").generate([messages], 1, greedy)
    [[vl]] = VLLMPolicy(model, dtype="float32", gpu_memory_utilization=0.3, enforce_eager=True).generate(
        [messages], 1, greedy
    )
    assert hf.text == vl.text
    assert hf.token_ids == vl.token_ids[: len(hf.token_ids)]


def test_vllm_serves_the_shipped_lora_adapter_as_transformers_applies_it(tmp_path):
    """The vLLM policy with ``adapter=`` (a ``LoRARequest``, unmerged) against transformers with the
    adapter merged: the same greedy reply where float32 rounding leaves them equal (the first 32
    tokens), and not the base model's reply, so the adapter was applied."""
    pytest.importorskip("vllm", reason="needs vLLM: pip install 'cudaperf-env[vllm]'")
    from agents.context import SYSTEM_PROMPT
    from agents.model import default_adapter_path, default_model_path, export_hf_model
    from agents.policies.base import Sampling
    from agents.policies.transformers_policy import TransformersPolicy
    from agents.policies.vllm_policy import VLLMPolicy
    from cudaperf_env.prompt import task_prompt
    from cudaperf_env.tasks import load_tasks

    model = export_hf_model(os.environ.get("CUDAPERF_AGENT_MODEL") or default_model_path(), tmp_path / "hf")
    adapter = default_adapter_path()
    task = load_tasks()["c2cuda/saxpy_f32"]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task_prompt(task)}]
    greedy = Sampling(temperature=0.0, max_tokens=96, stop_after_code_block=False)
    [[hf]] = TransformersPolicy(model, adapter=adapter, device="cuda", dtype="float32").generate([messages], 1, greedy)
    engine = VLLMPolicy(model, adapter=adapter, max_lora_rank=8, dtype="float32", gpu_memory_utilization=0.3,
                        enforce_eager=True)  # fmt: skip
    [[vl]] = engine.generate([messages], 1, greedy)
    engine.lora = None  # the same engine without the adapter: the base model's reply
    [[base]] = engine.generate([messages], 1, greedy)
    assert hf.token_ids[:32] == vl.token_ids[:32], (hf.text, vl.text)
    assert vl.token_ids[:32] != base.token_ids[:32], "the adapter changed nothing"
