"""Loss aggregation: how per-token losses become one number, as per-token weights (pure Python).

Computed once over the whole optimizer batch: a micro-batch's loss is
``sum(weight * loss)``, so gradient accumulation over micro-batches gives
exactly the full batch's gradient.

- ``token``: every reply token weighs ``1 / (tokens in the batch)`` (DAPO's token-level mean);
- ``sequence``: each sequence's mean, then the mean over sequences (the original GRPO:
  a token of a short reply weighs more than one of a long reply);
- ``drgrpo``: ``1 / (sequences * max_tokens)``, a constant (Dr. GRPO: no length bias).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType


def token_weights_token(lengths: Sequence[int], max_tokens: int) -> list[float]:
    """Per-sequence weight of each of its tokens: ``1 / sum(lengths)``."""
    total = sum(lengths)
    return [1.0 / total if total else 0.0 for _ in lengths]


def token_weights_sequence(lengths: Sequence[int], max_tokens: int) -> list[float]:
    """``1 / (len_i * B)``: the mean over sequences of each sequence's mean."""
    return [1.0 / (n * len(lengths)) if n else 0.0 for n in lengths]


def token_weights_drgrpo(lengths: Sequence[int], max_tokens: int) -> list[float]:
    """``1 / (B * max_tokens)`` for every token: a constant normalizer."""
    return [1.0 / (len(lengths) * max_tokens) for _ in lengths]


AGGREGATIONS: Mapping[str, Callable[[Sequence[int], int], list[float]]] = MappingProxyType({
    "token": token_weights_token,
    "sequence": token_weights_sequence,
    "drgrpo": token_weights_drgrpo,
})
"""Loss aggregations by name (``GRPOConfig.loss_aggregation``): lengths in, per-sequence token weight out."""


def token_weights(lengths: Sequence[int], kind: str, max_tokens: int) -> list[float]:
    """The weight of one token of each sequence under aggregation ``kind`` (see the module docstring).

    Raises:
        ValueError: An unknown ``kind``.
    """
    if kind not in AGGREGATIONS:
        raise ValueError(f"unknown loss aggregation {kind!r}; expected one of {', '.join(AGGREGATIONS)}")
    return AGGREGATIONS[kind](lengths, max_tokens)
