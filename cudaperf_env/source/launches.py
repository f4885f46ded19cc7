"""Kernel launches ``K<<<grid, block[, shared[, stream]]>>>(args...)`` found in tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cudaperf_env.source.tokens import (
    Token,
    close_angle,
    is_closing_angles,
    join_tokens,
    open_angle,
)

# Identifiers that end a kernel expression when walking back from `<<<`.
_KEYWORDS = frozenset(
    {"return", "else", "case", "do", "throw", "new", "delete", "co_return", "co_await", "sizeof",
     "if", "while", "for", "switch", "template", "operator"}
)


@dataclass(frozen=True)
class Launch:
    """One launch; offsets index the source text the tokens came from.

    Attributes:
        kernel: The kernel expression on one line, comments dropped: ``"k<float, 256>"``.
        name: The kernel's simple name (``"k"`` for ``ns::k<float>``); ``""`` when
            the expression is not a (qualified, template) name, e.g. ``table[i]``.
        line: Line of the kernel expression.
        index: Index of the ``<<<`` token in the searched token list.
        start: Offset of the kernel expression.
        chevrons: Offset one past ``<<<``.
        closer: Offset of the ``>>>`` that ends the configuration.
        parts: Launch parameters in the configuration (2 to 4).
        args: Offset one past the argument list's ``(``.
        has_args: Whether the argument list holds any token.
        end: Offset one past the argument list's ``)``.
    """

    kernel: str
    name: str
    line: int
    index: int
    start: int
    chevrons: int
    closer: int
    parts: int
    args: int
    has_args: bool
    end: int


@dataclass(frozen=True)
class LaunchError:
    """A ``<<<`` that does not form a launch.

    Attributes:
        line: Line of the ``<<<``.
        index: Index of the ``<<<`` token.
        reason: What is wrong, e.g. ``"no >>>( after the launch configuration"``.
    """

    line: int
    index: int
    reason: str


def find_launches(
    toks: Sequence[Token], partner: Sequence[int]
) -> tuple[tuple[Launch, ...], tuple[LaunchError, ...]]:
    """Finds the launches among tokens (code tokens, or a macro's body).

    Args:
        toks: Tokens without comments.
        partner: ``match_brackets(toks)``.

    Returns:
        ``(launches, errors)`` in token order.
    """
    launches: list[Launch] = []
    errors: list[LaunchError] = []
    for i, tok in enumerate(toks):
        if tok.text != "<<<" or tok.kind != "punct" or (i > 0 and toks[i - 1].text == "operator"):
            continue
        found = _launch(toks, partner, i)
        if isinstance(found, str):
            errors.append(LaunchError(tok.line, i, found))
        else:
            launches.append(found)
    return tuple(launches), tuple(errors)


def _launch(toks: Sequence[Token], partner: Sequence[int], i: int) -> Launch | str:
    start = _kernel_start(toks, partner, i)
    if start < 0:
        return "no kernel name before <<<"
    end = _config_end(toks, partner, i)
    if end is None:
        return "no >>>( after the launch configuration"
    run_last, closer = end
    lparen = run_last + 1
    rparen = partner[lparen]
    if rparen < 0:
        return "the argument list's ( is never closed"
    parts = _count_parts(toks, partner, i + 1, closer)
    if not 2 <= parts <= 4:
        return f"expected 2 to 4 launch parameters (grid, block[, shared[, stream]]), got {parts}"
    expr = toks[start:i]
    return Launch(
        kernel=join_tokens(expr),
        name=_simple_name(toks, partner, start, i - 1),
        line=toks[start].line,
        index=i,
        start=toks[start].start,
        chevrons=toks[i].end,
        closer=closer,
        parts=parts,
        args=toks[lparen].end,
        has_args=rparen > lparen + 1,
        end=toks[rparen].end,
    )


def _ends_operand(tok: Token) -> bool:
    if tok.kind == "ident":
        return tok.text not in _KEYWORDS
    return tok.text in (")", "]") or is_closing_angles(tok)


def _kernel_start(toks: Sequence[Token], partner: Sequence[int], i: int) -> int:
    """Index of the first token of the kernel expression before ``toks[i]`` (``<<<``), or -1."""
    j = i - 1
    while True:
        if j < 0 or not _ends_operand(toks[j]):
            return -1
        j = _operand_start(toks, partner, j)
        if j < 0:
            return -1
        k = j - 1
        if k >= 0 and toks[k].text == "template":
            k -= 1
        if k < 0 or toks[k].text not in ("::", ".", "->"):
            return j
        if k == 0 or not _ends_operand(toks[k - 1]):
            return k  # a leading `::`
        j = k - 1


def _operand_start(toks: Sequence[Token], partner: Sequence[int], j: int) -> int:
    """First token of the operand ending at ``toks[j]``: a name, template-id or group.

    Calls and subscripts extend it: ``get()``, ``table[i]``.
    """
    while toks[j].text in (")", "]"):
        opener = partner[j]
        if opener < 0:
            return -1
        if opener > 0 and _ends_operand(toks[opener - 1]):
            j = opener - 1  # a call or subscript: the operand goes on before it
            continue
        return opener if toks[j].text == ")" else -1
    if is_closing_angles(toks[j]):
        at = open_angle(toks, j, partner)
        if at <= 0 or toks[at - 1].kind != "ident":
            return -1
        j = at - 1
    return j if toks[j].kind == "ident" and toks[j].text not in _KEYWORDS else -1


def _simple_name(toks: Sequence[Token], partner: Sequence[int], start: int, last: int) -> str:
    if is_closing_angles(toks[last]):
        at = open_angle(toks, last, partner)
        last = at - 1 if at > start else last
    if toks[last].kind != "ident":
        return ""
    for tok in toks[start:last]:
        if tok.kind != "ident" and tok.text != "::":
            return ""  # `(k)`, `table[i]`, `obj.k`: not a plain name
    return toks[last].text


def _config_end(toks: Sequence[Token], partner: Sequence[int], i: int) -> tuple[int, int] | None:
    """``(index of the last token of the closing ">>>" run, offset of ">>>")`` or None.

    The closer is the last three characters of a run of adjacent ``>`` that is
    followed by ``(`` outside any bracket: ``<<<n >> 8, 256>>>(`` and
    ``<<<g, b, X<Y<int>>>>>(`` both work.
    """
    n = len(toks)
    j = i + 1
    while j < n:
        tok = toks[j]
        text = tok.text
        if tok.kind == "punct":
            if text in ("(", "[", "{"):
                if partner[j] < 0:
                    return None
                j = partner[j]
            elif text in (";", "<<<", ")", "]", "}"):
                return None
            elif is_closing_angles(tok):
                r, chars = j, len(text)
                while r + 1 < n and is_closing_angles(toks[r + 1]) and _adjacent(toks, r):
                    r += 1
                    chars += len(toks[r].text)
                if chars >= 3 and r + 1 < n and toks[r + 1].text == "(":
                    return r, toks[r].end - 3
                j = r
        j += 1
    return None


def _adjacent(toks: Sequence[Token], r: int) -> bool:
    return toks[r].end == toks[r + 1].start


def _count_parts(toks: Sequence[Token], partner: Sequence[int], lo: int, closer: int) -> int:
    """Top-level comma-separated parts of the configuration tokens before offset ``closer``."""
    k = lo
    if k >= len(toks) or toks[k].start >= closer:
        return 0
    parts = 1
    while k < len(toks) and toks[k].start < closer:
        text = toks[k].text
        if text in ("(", "[", "{") and partner[k] > k:
            k = partner[k]
        elif text == "<" and k > lo and toks[k - 1].kind == "ident":
            close = close_angle(toks, k, partner, limit=64)
            k = close if close > 0 and toks[close].start < closer else k
        elif text == ",":
            parts += 1
        k += 1
    return parts
