"""The vLLM policy's translation to and from vLLM's types (vLLM itself needs a GPU and is not installed here).

The shapes are vLLM's: ``SamplingParams`` fields as in ``vllm/sampling_params.py``
(``n``, ``temperature``, ``top_p``, ``top_k`` with 0 meaning off, ``seed``,
``stop``, ``max_tokens``, ``logprobs`` = extra top candidates beyond the sampled
token), ``RequestOutput.outputs`` of ``CompletionOutput`` (``index``, ``text``,
``token_ids``, ``logprobs``: per token a ``{token_id: Logprob(logprob=...)}``
mapping, ``finish_reason``) as in ``vllm/outputs.py``.
"""

from types import SimpleNamespace

import pytest

from agents.errors import AgentError, MissingDependencyError
from agents.policies.base import Sampling
from agents.policies.vllm_policy import VLLMPolicy, generations_of, sampling_params_kwargs

# SamplingParams' user-facing fields (vllm/sampling_params.py, SamplingParams.from_optional)
SAMPLING_PARAMS_FIELDS = {
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p", "top_k", "min_p",
    "seed", "stop", "stop_token_ids", "bad_words", "include_stop_str_in_output", "ignore_eos", "max_tokens",
    "min_tokens", "logprobs", "prompt_logprobs", "detokenize", "skip_special_tokens", "logit_bias", "allowed_token_ids",
}  # fmt: skip


def test_sampling_translates_to_real_sampling_params_fields():
    kwargs = sampling_params_kwargs(Sampling(temperature=0.8, top_p=0.9, top_k=20, max_tokens=300, seed=5,
                                             stop=("</s>",), logprobs=True, repetition_penalty=1.1), n=8)  # fmt: skip
    assert kwargs == {"n": 8, "temperature": 0.8, "top_p": 0.9, "top_k": 20, "max_tokens": 300, "seed": 5,
                      "stop": ["</s>"], "logprobs": 0, "repetition_penalty": 1.1}  # fmt: skip
    assert set(kwargs) <= SAMPLING_PARAMS_FIELDS


def test_source_tokens_only_becomes_allowed_token_ids():
    kwargs = sampling_params_kwargs(Sampling(source_tokens_only=True), n=2, source_ids=[3, 5, 8])
    assert kwargs["allowed_token_ids"] == [3, 5, 8] and set(kwargs) <= SAMPLING_PARAMS_FIELDS
    assert "allowed_token_ids" not in sampling_params_kwargs(Sampling(), n=2, source_ids=[3, 5, 8])
    with pytest.raises(ValueError, match="source token ids"):
        sampling_params_kwargs(Sampling(source_tokens_only=True), n=2)


def test_greedy_sampling_turns_off_nucleus_and_top_k():
    kwargs = sampling_params_kwargs(Sampling(temperature=0.0, top_k=20), n=1)
    assert kwargs["temperature"] == 0.0 and kwargs["top_p"] == 1.0 and "top_k" not in kwargs
    assert "logprobs" not in kwargs and "stop" not in kwargs


def test_request_outputs_become_generations_in_index_order():
    def logprob(x):
        return SimpleNamespace(logprob=x, rank=1, decoded_token="t")

    outputs = [
        SimpleNamespace(index=1, text="second", token_ids=[7, 8], cumulative_logprob=-3.0,
                        logprobs=[{7: logprob(-1.0), 3: logprob(-2.0)}, {8: logprob(-2.0)}], finish_reason="length"),
        SimpleNamespace(index=0, text="first", token_ids=[5], cumulative_logprob=-0.1, logprobs=None,
                        finish_reason="stop"),
    ]  # fmt: skip
    request = SimpleNamespace(request_id="0", prompt=None, prompt_token_ids=[1, 2, 3], outputs=outputs, finished=True)
    first, second = generations_of(request)
    assert (first.text, first.token_ids, first.logprobs, first.finish_reason) == ("first", (5,), (), "stop")
    assert second.token_ids == (7, 8) and second.logprobs == (-1.0, -2.0) and second.prompt_tokens == 3


def test_building_the_policy_without_vllm_says_what_to_install(tmp_path):
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match=r"pip install 'cudaperf-env\[vllm\]'"):
            VLLMPolicy(tmp_path)
    else:  # pragma: no cover - a GPU machine
        pytest.skip("vllm is installed: the real engine is tested by the gpu-marked test")


def test_a_lora_adapter_in_float32_is_refused_before_an_engine_starts(tmp_path):
    """vLLM's LoRA kernels assert half-precision weights (found on an H100, 2026-12-07): say so at once."""
    with pytest.raises(AgentError, match="float16 or bfloat16"):
        VLLMPolicy(tmp_path, adapter=tmp_path / "adapter", dtype="float32")
