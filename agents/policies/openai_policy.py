"""Any OpenAI-compatible chat server as a policy (``vllm serve``, llama.cpp's server, hosted APIs).

Each of the ``n`` samples of a conversation is its own request (seeded
``seed + j``), so servers without ``n`` support work too; requests run
concurrently up to a limit. Connection errors, timeouts, 429/5xx answers and
malformed bodies (not JSON, no choices, no content) are retried with exponential backoff; other 4xx answers fail
at once with the server's message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from agents.errors import MissingDependencyError, PolicyError
from agents.policies.base import Generation, Message, OnReply, Sampling, check_batch


@dataclass(frozen=True)
class ServerConfig:
    """Where the server is and how patiently to talk to it.

    Attributes:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: The model name the server serves.
        api_key_env: Environment variable holding the API key (local servers take any key).
        timeout_s: Seconds one request may take.
        max_retries: Retries of a failed request (so at most ``max_retries + 1`` attempts).
        backoff_s: First retry delay; doubled after every failure.
        max_backoff_s: Longest delay between retries.
        concurrency: Requests in flight at once.
        context_window: The model's context size, for trimming the conversation.
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    concurrency: int = 8
    context_window: int = 8192

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if self.timeout_s <= 0 or self.backoff_s < 0 or self.max_retries < 0 or self.concurrency < 1:
            raise ValueError("timeout_s > 0, backoff_s >= 0, max_retries >= 0 and concurrency >= 1 are required")


def request_body(messages: Sequence[Message], sampling: Sampling) -> dict[str, Any]:
    """The chat-completions parameters (besides ``model``) of one sample."""
    body: dict[str, Any] = {
        "messages": [dict(m) for m in messages],
        "temperature": sampling.temperature,
        "top_p": 1.0 if sampling.greedy else sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": sampling.seed,
        "n": 1,
    }
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if sampling.logprobs:
        body["logprobs"] = True
    extra: dict[str, Any] = {}
    if sampling.top_k > 0 and not sampling.greedy:
        extra["top_k"] = sampling.top_k  # vLLM's and llama.cpp's extensions
    if sampling.repetition_penalty != 1.0:
        extra["repetition_penalty"] = sampling.repetition_penalty
    if extra:
        body["extra_body"] = extra
    return body


def generation_of(response: Any) -> Generation:
    """Our generation from a chat-completions response.

    Raises:
        PolicyError: The response has no choice or no message text (a malformed body).
    """
    choices = getattr(response, "choices", None)
    if not choices:
        raise PolicyError(f"malformed response: no choices in {str(response)[:200]!r}")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str):
        raise PolicyError(f"malformed response: choice 0 has no message content ({str(choices[0])[:200]!r})")
    logprobs: tuple[float, ...] = ()
    lp = getattr(choices[0], "logprobs", None)
    if lp is not None and getattr(lp, "content", None):
        logprobs = tuple(float(t.logprob) for t in lp.content)
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    return Generation(text, (), logprobs, getattr(choices[0], "finish_reason", "") or "", prompt_tokens)


def backoff_delays(config: ServerConfig) -> list[float]:
    """Delay before each retry: ``backoff_s * 2**i``, capped at ``max_backoff_s``."""
    return [min(config.backoff_s * 2**i, config.max_backoff_s) for i in range(config.max_retries)]


class OpenAIPolicy:
    """Samples replies from an OpenAI-compatible server.

    Args:
        config: The server and the retry policy.
        sleep: Waits between retries (tests pass a no-op).

    Each reply is told to ``generate``'s ``on_reply`` as soon as its request returns.
    """

    streams_replies = True

    def __init__(self, config: ServerConfig, sleep: Callable[[float], None] = time.sleep) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependencyError(
                "the openai policy needs the openai package: pip install 'cudaperf-env[agent]'"
            ) from exc
        self._openai = openai
        self.config = config
        self.name = config.model
        self.context_window = config.context_window
        self._sleep = sleep
        key = os.environ.get(config.api_key_env) or "EMPTY"  # local servers accept any key
        self._client = openai.OpenAI(base_url=config.base_url, api_key=key, timeout=config.timeout_s, max_retries=0)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)  # no tokenizer: ~4 chars a token

    def generate(
        self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling, on_reply: OnReply | None = None
    ) -> list[list[Generation]]:
        check_batch(messages_batch, n)
        jobs = [(m, sampling.with_seed(sampling.seed + j)) for m in messages_batch for j in range(n)]

        def one(index: int) -> Generation:
            generation = self._one(*jobs[index])
            if on_reply is not None:
                on_reply(index, generation.text)
            return generation

        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            flat = list(pool.map(one, range(len(jobs))))
        return [flat[i * n : (i + 1) * n] for i in range(len(messages_batch))]

    def _one(self, messages: Sequence[Message], sampling: Sampling) -> Generation:
        errors = self._openai
        retryable = (errors.APIConnectionError, errors.RateLimitError, errors.InternalServerError,
                     errors.APIResponseValidationError, json.JSONDecodeError, PolicyError)  # fmt: skip
        delays = backoff_delays(self.config)
        for attempt in range(self.config.max_retries + 1):
            try:
                response = self._client.chat.completions.create(
                    model=self.config.model, **request_body(messages, sampling)
                )
                return generation_of(response)
            except retryable as exc:
                if attempt == self.config.max_retries:
                    raise PolicyError(
                        f"{self.config.base_url}: {attempt + 1} attempts failed, last: {type(exc).__name__}: {exc}"
                    ) from exc
                self._sleep(delays[attempt])
            except errors.APIStatusError as exc:
                raise PolicyError(f"{self.config.base_url} answered {exc.status_code}: {exc.message}") from exc
        raise AssertionError("unreachable")
