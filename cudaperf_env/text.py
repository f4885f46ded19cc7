"""Text hygiene for everything the environment emits: printable, bounded."""

from __future__ import annotations

import hashlib
import math
import string
from typing import Any

# The charset of the env's Text spaces: printable ASCII plus tab and newline.
PRINTABLE = frozenset(string.printable) - {"\x0b", "\x0c", "\r"}
_PRINTABLE_SORTED = "".join(sorted(PRINTABLE))


def sanitize(text: str) -> str:
    """Map ``text`` onto :data:`PRINTABLE`: common Unicode punctuation to ASCII, the rest to '?'."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for ch in text:
        if ch in PRINTABLE:
            out.append(ch)
        else:
            out.append(_ASCII_LOOKALIKES.get(ch, "?"))
    return "".join(out)


def truncate(text: str, max_chars: int, max_lines: int | None = None) -> str:
    """Keep at most ``max_lines`` lines and ``max_chars`` characters, saying what was cut."""
    lines = text.splitlines()
    cut_lines = max_lines is not None and len(lines) > max_lines
    if cut_lines:
        text = "\n".join(lines[:max_lines])
    if len(text) > max_chars:
        text, cut_lines = text[:max_chars], True
    if cut_lines:
        text = text.rstrip("\n") + "\n[... output truncated ...]"
    return text


def charset() -> str:
    """The printable charset as a string, for ``gymnasium.spaces.Text``."""
    return _PRINTABLE_SORTED


_ASCII_LOOKALIKES = {
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
    "\u2026": "...", "\u00a0": " ", "\u2192": "->", "\u00d7": "x", "\u2264": "<=", "\u2265": ">=",
}  # fmt: skip


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as None (JSON has no NaN), tuples as lists, dict keys as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def source_digest(code: str) -> str:
    """Short content hash of an implementation's source (feature records and variants are matched on it)."""
    return hashlib.sha256(code.encode("utf-8", "replace")).hexdigest()[:16]
