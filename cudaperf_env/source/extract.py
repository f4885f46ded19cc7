"""Pull the CUDA source out of an agent's text action, and refuse text that is not usable source."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

CODE_LANGUAGES = frozenset({"", "cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "h", "hpp"})
NO_CODE = "no code found: put the CUDA source in a ```cuda fenced block"
PYTHON_LANGUAGES = frozenset({"", "python", "py", "python3"})
NO_PYTHON = "no Python found: put the whole submission (imports, load_inline, class ModelNew) in one ```python block"
_OPEN_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*")
# `name(params) {` (qualifiers allowed before the brace); linear on any text.
_FUNCTION_BODY = re.compile(r"\w\s*\([^;{}()]*\)[\w\s]*\{")
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")  # everything that needs a closer look
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_BOM = "\ufeff"


@dataclass(frozen=True)
class Extraction:
    """The outcome of extracting code from an action.

    Attributes:
        code: The source to compile (newlines normalized to ``\\n``), or None on error.
        error: Why there is no usable code, with what to do; None on success.
        fenced: Whether the code came from a fenced block.
        cut_off: The code's fenced block was never closed: the reply most likely stopped at a
            length limit, and the code ends where the text did.
    """

    code: str | None
    error: str | None
    fenced: bool
    cut_off: bool = False

    def __post_init__(self) -> None:
        if (self.code is None) == (self.error is None):
            raise ValueError(
                "exactly one of code and error must be set, got "
                f"code={self.code!r:.40} and error={self.error!r}"
            )


@dataclass(frozen=True)
class _Block:
    language: str
    text: str
    closed: bool = True


def extract_code(
    action: str, *, max_chars: int = 65536, max_action_chars: int | None = None
) -> Extraction:
    """Finds the submission's source in an agent's answer.

    With fenced blocks (```cuda, ```cpp, ```c++, ```cu, ```c or a bare ```; an
    unclosed fence runs to the end), the last block that contains
    ``__global__`` is taken, else the last code block. Without fences, the
    whole text is the code if it looks like code (``__global__`` or a
    function body).

    Args:
        action: The agent's text.
        max_chars: Most characters of code accepted.
        max_action_chars: Most characters of text scanned (default ``16 * max_chars``).

    Returns:
        The code, or an error saying what is wrong and what to do.
    """
    if not isinstance(action, str):
        kind = type(action).__name__
        return _error(f"expected the action as a str, got {kind}; decode it as UTF-8 first")
    limit = 16 * max_chars if max_action_chars is None else max_action_chars
    if len(action) > limit:
        return _error(f"the answer is {len(action):,} characters, over the limit of {limit:,}; "
                      "answer with the code in one ```cuda block and little prose")
    text = action.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return _error("empty action: expected CUDA C++ source in a ```cuda fenced block")
    blocks = _fenced_blocks(text)
    cut_off = False
    if blocks:
        code, error, cut_off = _choose(blocks)
        fenced = True
    elif "__global__" in text or _looks_like_code(text):
        code, error, fenced = text, None, False
    else:
        code, error, fenced = None, NO_CODE, False
    if code is not None:
        code = code.removeprefix(_BOM)
        error = _check(code, max_chars)
    return Extraction(None, error, fenced) if error else Extraction(code, None, fenced, cut_off)


def extract_python(action: str, *, max_chars: int = 65536) -> Extraction:
    """Finds a KernelBench-mode submission (Python defining ``ModelNew``) in an agent's answer.

    With fenced blocks, the last ```python (or ```py, or bare ```) block that mentions
    ``ModelNew`` is taken, else the last such block; without fences, the whole text if it
    defines ``class ModelNew``. The same size and character limits as :func:`extract_code`.
    """
    if not isinstance(action, str):
        return _error(f"expected the action as a str, got {type(action).__name__}; decode it as UTF-8 first")
    if len(action) > 16 * max_chars:
        return _error(f"the answer is {len(action):,} characters, over the limit of {16 * max_chars:,}; "
                      "answer with the code in one ```python block and little prose")  # fmt: skip
    text = action.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return _error("empty action: expected Python defining ModelNew in a ```python fenced block")
    blocks = [b for b in _fenced_blocks(text) if b.language in PYTHON_LANGUAGES]
    cut_off = False
    if blocks:
        chosen = ([b for b in blocks if "ModelNew" in b.text] or blocks)[-1]
        code, fenced, cut_off = chosen.text, True, not chosen.closed
    elif "class ModelNew" in text:
        code, fenced = text, False
    else:
        return _error(NO_PYTHON)
    if not code.strip():
        return _error("the ```python block is empty: put the submission inside it")
    error = _check(code, max_chars)
    return Extraction(None, error, fenced) if error else Extraction(code, None, fenced, cut_off)


def _error(message: str) -> Extraction:
    return Extraction(None, message, False)


def _fenced_blocks(text: str) -> list[_Block]:
    """Fenced blocks in order; a closing fence repeats the opening's character as often or more."""
    lines = text.split("\n")
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN_FENCE.fullmatch(lines[i])
        if m is None:
            i += 1
            continue
        fence, language = m.group(1), m.group(2).lower()
        indent = len(lines[i]) - len(lines[i].lstrip(" \t"))
        close = re.compile(rf"[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*")
        j = i + 1
        while j < len(lines) and not close.fullmatch(lines[j]):
            j += 1
        body = [_dedent(line, indent) for line in lines[i + 1 : j]]
        blocks.append(_Block(language, "\n".join(body) + "\n", closed=j < len(lines)))
        i = j + 1
    return blocks


def _dedent(line: str, indent: int) -> str:
    strip = len(line) - len(line.lstrip(" \t"))
    return line[min(strip, indent) :]


def _choose(blocks: list[_Block]) -> tuple[str | None, str | None, bool]:
    """The chosen block's code or why there is none, and whether that block was left open."""
    code_blocks = [b for b in blocks if b.language in CODE_LANGUAGES or "__global__" in b.text]
    if not code_blocks:
        languages = ", ".join(sorted({f"```{b.language}" for b in blocks}))
        return None, f"{NO_CODE} (found only {languages} blocks)", False
    kernels = [b for b in code_blocks if "__global__" in b.text]
    chosen = (kernels or code_blocks)[-1]
    if not chosen.text.strip():
        return None, "the ```cuda block is empty: put the CUDA source inside it", not chosen.closed
    return chosen.text, None, not chosen.closed


def _looks_like_code(text: str) -> bool:
    m = _FUNCTION_BODY.search(text)
    return m is not None and "}" in text[m.end() :]


def _check(code: str, max_chars: int) -> str | None:
    """Why the code cannot be compiled as is, or None."""
    if len(code) > max_chars:
        return (f"the code is {len(code):,} characters, over the limit of {max_chars:,}; "
                "shorten it (drop unused code and long comments)")
    for m in _SUSPECT.finditer(code):
        char = m.group()
        if char == "\ufffd" or unicodedata.category(char) in _BAD_CATEGORIES:
            line = code.count("\n", 0, m.start()) + 1
            return (
                f"line {line} of the code holds {_describe(char)}, which is not allowed in "
                "source; remove it (only printable characters, tabs and newlines are allowed)"
            )
    return None


def _describe(char: str) -> str:
    point = f"U+{ord(char):04X}"
    if unicodedata.category(char) == "Cs":
        return f"{point} (a lone surrogate: the text was not valid UTF-8)"
    if char == "\ufffd":
        return f"{point} (REPLACEMENT CHARACTER: the text was not valid UTF-8)"
    name = unicodedata.name(char, "")
    return f"{point} ({name or 'a control character'})"
