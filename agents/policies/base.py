"""The policy interface: chat conversations in, sampled generations out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": ...}``."""


@dataclass(frozen=True)
class Sampling:
    """How to sample; every backend maps these fields onto its own parameters.

    Attributes:
        temperature: Softmax temperature; 0 means greedy decoding.
        top_p: Nucleus sampling mass in (0, 1].
        top_k: Keep the ``top_k`` most likely tokens; 0 disables it.
        max_tokens: Most new tokens per generation.
        seed: Seed of this call; the same seed and inputs give the same generations
            on the transformers and vLLM backends (servers honour it where they can).
        stop: Strings that end a generation (not included in the text).
        stop_after_code_block: End a generation once its first fenced code block has
            closed (the rest of a reply is never graded; saves most of the tokens of
            small models, which ramble after the code). Transformers backend only.
        logprobs: Also return each generated token's log-probability.
        repetition_penalty: Divide the logits of tokens already in the context by this (1.0: off);
            small models loop without it ("c2c2_f32: c2c2_f32: ..."). Transformers and vLLM
            (servers: sent as vLLM's ``repetition_penalty`` extension).
        source_tokens_only: Sample only tokens that decode to printable ASCII, tabs and newlines (and
            the special tokens that end a reply): a CUDA source needs nothing else, and the environment
            refuses the broken multi-byte characters small models emit otherwise
            (:mod:`agents.policies.vocabulary`). Transformers and vLLM; servers ignore it.
    """

    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 0
    max_tokens: int = 512
    seed: int = 0
    stop: tuple[str, ...] = ()
    stop_after_code_block: bool = True
    logprobs: bool = False
    repetition_penalty: float = 1.0
    source_tokens_only: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be > 0 (1.0 disables it), got {self.repetition_penalty}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    @property
    def greedy(self) -> bool:
        """Greedy decoding (temperature 0)."""
        return self.temperature == 0.0

    def with_seed(self, seed: int) -> Sampling:
        """The same sampling under another seed."""
        return replace(self, seed=seed)


@dataclass(frozen=True)
class Generation:
    """One sampled reply.

    Attributes:
        text: The generated text (special tokens removed).
        token_ids: Generated token ids, where the backend gives them (empty otherwise).
        logprobs: Each generated token's log-probability, when asked for and given.
        finish_reason: ``stop`` (EOS, a stop string or a closed code block), ``length``, or "".
        prompt_tokens: Tokens of the prompt this generation continued (0 if unknown).
    """

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = field(default=())
    finish_reason: str = ""
    prompt_tokens: int = 0

    @property
    def completion_tokens(self) -> int:
        """Generated tokens (estimated at 4 characters a token when the backend gives no ids)."""
        return len(self.token_ids) if self.token_ids else max(1, len(self.text) // 4)


@runtime_checkable
class Policy(Protocol):
    """Anything that samples chat replies: a local model, an engine or a server.

    Attributes:
        name: What produced the replies (a model path or a server's model name), for records.
        context_window: Tokens the model attends to (prompt plus generation).
    """

    name: str
    context_window: int

    def generate(
        self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling
    ) -> list[list[Generation]]:
        """``n`` generations for each conversation, in order: ``result[i][j]`` is conversation i's j-th."""
        ...

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as the model would see them (with the chat template)."""
        ...


OnReply = Callable[[int, str], None]
"""Told of one reply as soon as its text is final: ``(index, text)``, where conversation ``i``'s ``j``-th
generation of a call with ``n`` per conversation has index ``i * n + j``, and ``text`` is what the
returned :class:`Generation` carries. Policies that can say so early have a true ``streams_replies``
attribute and take it as ``generate(..., on_reply=...)``; it may be called from any thread, before
``generate`` returns."""


def streams_replies(policy: Policy) -> bool:
    """Whether ``policy.generate`` takes ``on_reply`` and tells of each reply before the call returns."""
    return bool(getattr(policy, "streams_replies", False))


def check_batch(messages_batch: Sequence[Sequence[Message]], n: int) -> None:
    """Validate a ``generate`` call's arguments (shared by every backend).

    Raises:
        ValueError: ``n`` < 1, an empty conversation, or a message without role/content.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    for i, messages in enumerate(messages_batch):
        if not messages:
            raise ValueError(f"conversation {i} is empty; it needs at least a user message")
        for m in messages:
            if set(m) < {"role", "content"} or m["role"] not in ("system", "user", "assistant"):
                raise ValueError(f"conversation {i} has a malformed message {m!r}: need role and content")


def stop_at_code_block_end(text: str) -> str | None:
    """The prefix of ``text`` that ends with its first closed fenced block, or None if none closed yet."""
    start = text.find("```")
    if start < 0:
        return None
    body = text.find("\n", start)
    if body < 0:
        return None
    end = text.find("```", body)
    return text[: end + 3] if end >= 0 else None
