"""A policy that replays canned replies: for tests, examples and dry runs of the harness."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.policies.base import Generation, Message, OnReply, Sampling, check_batch

ReplyFn = Callable[[Sequence[Message], int], str]
"""``(conversation, sample index) -> reply``."""


@dataclass
class ScriptedPolicy:
    """Answers from a script: a list of replies taken in turn, or a function of the conversation.

    A list is consumed cyclically across calls, so a group of 2 over 3 turns with
    ``["bad", "good"]`` gets bad/good at every turn.

    Args:
        replies: Canned replies, or a function ``(conversation, sample index) -> reply``.
        name: The model name written into records.
        context_window: Pretended context size (tokens are counted as characters / 4).

    Each reply is told to ``on_reply`` as soon as it is made (a streaming policy).
    """

    replies: Sequence[str] | ReplyFn
    name: str = "scripted"
    context_window: int = 32768
    streams_replies = True

    def __post_init__(self) -> None:
        self._next = 0
        if not callable(self.replies) and not self.replies:
            raise ValueError("ScriptedPolicy needs at least one reply")

    def generate(
        self, messages_batch: Sequence[Sequence[Message]], n: int, sampling: Sampling, on_reply: OnReply | None = None
    ) -> list[list[Generation]]:
        check_batch(messages_batch, n)
        out: list[list[Generation]] = []
        for i, messages in enumerate(messages_batch):
            out.append([])
            for j in range(n):
                out[-1].append(Generation(self._reply(messages, j), finish_reason="stop",
                                          prompt_tokens=self.count_tokens(messages)))  # fmt: skip
                if on_reply is not None:
                    on_reply(i * n + j, out[-1][-1].text)
        return out

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)

    def _reply(self, messages: Sequence[Message], j: int) -> str:
        if callable(self.replies):
            return self.replies(messages, j)
        reply = self.replies[self._next % len(self.replies)]
        self._next += 1
        return reply
