"""A small, fast tokenizer for C, C++ and CUDA source, with offsets and line numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

# Longest first: the regex alternation takes the first alternative that matches.
# `<<<` and `>>>` are CUDA's launch chevrons; `>>>` also closes three template
# argument lists (`A<B<C<int>>>`), so consumers count `>` characters, not tokens.
_PUNCT = (
    r"%:%:|\.\.\.|<<<|>>>|<<=|>>=|<=>|->\*|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\|"
    r"|[*/%+\-&^|]=|##|\.\*|[{}\[\]()<>;:,.?~!+\-*/%^&|=#\\@`]"
)
_PREFIX = r"(?:u8|[uUL])?"
# Unterminated comments and raw strings run to the end of the text: one linear
# scan, never a rescan per start (a screen runs on hostile input).
_BODY = (
    r"(?P<comment>//(?:\\\r?\n|[^\n])*|/\*[\s\S]*?(?:\*/|\Z))"
    rf"|(?P<string>{_PREFIX}R\"(?P<delim>[^ ()\\\t\v\f\n\"]{{0,16}})\("
    r"(?:[\s\S]*?\)(?P=delim)\"|[\s\S]*)"
    rf"|{_PREFIX}\"(?:\\[\s\S]|[^\"\\\n])*\"?)"
    rf"|(?P<char>{_PREFIX}'(?:\\[\s\S]|[^'\\\n])*'?)"
    r"|(?P<number>\.?\d(?:[eEpP][+-]|'(?=[0-9A-Za-z_])|[\w.])*)"
    r"|(?P<ident>(?:[^\W\d]|\$)[\w$]*)"
    r"|(?P<ws>[ \t\f\v\r]+|\n+|\\\r?\n)"
    rf"|(?P<punct>{_PUNCT})"
    r"|(?P<other>[\s\S])"
)
_DIRECTIVE = r"(?P<directive>^[ \t]*#(?:\\\r?\n|/\*[\s\S]*?(?:\*/|\Z)|[^\n])*)"
_WITH_DIRECTIVES = re.compile(f"{_DIRECTIVE}|{_BODY}", re.MULTILINE)
_WITHOUT_DIRECTIVES = re.compile(_BODY, re.MULTILINE)
_DIRECTIVE_HEAD = re.compile(r"[ \t]*#[ \t]*(\w*)")
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# Tokens that end any template argument list search.
_ANGLE_STOPS = frozenset({";", "{", "}", "&&", "||", "<<<"})


class Token(NamedTuple):
    """One token of C/C++/CUDA source.

    A NamedTuple rather than a dataclass: a submission has thousands of tokens
    and tuples are several times cheaper to build.

    Attributes:
        kind: ``ident``, ``number``, ``string`` (raw strings too), ``char``,
            ``comment``, ``directive`` (a whole preprocessor line with its
            continuations), ``punct`` or ``other`` (a stray character).
        text: The exact source text, ``source[start:end]``.
        start: Offset of the first character.
        end: Offset one past the last character.
        line: 1-based line of the first character.
    """

    kind: str
    text: str
    start: int
    end: int
    line: int


def tokenize(
    source: str, start: int = 0, end: int | None = None, *, line: int = 1, directives: bool = True
) -> tuple[Token, ...]:
    """Splits ``source[start:end]`` into tokens, dropping whitespace.

    Args:
        source: The text.
        start: Offset to start at; offsets in the tokens are into ``source``.
        end: Offset to stop at (default: the end of ``source``).
        line: Line number of ``source[start]``.
        directives: Whether a ``#`` at the start of a line begins a directive
            token; False inside a directive's own body.

    Returns:
        The tokens in order, comments and directives included.
    """
    pattern = _WITH_DIRECTIVES if directives else _WITHOUT_DIRECTIVES
    out: list[Token] = []
    append = out.append
    new = tuple.__new__  # Token(...) without the keyword-handling wrapper: the hot path
    for m in pattern.finditer(source, start, len(source) if end is None else end):
        kind = m.lastgroup
        text = m.group()
        if kind != "ws":
            append(new(Token, (kind, text, *m.span(), line)))
        if "\n" in text:
            line += text.count("\n")
    return tuple(out)


def join_tokens(toks: Sequence[Token]) -> str:
    """The tokens' text on one line: one space wherever the source had a gap."""
    out: list[str] = []
    for k, tok in enumerate(toks):
        if k and tok.start > toks[k - 1].end:
            out.append(" ")
        out.append(tok.text)
    return "".join(out)


def directive_name(token: Token) -> str:
    """The directive's name (``"include"``, ``"define"``...), ``""`` for a lone ``#``."""
    m = _DIRECTIVE_HEAD.match(token.text.replace("\\\n", ""))
    return m.group(1) if m else ""


def directive_tokens(source: str, token: Token) -> tuple[Token, ...]:
    """The tokens of a directive after its ``#`` (name first), comments dropped.

    Args:
        source: The text ``token`` came from (offsets are kept).
        token: A ``directive`` token.
    """
    begin = token.start + token.text.index("#") + 1
    inner = tokenize(source, begin, token.end, line=token.line, directives=False)
    return tuple(t for t in inner if t.kind != "comment")


def code_tokens(
    source: str, tokens: Sequence[Token]
) -> tuple[tuple[Token, ...], tuple[Token, ...]]:
    """Separates compiled code from directives, dropping comments and ``#if 0`` regions.

    Args:
        source: The text the tokens came from.
        tokens: ``tokenize(source)``.

    Returns:
        ``(code, directives)``: tokens that are neither comments nor directives,
        and the directive tokens, both outside ``#if 0`` ... ``#else/#elif/#endif``.
    """
    code: list[Token] = []
    directives: list[Token] = []
    dead = 0  # nesting depth inside an `#if 0` group; 0: live
    for tok in tokens:
        if tok.kind == "directive":
            name = directive_name(tok)
            if dead:
                if name in ("if", "ifdef", "ifndef"):
                    dead += 1
                elif name == "endif" or (dead == 1 and name in ("else", "elif")):
                    dead -= 1
                continue
            if name == "if" and _condition(source, tok) == ("0",):
                dead = 1
                continue
            directives.append(tok)
        elif tok.kind != "comment" and not dead:
            code.append(tok)
    return tuple(code), tuple(directives)


def _condition(source: str, token: Token) -> tuple[str, ...]:
    return tuple(t.text for t in directive_tokens(source, token)[1:])


def match_brackets(tokens: Sequence[Token]) -> tuple[int, ...]:
    """For each ``( [ {`` and ``) ] }`` token, the index of its partner, else -1.

    Unbalanced brackets are tolerated: a closer that does not match the
    innermost open bracket is ignored, and unclosed openers keep -1.
    """
    partner = [-1] * len(tokens)
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "punct":
            continue
        if tok.text in _OPENERS:
            stack.append(i)
        elif tok.text in _CLOSERS and stack and tokens[stack[-1]].text == _CLOSERS[tok.text]:
            j = stack.pop()
            partner[i] = j
            partner[j] = i
    return tuple(partner)


def is_closing_angles(tok: Token) -> bool:
    """Whether the token is ``>``, ``>>`` or ``>>>`` (closes template arguments)."""
    return tok.kind == "punct" and tok.text[0] == ">" and tok.text.count(">") == len(tok.text)


def close_angle(tokens: Sequence[Token], i: int, partner: Sequence[int], limit: int = 256) -> int:
    """Index of the token holding the ``>`` that closes the ``<`` at ``tokens[i]``.

    Parenthesised and bracketed groups are skipped whole; ``;``, braces,
    ``&&``, ``||``, an unmatched closer, or ``limit`` tokens end the search.

    Returns:
        The index, or -1 when ``tokens[i]`` does not open template arguments.
    """
    depth = 0
    j = i
    stop = min(len(tokens), i + limit)
    while j < stop:
        tok = tokens[j]
        text = tok.text
        if tok.kind == "punct":
            if text == "<":
                depth += 1
            elif is_closing_angles(tok):
                depth -= len(text)
                if depth <= 0:
                    return j
            elif text in ("(", "["):
                if partner[j] < 0:
                    return -1
                j = partner[j]
            elif text in _ANGLE_STOPS or text in _CLOSERS:
                return -1
        j += 1
    return -1


def open_angle(tokens: Sequence[Token], j: int, partner: Sequence[int], limit: int = 256) -> int:
    """Index of the ``<`` matching the closing angles at ``tokens[j]``, searching backwards.

    Returns:
        The index, or -1 when no template argument list ends at ``tokens[j]``.
    """
    depth = 0
    stop = max(-1, j - limit)
    while j > stop:
        tok = tokens[j]
        text = tok.text
        if tok.kind == "punct":
            if is_closing_angles(tok):
                depth += len(text)
            elif text == "<":
                depth -= 1
                if depth == 0:
                    return j
            elif text in (")", "]"):
                if partner[j] < 0:
                    return -1
                j = partner[j]
            elif text in _ANGLE_STOPS or text in _OPENERS:
                return -1
        j -= 1
    return -1
