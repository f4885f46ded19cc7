"""vLLM's offline engine (``vllm.LLM``) as a policy, with optional LoRA adapters (GPU).

vLLM is imported only when a policy is built, so this module imports anywhere.
The translation to and from vLLM's types is in small pure functions
(:func:`sampling_params_kwargs`, :func:`generations_of`) that the tests check
against vLLM's real shapes: ``SamplingParams(n, temperature, top_p, top_k,
max_tokens, stop, seed, logprobs, allowed_token_ids)``, ``LLM.chat(messages, sampling_params,
use_tqdm=, lora_request=, add_generation_prompt=)`` returning one
``RequestOutput`` per conversation whose ``outputs`` are ``CompletionOutput``
(``text``, ``token_ids``, ``logprobs``: a list of ``{token_id: Logprob}``,
``finish_reason``), and ``LoRARequest(lora_name, lora_int_id, lora_path)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.errors import AgentError, MissingDependencyError
from agents.model import split_model_path
from agents.policies.base import Generation, Message, Sampling, check_batch
from agents.policies.vocabulary import source_token_ids


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise MissingDependencyError(
            f"the vllm policy needs vLLM on a GPU machine: pip install 'cudaperf-env[vllm]' ({exc})"
        ) from exc
    return vllm


def sampling_params_kwargs(sampling: Sampling, n: int, source_ids: Sequence[int] = ()) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``n`` samples under ``sampling``; ``source_ids``:
    the tokenizer's :func:`~agents.policies.vocabulary.source_token_ids`, the allowed tokens where
    ``sampling.source_tokens_only`` asks for them."""
    kwargs: dict[str, Any] = {
        "n": n,
        "temperature": sampling.temperature,
        "top_p": 1.0 if sampling.greedy else sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": sampling.seed,
    }
    if sampling.top_k > 0 and not sampling.greedy:
        kwargs["top_k"] = sampling.top_k
    if sampling.stop:
        kwargs["stop"] = list(sampling.stop)
    if sampling.repetition_penalty != 1.0:
        kwargs["repetition_penalty"] = sampling.repetition_penalty
    if sampling.logprobs:
        kwargs["logprobs"] = 0  # the sampled token's logprob only
    if sampling.source_tokens_only:
        if not source_ids:
            raise ValueError("source_tokens_only needs the tokenizer's source token ids")
        kwargs["allowed_token_ids"] = list(source_ids)
    return kwargs


def generations_of(request_output: Any) -> list[Generation]:
    """Our generations from one ``vllm.RequestOutput`` (its ``outputs``, in index order)."""
    prompt_tokens = len(getattr(request_output, "prompt_token_ids", None) or [])
    gens = []
    for out in sorted(request_output.outputs, key=lambda o: o.index):
        token_ids = tuple(int(t) for t in out.token_ids)
        logprobs: tuple[float, ...] = ()
        if out.logprobs:
            logprobs = tuple(float(step[t].logprob) for step, t in zip(out.logprobs, token_ids, strict=False))
        gens.append(Generation(out.text, token_ids, logprobs, out.finish_reason or "", prompt_tokens))
    return gens


def _lora_request(adapter: str | Path) -> Any:
    from vllm.lora.request import LoRARequest

    return LoRARequest(lora_name=Path(adapter).name, lora_int_id=1, lora_path=str(adapter))


class VLLMPolicy:
    """Samples replies with ``vllm.LLM``; one engine per process, one GPU by default.

    Args:
        model: A local model directory (or ``.gguf`` file, which vLLM loads with its tokenizer dir).
        adapter: A PEFT LoRA adapter directory served through ``LoRARequest``.
        max_lora_rank: The largest adapter rank the engine reserves room for.
        context_window: ``max_model_len`` of the engine (default: the model's).
        gpu_memory_utilization: Fraction of GPU memory vLLM may take.
        seed: The engine's seed (each call also seeds its own requests).
        dtype: ``auto``, ``bfloat16``, ``float16`` or ``float32``.
        engine_kwargs: Further ``vllm.LLM`` keyword arguments.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        adapter: str | Path | None = None,
        max_lora_rank: int = 64,
        context_window: int | None = None,
        gpu_memory_utilization: float = 0.85,
        seed: int = 0,
        dtype: str = "auto",
        **engine_kwargs: Any,
    ) -> None:
        if adapter is not None and dtype == "float32":  # vLLM's LoRA kernels assert float16 or bfloat16 weights
            raise AgentError("vLLM serves LoRA adapters in float16 or bfloat16: pass dtype='bfloat16' "
                             "(or merge the adapter into a float32 model directory)")  # fmt: skip
        vllm = _import_vllm()
        directory, gguf = split_model_path(model)
        kwargs: dict[str, Any] = dict(seed=seed, dtype=dtype, gpu_memory_utilization=gpu_memory_utilization,
                                      **engine_kwargs)  # fmt: skip
        if context_window:
            kwargs["max_model_len"] = context_window
        if adapter is not None:
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank)
        target = str(directory / gguf) if gguf else str(directory)
        if gguf:
            kwargs.setdefault("tokenizer", str(directory))
        self._vllm = vllm
        self.llm = vllm.LLM(model=target, **kwargs)
        self.lora = _lora_request(adapter) if adapter is not None else None
        self.name = str(model) + (f"+{adapter}" if adapter else "")
        self.context_window = int(self.llm.llm_engine.model_config.max_model_len)
        self._tokenizer = self.llm.get_tokenizer()
        self._source_ids: list[int] = []  # source_token_ids of the tokenizer, on first use

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self._tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True))

    def generate(
        self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling
    ) -> list[list[Generation]]:
        check_batch(messages_batch, n)
        if sampling.source_tokens_only and not self._source_ids:
            self._source_ids = source_token_ids(self._tokenizer)
        params = self._vllm.SamplingParams(**sampling_params_kwargs(sampling, n, self._source_ids))
        outputs = self.llm.chat([list(m) for m in messages_batch], params, use_tqdm=False,
                                lora_request=self.lora, add_generation_prompt=True)  # fmt: skip
        return [generations_of(o) for o in outputs]
