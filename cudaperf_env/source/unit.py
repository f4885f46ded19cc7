"""A translation unit's structure from its tokens: function definitions and macros."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from cudaperf_env.source.tokens import (
    Token,
    close_angle,
    code_tokens,
    directive_name,
    directive_tokens,
    match_brackets,
    open_angle,
    tokenize,
)

# Words in a declaration head that the analyses care about.
SPECIFIERS = frozenset(
    {"__global__", "__device__", "__host__", "__forceinline__", "__noinline__", "static", "inline"}
)
# Function-like annotations whose parentheses never hold a parameter list.
_ANNOTATIONS = frozenset(
    {
        "__launch_bounds__", "__attribute__", "__attribute", "__align__", "alignas", "__declspec",
        "decltype", "noexcept", "throw", "__cluster_dims__", "__maxnreg__", "requires", "sizeof",
        "_Pragma",
    }
)
_CONTROL = frozenset({"if", "for", "while", "switch", "catch", "return", "do", "else"})
_CLASS_KEYS = frozenset({"struct", "class", "union"})
_ACCESS = frozenset({"public", "private", "protected"})
_MACRO_DEPTH = 8


@dataclass(frozen=True)
class Function:
    """A function definition (one with a body).

    Attributes:
        name: Simple name: ``"saxpy"``, ``"operator()"``, ``"Foo"`` for a constructor.
        specifiers: CUDA and storage specifiers of the head (object-like
            macros expanded): ``__global__``, ``__device__``, ``__host__``, ...
        line: Line of the name.
        params: Code-token indices of the parameter list's ``(`` and ``)``.
        body: Code-token indices of the body's ``{`` and ``}``.
    """

    name: str
    specifiers: frozenset[str]
    line: int
    params: tuple[int, int]
    body: tuple[int, int]

    @property
    def is_kernel(self) -> bool:
        """Whether the function is a ``__global__`` kernel."""
        return "__global__" in self.specifiers

    @property
    def on_device(self) -> bool:
        """Whether the function runs on the device (``__global__`` or ``__device__``)."""
        return "__global__" in self.specifiers or "__device__" in self.specifiers


@dataclass(frozen=True)
class Macro:
    """A ``#define``.

    Attributes:
        name: The macro's name.
        params: Parameter names of a function-like macro, None for an object-like one.
        body: Tokens of the replacement list (comments dropped).
        line: Line of the ``#define``.
    """

    name: str
    params: tuple[str, ...] | None
    body: tuple[Token, ...]
    line: int


@dataclass(frozen=True)
class Unit:
    """A parsed translation unit.

    Attributes:
        source: The text.
        code: Compiled tokens: no comments, no directives, nothing under ``#if 0``.
        partner: ``match_brackets(code)``.
        directives: Directive tokens outside ``#if 0`` regions.
        defines: Every ``#define`` in source order.
        macros: The macros by name (the last definition wins).
        functions: Function definitions in source order.
    """

    source: str
    code: tuple[Token, ...]
    partner: tuple[int, ...]
    directives: tuple[Token, ...]
    defines: tuple[Macro, ...]
    macros: Mapping[str, Macro]
    functions: tuple[Function, ...]

    def enclosing(self, index: int) -> Function | None:
        """The function whose body holds ``code[index]``, if any."""
        k = bisect.bisect_left(self.functions, index, key=lambda f: f.body[0]) - 1
        if k >= 0 and self.functions[k].body[0] < index < self.functions[k].body[1]:
            return self.functions[k]
        return None


def parse(source: str) -> Unit:
    """Parses a translation unit's functions and macros (no preprocessing, no types).

    Args:
        source: C++/CUDA source text.

    Returns:
        The unit; malformed code gives partial results, never an exception.
    """
    code, directives = code_tokens(source, tokenize(source))
    partner = match_brackets(code)
    defines = _defines(source, directives)
    macros = {m.name: m for m in defines}
    functions = _functions(code, partner, macros)
    return Unit(source, code, partner, directives, defines, MappingProxyType(macros), functions)


def _defines(source: str, directives: Sequence[Token]) -> tuple[Macro, ...]:
    defines: list[Macro] = []
    for directive in directives:
        if directive_name(directive) != "define":
            continue
        toks = directive_tokens(source, directive)
        if len(toks) < 2 or toks[1].kind != "ident":
            continue
        name = toks[1]
        params: tuple[str, ...] | None = None
        body_at = 2
        if len(toks) > 2 and toks[2].text == "(" and toks[2].start == name.end:
            close = next((k for k in range(3, len(toks)) if toks[k].text == ")"), len(toks) - 1)
            params = tuple(t.text for t in toks[3:close] if t.text != ",")
            body_at = close + 1
        defines.append(Macro(name.text, params, toks[body_at:], directive.line))
    return tuple(defines)


def _functions(
    code: Sequence[Token], partner: Sequence[int], macros: Mapping[str, Macro]
) -> tuple[Function, ...]:
    """Definitions at namespace and class scope (a worklist: deep nesting must not recurse)."""
    found: list[Function] = []
    work = [(0, len(code))]
    while work:
        lo, hi = work.pop()
        head = i = lo
        while i < hi:
            tok = code[i]
            text = tok.text
            if tok.kind != "punct":
                i += 1
                continue
            if text in ("(", "[") and partner[i] > i:
                i = partner[i]
            elif text in (";", "}") or (text == ":" and i > head and code[i - 1].text in _ACCESS):
                head = i + 1
            elif text == "{":
                close = partner[i] if partner[i] > i else hi
                kind = _classify(code, partner, head, i, macros)
                if kind == "scope":
                    work.append((i + 1, close))
                elif isinstance(kind, Function):
                    found.append(kind)
                if kind != "member-init":
                    head = close + 1
                i = close
            i += 1
    return tuple(sorted(found, key=lambda f: f.body[0]))


def _classify(
    code: Sequence[Token], partner: Sequence[int], lo: int, brace: int, macros: Mapping[str, Macro]
) -> Function | str:
    """What the ``{`` at ``brace`` opens, given the declaration head ``code[lo:brace]``.

    Returns:
        A Function, ``"scope"`` (namespace, class or ``extern "C"`` body),
        ``"member-init"`` (a constructor's ``member{...}``) or ``"skip"``.
    """
    lo = _skip_templates(code, partner, lo, brace)
    if lo >= brace:
        return "skip"
    words = {t.text for t in code[lo:brace] if t.kind == "ident"}
    if "namespace" in words or (brace == lo + 2 and code[lo].text == "extern"):  # extern "C" {
        return "scope"
    if "enum" in words:
        return "skip"
    found = _declarator(code, partner, lo, brace)
    if found is None:
        return "scope" if words & _CLASS_KEYS else "skip"
    name, name_at, open_paren = found
    close_paren = partner[open_paren]
    if (
        close_paren + 1 < brace
        and code[close_paren + 1].text == ":"
        and (code[brace - 1].kind == "ident" or code[brace - 1].text.startswith(">"))
    ):
        return "member-init"
    specs = _specifiers(code[lo:name_at], macros)
    line = code[name_at].line
    return Function(name, specs, line, (open_paren, close_paren), (brace, partner[brace]))


def _skip_templates(code: Sequence[Token], partner: Sequence[int], lo: int, hi: int) -> int:
    while lo + 1 < hi and code[lo].text == "template" and code[lo + 1].text == "<":
        close = close_angle(code, lo + 1, partner)
        if close < 0:
            return hi
        lo = close + 1
    return lo


def _declarator(
    code: Sequence[Token], partner: Sequence[int], lo: int, hi: int
) -> tuple[str, int, int] | None:
    """``(name, its index, index of the parameter list's "(")`` if the head declares a function."""
    k = lo
    while k < hi:
        tok = code[k]
        text = tok.text
        if text == "=":  # a variable's initializer (maybe a lambda)
            return None
        if text == "operator" and tok.kind == "ident":
            return _operator(code, partner, k, hi)
        if text == "[" and partner[k] > k:  # attributes `[[...]]`
            k = partner[k]
        elif text == "(" and tok.kind == "punct":
            close = partner[k]
            if close < 0 or close >= hi:
                return None
            prev = code[k - 1] if k > lo else None
            if prev is not None and prev.kind == "ident" and prev.text not in _ANNOTATIONS:
                if prev.text in _CONTROL:
                    return None
                return prev.text, k - 1, k
            if prev is not None and prev.text.startswith(">"):  # explicit specialization
                at = open_angle(code, k - 1, partner)
                if at > lo and code[at - 1].kind == "ident":
                    return code[at - 1].text, at - 1, k
            k = close
        elif text == "<" and k > lo and code[k - 1].kind == "ident":
            close = close_angle(code, k, partner)
            k = close if close > 0 else k
        k += 1
    return None


def _operator(
    code: Sequence[Token], partner: Sequence[int], at: int, hi: int
) -> tuple[str, int, int] | None:
    k = at + 1
    if k + 1 < hi and code[k].text == "(" and code[k + 1].text == ")":
        k += 2
    while k < hi and code[k].text != "(":
        k += 1
    if k >= hi or partner[k] < 0:
        return None
    return "operator" + "".join(t.text for t in code[at + 1 : k]), at, k


def _specifiers(head: Sequence[Token], macros: Mapping[str, Macro]) -> frozenset[str]:
    found: set[str] = set()
    pending = [(t, 0) for t in head if t.kind == "ident"]
    while pending:
        tok, depth = pending.pop()
        if tok.text in SPECIFIERS:
            found.add(tok.text)
        elif depth < _MACRO_DEPTH and tok.text in macros and macros[tok.text].params is None:
            pending.extend((t, depth + 1) for t in macros[tok.text].body if t.kind == "ident")
    return frozenset(found)
