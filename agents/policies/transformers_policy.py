"""A local transformers model as a policy: chat template, batched seeded sampling, CPU or GPU.

Loads a model directory or a GGUF file (``gguf_file=``; transformers de-quantizes
it to float). Never downloads: ``local_files_only`` is always set.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.card import card_hold
from agents.errors import MissingDependencyError
from agents.model import split_model_path
from agents.policies.base import Generation, Message, OnReply, Sampling, check_batch, stop_at_code_block_end
from agents.policies.vocabulary import source_token_ids

_HINT = "install the agent extra: pip install 'cudaperf-env[agent]'"


def _import_transformers() -> Any:
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(f"the transformers policy needs torch and transformers ({_HINT}): {exc}") from exc
    return torch, transformers


class TransformersPolicy:
    """Samples replies from a local causal LM.

    Args:
        model: A model directory or a ``.gguf`` file (or a loaded ``PreTrainedModel``).
        tokenizer: A loaded tokenizer; default: loaded from ``model``'s path.
        gguf_file: The GGUF file inside the ``model`` directory (inferred from a ``.gguf`` path).
        device: ``cpu``, ``cuda``, ``cuda:1``, or ``auto`` (CUDA when available).
        dtype: ``float32``, ``bfloat16`` or ``auto`` (bfloat16 on CUDA, float32 on CPU).
        context_window: Override the model's ``max_position_embeddings``.
        adapter: A PEFT LoRA adapter directory, merged into the model's weights (no adapter
            matrices in the per-token step: 1.8-2x faster on a GPU, ``benchmarks/gpu_generation.py``).
        name: Written into records (default: the model path).
        threads: CPU threads of torch (process-wide); default: half the cores, at least 1.
            More threads than free cores collapse under OpenMP's spin-waiting: on a shared
            2-core machine the embedded model made 1.9 tokens/s with 2 threads, 10.9 with 1
            (``benchmarks/agent_generation.py``).
        static_cache: Decode with a static KV cache, which transformers compiles with
            ``torch.compile`` on a GPU (7.9 ms against 30 ms per token step for the merged
            embedded model at batch 32 on an H100, after a 35 s first call:
            ``benchmarks/gpu_generation.py``). A compile is paid per distinct shape (the cache is
            sized to prompt width plus ``max_tokens``), so prompts are left-padded to a multiple of
            ``WIDTH_BUCKET`` tokens, and never to less than the widest call so far: a run's
            compiles stop once its longest prompt (its last turn's) has been seen, where buckets
            alone would compile again for every narrower one. The batch is filled to a multiple of
            ``BATCH_BUCKET`` conversations (copies of the last; their replies are dropped).

    ``generate`` takes ``on_reply`` (:data:`~agents.policies.base.OnReply`): each reply is told of
    at the first stop check after it ended (EOS, a stop string or a closed code block), while the
    rest of the batch is still generated, so a caller can grade it meanwhile.

    Attributes:
        timings_lock: The card's lock (``CudaBackend.gpu_lock``) where replies are timed on the card
            this model generates on (:func:`agents.card.share_card_with_timings` sets it): generation
            holds it shared and lets a waiting timing through at each stop check, so no timing runs
            beside the generation. None: generation ignores timings.
    """

    streams_replies = True
    timings_lock: Any = None

    def __init__(
        self,
        model: str | Path | Any,
        tokenizer: Any = None,
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        context_window: int | None = None,
        adapter: str | Path | None = None,
        name: str | None = None,
        threads: int | None = None,
        static_cache: bool = False,
    ) -> None:
        torch, transformers = _import_transformers()
        self._torch = torch
        self.static_cache = static_cache
        self._static_width = 0  # the widest padded prompt so far (static cache)
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        if self.device == "cpu":
            torch.set_num_threads(threads or default_threads())
        if isinstance(model, (str, Path)):
            directory, inferred = split_model_path(model)
            gguf = gguf_file or inferred
            kwargs: dict[str, Any] = {"local_files_only": True, **({"gguf_file": gguf} if gguf else {})}
            self.tokenizer = tokenizer or transformers.AutoTokenizer.from_pretrained(directory, **kwargs)
            torch_dtype = _dtype(torch, dtype, self.device)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=torch_dtype, **kwargs)
            self.name = name or str(model)
        else:
            if tokenizer is None:
                raise ValueError("a loaded model needs its tokenizer: TransformersPolicy(model, tokenizer)")
            self.model, self.tokenizer, self.name = model, tokenizer, name or type(model).__name__
        if adapter is not None:
            self.model = _with_adapter(self.model, adapter)
            self.name += f"+{adapter}"
        self.model.to(self.device).eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.context_window = context_window or int(getattr(self.model.config, "max_position_embeddings", 2048))
        self._source_tokens: Any = None  # the logits' bias of Sampling.source_tokens_only, made on first use

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self._encode(messages))

    def generate(
        self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling, on_reply: OnReply | None = None
    ) -> list[list[Generation]]:
        """``n`` samples per conversation; the same seed and inputs give the same replies."""
        check_batch(messages_batch, n)
        torch = self._torch
        asked = len(messages_batch)
        prompts = [self._encode(m) for m in messages_batch]
        width = max(len(p) for p in prompts)
        if self.static_cache:  # few distinct shapes, few compiles
            prompts += [prompts[-1]] * (-asked % BATCH_BUCKET)
            width = self._static_width = max(self._static_width, -(-width // WIDTH_BUCKET) * WIDTH_BUCKET)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=self.device)  # (B, T) left-padded
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        torch.manual_seed(sampling.seed)
        with torch.no_grad(), card_hold(self.timings_lock, str(self.device)) as hold:
            out = self.model.generate(
                input_ids=ids, attention_mask=mask, num_return_sequences=n, max_new_tokens=sampling.max_tokens,
                pad_token_id=pad, return_dict_in_generate=True, output_logits=sampling.logprobs,
                stopping_criteria=self._stopping(sampling, width, asked * n, on_reply, hold),
                logits_processor=self._processors(sampling),
                **_sampling_kwargs(sampling), **({"cache_implementation": "static"} if self.static_cache else {}),
            )  # fmt: skip
            new = out.sequences[:, width:]  # (B * n, T_new)
            logprobs = _token_logprobs(torch, out.logits, new) if sampling.logprobs else None
        eos = set(_eos_ids(self.model, self.tokenizer))
        gens = [
            self._generation(new[r].tolist(), logprobs[r] if logprobs else None, eos, sampling, len(prompts[r // n]))
            for r in range(asked * n)
        ]
        return [gens[i * n : (i + 1) * n] for i in range(asked)]

    def _encode(self, messages: Sequence[Message]) -> list[int]:
        encoded = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
        if isinstance(encoded, dict) or hasattr(encoded, "input_ids"):
            encoded = encoded["input_ids"]
        return list(encoded)

    def _processors(self, sampling: Sampling) -> Any:
        """Logits processors beyond the sampling keywords: the source-token mask where asked for."""
        from transformers import LogitsProcessorList

        if not sampling.source_tokens_only:
            return None
        torch, policy = self._torch, self

        def only_source_tokens(input_ids: Any, scores: Any) -> Any:
            bias = policy._source_tokens  # 0 where allowed, -inf elsewhere (the logits may outnumber the vocabulary)
            if bias is None or bias.shape[-1] != scores.shape[-1] or bias.dtype != scores.dtype:
                size = scores.shape[-1]
                bias = torch.full((size,), float("-inf"), dtype=scores.dtype, device=scores.device)
                bias[[i for i in source_token_ids(policy.tokenizer) if i < size]] = 0.0
                policy._source_tokens = bias
            return scores + bias

        return LogitsProcessorList([only_source_tokens])

    def _stopping(self, sampling: Sampling, width: int, rows: int, on_reply: OnReply | None = None,
                  hold: Any = None) -> Any:  # fmt: skip
        from transformers import StoppingCriteria, StoppingCriteriaList

        tokenizer, policy = self.tokenizer, self
        stops = sampling.stop
        eos = set(_eos_ids(self.model, self.tokenizer)) if on_reply is not None else set()

        class _Stop(StoppingCriteria):  # type: ignore[misc]
            """Stop strings and closed code blocks, checked every STOP_CHECK_EVERY tokens on live rows only;
            each row that ended (so, too, by EOS) told to ``on_reply``; a waiting timing let through (``hold``)."""

            def __init__(self) -> None:
                self.done: list[bool] = []  # a stopped row stays stopped: generate pads it from then on

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                if not self.done:  # rows past ``rows`` only fill a static cache's batch: done from the start
                    self.done = [r >= rows for r in range(input_ids.shape[0])]
                if (input_ids.shape[1] - width) % STOP_CHECK_EVERY:  # decoding every row each token costs more
                    return input_ids.new_tensor(self.done, dtype=bool)  # than the model; overshoot is trimmed
                if hold is not None:
                    hold.let_through()
                live = [r for r, d in enumerate(self.done) if not d]
                tokens = input_ids[live, width:].tolist()
                texts = tokenizer.batch_decode(tokens, skip_special_tokens=True)
                for r, row, text in zip(live, tokens, texts, strict=True):
                    self.done[r] = _should_stop(text, stops, sampling.stop_after_code_block)
                    if on_reply is not None and (self.done[r] or not eos.isdisjoint(row)):
                        self.done[r] = True  # ended by EOS: generate pads it from here on
                        on_reply(r, policy._generation(row, None, eos, sampling, 0).text)
                return input_ids.new_tensor(self.done, dtype=bool)

        wanted = stops or sampling.stop_after_code_block or self.static_cache or (on_reply or hold) is not None
        return StoppingCriteriaList([_Stop()]) if wanted else None

    def _generation(self, tokens: list[int], logprobs: list[float] | None, eos: set[int], sampling: Sampling,
                    prompt_tokens: int) -> Generation:  # fmt: skip
        cut = next((i for i, t in enumerate(tokens) if t in eos), None)
        kept = tokens if cut is None else tokens[:cut]
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        trimmed = _trim(text, sampling)
        finish = "stop" if cut is not None or trimmed != text else "length"
        if trimmed != text:  # a stop string or a closed code block ended it: drop the tokens past it
            kept = _tokens_covering(self.tokenizer, kept, trimmed)
        lp = tuple(logprobs[: len(kept)]) if logprobs is not None else ()
        return Generation(trimmed, tuple(kept), lp, finish, prompt_tokens)


STOP_CHECK_EVERY = 8
"""Tokens between checks for a stop string or a closed code block (the tokens past one are trimmed off)."""

WIDTH_BUCKET = 256
"""With a static cache, prompts are left-padded to a multiple of this many tokens."""

BATCH_BUCKET = 8
"""With a static cache, the batch is filled up to a multiple of this many conversations."""


def default_threads() -> int:
    """Half the CPU cores, at least 1 (see ``threads`` of :class:`TransformersPolicy`)."""
    return max(1, (os.cpu_count() or 1) // 2)


def _should_stop(text: str, stops: tuple[str, ...], after_block: bool) -> bool:
    return any(s in text for s in stops) or (after_block and stop_at_code_block_end(text) is not None)


def _trim(text: str, sampling: Sampling) -> str:
    """Cut ``text`` at the first stop string (excluded) or after its first closed code block."""
    for s in sampling.stop:
        if s in text:
            text = text[: text.index(s)]
    if sampling.stop_after_code_block:
        text = stop_at_code_block_end(text) or text
    return text


def _tokens_covering(tokenizer: Any, tokens: list[int], text: str) -> list[int]:
    """The shortest prefix of ``tokens`` whose decoding covers ``text``.

    A binary search over the prefix length (a decoded prefix grows with it, but for the odd
    space a later token's clean-up removes), then a walk to the exact boundary: a few
    decodes instead of one per token (a 750-token reply: 0.12 s each, for every trimmed row).
    """

    def covers(k: int) -> bool:
        return len(tokenizer.decode(tokens[:k], skip_special_tokens=True)) >= len(text)

    first = min(1, len(tokens))  # at least one token, as a reply has
    lo, hi = first, len(tokens)
    if not covers(hi):
        return tokens
    while lo < hi:
        mid = (lo + hi) // 2
        if covers(mid):
            hi = mid
        else:
            lo = mid + 1
    while lo > first and covers(lo - 1):
        lo -= 1
    return tokens[:lo]


def _sampling_kwargs(sampling: Sampling) -> dict[str, Any]:
    penalty = {"repetition_penalty": sampling.repetition_penalty} if sampling.repetition_penalty != 1.0 else {}
    if sampling.greedy:
        return {"do_sample": False, "temperature": None, "top_p": None, "top_k": None, **penalty}
    return {**penalty, "do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p,
            "top_k": sampling.top_k or None}  # fmt: skip


def _token_logprobs(torch: Any, logits: Sequence[Any], new: Any) -> list[list[float]]:
    """Log-probability of each generated token under the model's raw (untempered) distribution."""
    steps = torch.stack(list(logits), dim=1).float().log_softmax(-1)  # (B * n, T_new, V)
    picked = steps.gather(-1, new[:, : steps.shape[1], None]).squeeze(-1)  # (B * n, T_new)
    return [row.tolist() for row in picked]


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
    return [*ids, tokenizer.eos_token_id, tokenizer.pad_token_id]


def _dtype(torch: Any, dtype: str, device: str) -> Any:
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}")
    return getattr(torch, dtype)


def _with_adapter(model: Any, adapter: str | Path) -> Any:
    try:
        from peft import PeftModel
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(f"a LoRA adapter needs peft ({_HINT})") from exc
    return PeftModel.from_pretrained(model, str(adapter), local_files_only=True).merge_and_unload()
