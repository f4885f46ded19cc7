"""Training sequences from graded turns: token ids, the mask of the model's own tokens, advantages.

One graded turn is one sequence: the conversation the reply continued (system
prompt, task prompt, earlier replies and their feedback, with the chat
template's generation prompt) followed by the reply's tokens. Only the reply's
tokens get gradient (mask 1); the prompt, the execution feedback and the
earlier replies are masked (mask 0): earlier replies are trained as their own
turn's sequence, with their own advantage, not again here.

The reply's tokens are the ones the policy sampled when the backend gives them
(re-encoding decoded text can tokenize differently), else the text encoded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from agents.policies.base import Message

Segment = tuple[Sequence[int], bool]
"""A run of token ids and whether they are the model's own (trained) tokens."""


@dataclass(frozen=True)
class Sample:
    """One sequence of the optimizer batch.

    Attributes:
        input_ids: Prompt then reply tokens.
        mask: 1 on the reply's tokens, 0 elsewhere (same length as ``input_ids``).
        advantage: The turn's advantage (every reply token shares it).
        task_id: The task answered (for logs).
        turn: The turn number.
    """

    input_ids: tuple[int, ...]
    mask: tuple[int, ...]
    advantage: float
    task_id: str = ""
    turn: int = 1

    @property
    def completion_tokens(self) -> int:
        """Tokens that get gradient."""
        return sum(self.mask)


def sequence_and_mask(segments: Sequence[Segment]) -> tuple[list[int], list[int]]:
    """Concatenate segments; the mask is 1 on the tokens of segments marked as the model's own."""
    ids: list[int] = []
    mask: list[int] = []
    for tokens, own in segments:
        ids += list(tokens)
        mask += [1 if own else 0] * len(tokens)
    return ids, mask


def prompt_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """The conversation's tokens as the model saw them (chat template plus generation prompt)."""
    encoded = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
    if isinstance(encoded, dict) or hasattr(encoded, "input_ids"):
        encoded = encoded["input_ids"]
    return list(encoded)


def turn_sample(
    tokenizer: Any,
    messages: Sequence[Message],
    reply: str,
    advantage: float,
    sampled_ids: Sequence[int] | None = None,
    *,
    task_id: str = "",
    turn: int = 1,
) -> Sample:
    """The training sequence of one graded turn (prompt masked, reply trained)."""
    reply_ids = list(sampled_ids) if sampled_ids else list(tokenizer(reply, add_special_tokens=False)["input_ids"])
    ids, mask = sequence_and_mask([(prompt_ids(tokenizer, messages), False), (reply_ids, True)])
    return Sample(tuple(ids), tuple(mask), advantage, task_id, turn)


def chunks(n: int, size: int) -> list[range]:
    """``range(n)`` cut into consecutive pieces of at most ``size``."""
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


def collate(samples: Sequence[Sample], pad_id: int, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    """Right-padded tensors: ``input_ids``, ``attention_mask`` and ``mask`` ``(B, T)``, ``advantages`` ``(B,)``."""
    width = max(len(s.input_ids) for s in samples)

    def padded(get: Callable[[Sample], Sequence[int]], value: int) -> torch.Tensor:
        rows = [list(get(s)) + [value] * (width - len(s.input_ids)) for s in samples]
        return torch.tensor(rows, dtype=torch.long, device=device)

    return {
        "input_ids": padded(lambda s: s.input_ids, pad_id),
        "attention_mask": padded(lambda s: [1] * len(s.input_ids), 0),
        "mask": padded(lambda s: s.mask, 0).float(),
        "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32, device=device),
    }


def lookup_ids(token_ids: Mapping[tuple[str, str], tuple[int, ...]], key: tuple[str, str]) -> tuple[int, ...] | None:
    """The sampled token ids recorded for ``(conversation key, reply)``, if any."""
    return token_ids.get(key)
