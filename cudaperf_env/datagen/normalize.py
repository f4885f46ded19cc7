"""Normalized form of a C reference, for finding tasks that differ only in names and constants."""

from __future__ import annotations

import hashlib

from cudaperf_env.source.tokens import Token, directive_name, directive_tokens, tokenize

# Kept verbatim: keywords and types change what is computed; other names are renamed by order of appearance.
C_KEYWORDS = frozenset(
    {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
        "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
        "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "size_t",
        "bool",
    }
)


def normalized_reference(source: str, entry: str) -> str:
    """The reference's tokens with comments dropped, local names and numeric literals replaced.

    Identifiers that are C keywords, or called functions other than the entry and
    helpers the source defines itself (``expf``, ``fmaxf`` ...), stay; every other
    name becomes ``v<k>`` in order of first appearance, every number ``0``. The
    bodies of ``#define`` lines are normalized the same way (a constant in a macro
    is a literal too); other directives (``#include``) stay as written. Two
    references with the same normalized form compute the same thing up to names
    and constants.

    Args:
        source: C source of the reference.
        entry: Name of the entry function (renamed like a local).

    Returns:
        The normalized token stream, space separated.
    """
    tokens = _code_and_defines(source)
    defined = {entry} | {t.text for i, t in enumerate(tokens[1:-1], 1) if _is_definition(tokens, i)}
    renames: dict[str, str] = {}
    out = []
    for i, tok in enumerate(tokens):
        if tok.kind == "number":
            out.append("0")
        elif tok.kind == "ident" and tok.text not in C_KEYWORDS:
            called = i + 1 < len(tokens) and tokens[i + 1].text == "("
            if called and tok.text not in defined:
                out.append(tok.text)
            else:
                out.append(renames.setdefault(tok.text, f"v{len(renames)}"))
        else:
            out.append(tok.text)
    return " ".join(out)


def _code_and_defines(source: str) -> list[Token]:
    """``source`` without comments, each ``#define`` line split into ``#define``, its tokens and a newline."""
    out: list[Token] = []
    for tok in tokenize(source):
        if tok.kind == "comment":
            continue
        if tok.kind == "directive" and directive_name(tok) == "define":
            inner = directive_tokens(source, tok)[1:]  # after the name "define"
            out += [tok._replace(kind="punct", text="#define"), *inner, tok._replace(kind="punct", text="\n")]
        else:
            out.append(tok)
    return out


def _is_definition(tokens: list[Token], i: int) -> bool:
    """``tokens[i]`` names a function being defined: a type before it, ``(`` after, and a body later."""
    tok = tokens[i]
    if tok.kind != "ident" or tokens[i + 1].text != "(" or tokens[i - 1].text not in C_KEYWORDS | {"*"}:
        return False
    depth = 0
    for j in range(i + 1, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j].text, 0)
        if depth == 0:
            return j + 1 < len(tokens) and tokens[j + 1].text == "{"
    return False


def dedupe_key(source: str, entry: str) -> str:
    """A short digest of :func:`normalized_reference`."""
    return hashlib.sha256(normalized_reference(source, entry).encode()).hexdigest()[:16]
