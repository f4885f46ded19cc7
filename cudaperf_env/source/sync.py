"""Which functions may reach a barrier or a warp collective, through the unit's call graph."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cudaperf_env.source.tokens import Token, close_angle, is_closing_angles, match_brackets
from cudaperf_env.source.unit import Unit

# Barriers, warp collectives and cooperative groups (which hold both).
SYNC_NAMES = frozenset(
    {
        "__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or",
        "__syncwarp", "__activemask", "__shfl", "__shfl_up", "__shfl_down", "__shfl_xor",
        "__ballot", "__any", "__all", "this_thread_block", "tiled_partition", "coalesced_threads",
        "thread_block", "thread_block_tile", "binary_partition", "labeled_partition", "this_grid",
        "grid_group", "this_cluster", "cluster_group", "arrive_and_wait", "__barrier_sync",
    }
)
_SYNC_SUFFIX = re.compile(r"__\w+_sync")  # __shfl_down_sync, __ballot_sync, __reduce_add_sync...
_CG_NAMESPACES = frozenset({"cg", "cooperative_groups"})
# Member calls that are cooperative-groups collectives whatever the object.
_CG_METHODS = frozenset(
    {"sync", "shfl", "shfl_down", "shfl_up", "shfl_xor", "ballot", "any", "all", "match_any",
     "match_all", "arrive_and_wait", "barrier_arrive", "barrier_wait"}
)
# Identifiers after which the next name is not being declared.
_NOT_TYPES = frozenset(
    {"return", "case", "goto", "throw", "new", "delete", "sizeof", "else", "do", "co_return",
     "co_yield", "co_await", "typename", "using", "namespace", "struct", "class", "enum", "union",
     "operator", "template", "typedef", "public", "private", "protected", "friend"}
)
_CONTROL = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof"})
_DECL_FOLLOW = frozenset({"=", ";", ",", "[", "{", ")", ":"})
_CAST_TOKENS = frozenset({"::", "*", "&", "<", ">", ",", ">>"})


@dataclass(frozen=True)
class _Names:
    """What a body's identifiers may refer to."""

    functions: frozenset[str]
    macros: frozenset[str]
    types: frozenset[str]
    declared: frozenset[str]  # variables and parameters: calling one is an indirect call
    lambdas: frozenset[str]  # locals holding a lambda, whose body is scanned in place


def reaching_sync(unit: Unit) -> frozenset[str]:
    """Functions (by name) and macros (as ``"#NAME"``) that may reach a barrier or collective.

    A function reaches one when its body, or a function or macro it calls,
    uses ``__syncthreads*``, ``__syncwarp``, a ``__*_sync`` collective,
    ``__activemask`` or cooperative groups, or makes a call it cannot resolve
    (through a function pointer, functor, parameter or unknown method): when
    unsure, it counts as reaching one. Overloads and methods sharing a name
    are merged. Calls to names the unit does not define or declare are taken
    as library functions that do not synchronize.

    Args:
        unit: The parsed translation unit.
    """
    code, partner = unit.code, unit.partner
    functions = frozenset(f.name for f in unit.functions)
    macros = frozenset(unit.macros)
    types = _type_names(code)
    outside = _outside_bodies(unit)
    global_decl, _ = _declared(outside, 0, len(outside), types)
    direct: set[str] = set()
    edges: dict[str, set[str]] = {}
    for f in unit.functions:
        declared, lambdas = _declared(code, f.params[0], f.body[1], types)
        names = _Names(functions, macros, types, declared | global_decl, lambdas)
        syncs, callees = _scan(code, partner, f.body[0] + 1, f.body[1], names)
        _record(f.name, syncs, callees, direct, edges)
    for macro in unit.macros.values():
        body = macro.body
        declared = frozenset(macro.params or ()) | global_decl
        names = _Names(functions, macros, types, declared, frozenset())
        syncs, callees = _scan(body, match_brackets(body), 0, len(body), names)
        _record("#" + macro.name, syncs, callees, direct, edges)
    return _propagate(direct, edges)


def _record(
    node: str, syncs: bool, callees: set[str], direct: set[str], edges: dict[str, set[str]]
) -> None:
    if syncs:
        direct.add(node)
    edges.setdefault(node, set()).update(callees)


def _propagate(direct: set[str], edges: Mapping[str, Iterable[str]]) -> frozenset[str]:
    callers: dict[str, list[str]] = {}
    for caller, callees in edges.items():
        for callee in callees:
            callers.setdefault(callee, []).append(caller)
    reached = set(direct)
    pending = list(direct)
    while pending:
        for caller in callers.get(pending.pop(), ()):
            if caller not in reached:
                reached.add(caller)
                pending.append(caller)
    return frozenset(reached)


def _scan(
    toks: Sequence[Token], partner: Sequence[int], lo: int, hi: int, names: _Names
) -> tuple[bool, set[str]]:
    """``(uses a barrier, collective or unresolved call; functions and macros it calls)``."""
    callees: set[str] = set()
    for k in range(lo, hi):
        tok = toks[k]
        if tok.kind == "ident":
            text = tok.text
            if text in SYNC_NAMES or _SYNC_SUFFIX.fullmatch(text):
                return True, callees
            after = toks[k + 1].text if k + 1 < len(toks) else ""
            if text in _CG_NAMESPACES and after == "::":
                return True, callees
            if text in names.macros:
                callees.add("#" + text)
            if _is_call(toks, partner, k) and not _resolve_call(toks, k, names, callees):
                return True, callees
        elif tok.text == "(" and k > lo and _calls_result(toks, partner, k - 1, names, callees):
            return True, callees
    return False, callees


def _is_call(toks: Sequence[Token], partner: Sequence[int], k: int) -> bool:
    nxt = k + 1
    if nxt < len(toks) and toks[nxt].text == "<":
        close = close_angle(toks, nxt, partner, limit=64)
        nxt = close + 1 if close > 0 else nxt
    return nxt < len(toks) and toks[nxt].text == "("


def _resolve_call(toks: Sequence[Token], k: int, names: _Names, callees: set[str]) -> bool:
    """Adds the callee of the call named at ``toks[k]``; False when it cannot be resolved."""
    text = toks[k].text
    member = k > 0 and toks[k - 1].text in (".", "->")
    if member and text in _CG_METHODS:
        return False
    if text in names.functions:
        callees.add(text)
        return True
    if member:
        return False  # a method the unit does not define: unknown
    return text in names.lambdas or text not in names.declared


def _calls_result(
    toks: Sequence[Token], partner: Sequence[int], closer: int, names: _Names, callees: set[str]
) -> bool:
    """Whether ``toks[closer]`` followed by ``(`` is a call that cannot be resolved.

    Covers ``f(x)(y)``, ``fns[i](y)``, ``(*fp)(y)`` and ``Functor{}(y)``; a cast
    ``(float)(y)`` and a lambda ``[&](int i)`` are not calls.
    """
    text = toks[closer].text
    opener = partner[closer]
    if text not in (")", "]", "}") or opener <= 0:
        return False
    before = toks[opener - 1]
    if text == "]":
        return before.kind == "ident" or before.text in (")", "]")
    if text == "}":
        functor = before.kind == "ident" or is_closing_angles(before)
        if functor and "operator()" in names.functions:
            callees.add("operator()")
        return False
    if before.kind == "ident":
        return before.text not in _CONTROL
    if before.text in (")", "]") or is_closing_angles(before):
        return True
    inner = toks[opener + 1 : closer]
    is_cast = bool(inner) and inner[0].kind == "ident" and inner[0].text not in names.declared
    return not (is_cast and all(t.kind == "ident" or t.text in _CAST_TOKENS for t in inner))


def _declared(
    toks: Sequence[Token], lo: int, hi: int, types: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """Names declared as variables or parameters in ``toks[lo:hi]``, and those holding a lambda."""
    declared: set[str] = set()
    lambdas: set[str] = set()
    for k in range(max(lo, 1), min(hi, len(toks) - 1)):
        tok = toks[k]
        if tok.kind != "ident" or tok.text in types or toks[k + 1].text not in _DECL_FOLLOW:
            continue
        prev = toks[k - 1]
        if prev.text == "*" and k >= 2 and toks[k - 2].text == "(" and toks[k + 1].text == ")":
            declared.add(tok.text)  # a function pointer: `void (*fp)(int)`
            continue
        if prev.text in ("*", "&", "&&") and k >= 2:
            prev = toks[k - 2]
            if prev.text in ("*", "&"):
                prev = toks[k - 3] if k >= 3 else prev
        if (prev.kind == "ident" and prev.text not in _NOT_TYPES) or is_closing_angles(prev):
            if toks[k + 1].text == "=" and k + 2 < len(toks) and toks[k + 2].text == "[":
                lambdas.add(tok.text)
            else:
                declared.add(tok.text)
    return frozenset(declared - lambdas), frozenset(lambdas)


def _type_names(code: Sequence[Token]) -> frozenset[str]:
    """Class, typedef and alias names: calling one is a construction or a cast."""
    types: set[str] = set()
    for k, tok in enumerate(code[:-1]):
        introduces = tok.text in ("struct", "class", "union", "typename")
        aliases = tok.text == "using" and k + 2 < len(code) and code[k + 2].text == "="
        if (introduces and code[k + 1].kind == "ident") or aliases:
            types.add(code[k + 1].text)
        elif tok.text == ";" and k >= 1 and code[k - 1].kind == "ident":
            j = k - 1
            while j > 0 and code[j].text not in (";", "{", "}", "typedef") and k - j < 64:
                j -= 1
            if code[j].text == "typedef":
                types.add(code[k - 1].text)
    return frozenset(types)


def _outside_bodies(unit: Unit) -> list[Token]:
    """Tokens outside every function's parameters and body: globals and members."""
    out: list[Token] = []
    at = 0
    for f in unit.functions:
        out.extend(unit.code[at : f.params[0]])
        at = f.body[1] + 1
    out.extend(unit.code[at:])
    return out
