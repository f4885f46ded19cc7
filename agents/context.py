"""The conversation of a trajectory, kept within the model's context window.

The rule: the system prompt and the task prompt are always kept, and so is the
latest exchange (the last reply and its feedback), which is what the model
must improve. Older exchanges are kept newest first while they fit in
``window - max_tokens`` tokens; those that do not fit are dropped, oldest
first, and replaced by one user message that summarizes them as a line each
(``turn 1: compile_error``), so the model still knows what it already tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.policies.base import Message

SYSTEM_PROMPT = (
    "You are an expert CUDA engineer. You write correct, fast CUDA C++ kernels. "
    "Answer with the complete source in one ```cuda fenced block."
)


@dataclass(frozen=True)
class Exchange:
    """One earlier turn as the model sees it again.

    Attributes:
        reply: The model's reply.
        feedback: The observation given back (feedback plus the task reminder).
        status: The turn's status, for the summary when the exchange is dropped.
    """

    reply: str
    feedback: str
    status: str


def conversation(
    system: str,
    task_prompt: str,
    history: Sequence[Exchange],
    budget: int,
    count_tokens: Callable[[Sequence[Message]], int],
) -> tuple[list[Message], int]:
    """The messages for the next reply and how many earlier exchanges were dropped.

    Args:
        system: The system prompt.
        task_prompt: The task's prompt (the first user message).
        history: Earlier exchanges, oldest first.
        budget: Tokens the prompt may take (the context window less the generation budget).
        count_tokens: The policy's token counter for a list of messages.
    """
    head: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": task_prompt}]
    kept = len(history)
    while True:
        messages = head + _summary(history[: len(history) - kept]) + _messages(history[len(history) - kept :])
        if kept <= 1 or count_tokens(messages) <= budget:
            return messages, len(history) - kept
        kept -= 1


def _messages(exchanges: Sequence[Exchange]) -> list[Message]:
    out: list[Message] = []
    for e in exchanges:
        out += [{"role": "assistant", "content": e.reply}, {"role": "user", "content": e.feedback}]
    return out


def _summary(dropped: Sequence[Exchange]) -> list[Message]:
    if not dropped:
        return []
    lines = "\n".join(f"- turn {i}: {e.status}" for i, e in enumerate(dropped, start=1))
    text = f"(Earlier attempts, left out to fit the context:\n{lines}\nTheir sources are not shown.)"
    # An assistant turn keeps user/assistant alternation, which some chat templates require.
    return [{"role": "assistant", "content": "(earlier attempts omitted)"}, {"role": "user", "content": text}]
