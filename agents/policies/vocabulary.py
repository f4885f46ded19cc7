"""The tokens a CUDA source can be written with: printable ASCII, tabs and newlines.

The environment refuses a reply whose code holds anything else (a control character,
or U+FFFD where the text was not valid UTF-8) as a format error. Small byte-level
models emit such text by sampling one byte of a multi-byte character and not the
rest (measured: 4 of 24 replies of the embedded model on validation tasks, every
one inside a comment). Sampling only from :func:`source_token_ids` makes that
impossible without touching what a valid source may say.
"""

from __future__ import annotations

from typing import Any


def is_source_text(text: str) -> bool:
    """Whether ``text`` is printable ASCII, tabs and newlines only (pure)."""
    return all(c in "\t\n" or " " <= c <= "~" for c in text)


def source_token_ids(tokenizer: Any) -> list[int]:
    """Ids of ``tokenizer``'s tokens that decode, alone, to source text, plus its special tokens
    (end of turn, padding: what ends a reply). A token holding part of a multi-byte character
    decodes to U+FFFD alone and is left out."""
    special = set(tokenizer.all_special_ids)
    ids = range(len(tokenizer))
    texts = tokenizer.batch_decode([[i] for i in ids], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return [i for i, text in zip(ids, texts, strict=True) if i in special or (text and is_source_text(text))]
