"""The preprocessor's first translation phases, for the screen: line splices and digraphs.

A compiler joins ``\\``-newline splices and reads the digraphs ``%:`` ``%:%:`` ``<:``
``:>`` ``<%`` ``%>`` as ``#`` ``##`` ``[`` ``]`` ``{`` ``}`` before it sees a name or a
directive, so ``sys\\<newline>tem(...)`` calls ``system`` and ``%:include`` includes. The
screen reads the text these phases produce (:func:`translate`), with every line where it
was, so its findings keep their line numbers. Strings, character literals and comments
are left alone (a digraph in a string is two characters).
"""

from __future__ import annotations

import re

from cudaperf_env.source.tokens import tokenize

_DIGRAPHS = {"%:%:": "##", "%:": "#", "<:": "[", ":>": "]", "<%": "{", "%>": "}"}
# `<::` is `<` then `::` unless followed by `:` or `>` (C++11 [lex.pptoken]/3).
_DIGRAPH = re.compile(r"%:%:|%:|<:(?!:(?![:>]))|:>|<%|%>")


def splice_lines(source: str) -> str:
    """Remove every backslash-newline, adding the lost newlines after the spliced line ends (pure)."""
    if "\\" not in source:
        return source
    out: list[str] = []
    owed = 0
    for piece in re.split(r"(\\\r?\n|\n)", source):
        if piece in ("\\\n", "\\\r\n"):
            owed += 1
        elif piece == "\n":
            out.append("\n" * (owed + 1))
            owed = 0
        else:
            out.append(piece)
    out.append("\n" * owed)
    return "".join(out)


def replace_digraphs(source: str) -> str:
    """Spell every digraph outside strings, characters and comments as its primary token (pure)."""
    if not any(d in source for d in ("%:", "<:", ":>", "<%", "%>")):
        return source
    out: list[str] = []
    last = 0
    for tok in tokenize(source, directives=False):
        if tok.kind in ("string", "char", "comment"):
            out.append(_DIGRAPH.sub(lambda m: _DIGRAPHS[m.group()], source[last : tok.start]))
            out.append(tok.text)
            last = tok.end
    out.append(_DIGRAPH.sub(lambda m: _DIGRAPHS[m.group()], source[last:]))
    return "".join(out)


def translate(source: str) -> str:
    """Phases 1-3 as far as the screen needs them: splices joined, then digraphs spelled out (pure)."""
    return replace_digraphs(splice_lines(source))
