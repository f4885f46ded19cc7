"""Many trusted implementations in one nvcc build: one shared library, one call symbol per unit.

Each nvcc build pays about 0.8 s of fixed cost (cudafe++, the host compiler over
the CUDA headers, cicc, the link); a bundle pays it once for many units. Every
unit goes into its own namespace with its ``#include`` lines hoisted to the top,
its C-linkage entry renamed (a C name is global even inside a namespace), its
macros restored when it ends (``push_macro``/``pop_macro``), and its own exported
``int cudaperf_call_<id>(void** argv, char* err, int err_len)`` shim. ``#line``
directives name each unit's file ``unit<id>.cu``, so diagnostics keep the unit's
own line numbers and say which unit failed.

Units that could mean something else inside a namespace are built alone
(``bundle_blockers``); a bundle that does not compile is split by the units its
log names, or else bisected, so one bad unit never loses the others.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.backends.harness import CALL_SYMBOL, call_shim, entry_declaration, wrap
from cudaperf_env.source.tokens import Token, directive_name, directive_tokens, join_tokens, tokenize
from cudaperf_env.source.unit import Unit, parse
from cudaperf_env.tasks.schema import Task
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.native import build_library

BundleUnit = tuple[Task, str]
"""An implementation to bundle: its task and its complete source."""

_PRAGMAS = frozenset({"unroll", "nounroll", "once", "push_macro", "pop_macro"})  # they leave no state behind
_DIRECTIVES = frozenset({"include", "define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "error",
                         "warning", "line", "pragma", ""})  # fmt: skip
_CONDITIONALS = {"if": 1, "ifdef": 1, "ifndef": 1, "endif": -1}
_ANNOTATIONS = frozenset({"__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__",
                          "__cluster_dims__", "__maxnreg__", "decltype", "noexcept"})  # fmt: skip
_EXTERNAL_NAMESPACES = frozenset({"std", "cuda", "cub", "thrust", "cooperative_groups", "nvcuda", "cutlass",
                                  "cute", "__gnu_cxx"})  # fmt: skip
_KEYWORDS = frozenset({"return", "throw", "case", "new", "delete", "else", "do", "const", "volatile", "static",
                       "extern", "inline", "typename", "co_return", "co_yield", "co_await", "__device__", "__host__",
                       "__global__", "__forceinline__"})  # words after which `::` begins a global name  # fmt: skip
_CONSTANT_INIT = frozenset({"constexpr", "__constant__", "__device__", "__shared__", "__managed__", "typedef",
                            "using", "template", "consteval", "constinit"})  # fmt: skip
_NOT_CALLS = frozenset({"sizeof", "alignof", "decltype", "static_cast", "reinterpret_cast", "const_cast",
                        "float", "double", "int", "unsigned", "long", "short", "char", "bool", "size_t"})  # fmt: skip
_MATH = ("acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 exp10 expm1 fabs "
         "fdim floor fma fmax fmin fmod frexp hypot ilogb isfinite isinf isnan ldexp lgamma llrint llround log log10 "
         "log1p log2 logb lrint lround modf nan nearbyint nextafter pow remainder remquo rint round rsqrt scalbn "
         "signbit sin sincos sinh sqrt tan tanh tgamma trunc erfinv erfcinv normcdf normcdfinv sinpi cospi rcbrt "
         "rhypot norm3d rnorm3d j0 j1 y0 y1")  # fmt: skip
_CUDA = (
    "min max abs labs llabs umin umax llmin llmax ullmin ullmax saturate atomicAdd atomicSub atomicExch "
    "atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr atomicXor"
)
# Global functions that a file-scope definition of the same name would hide inside
# a namespace (at the unit's own file scope it overloads them instead).
_GLOBAL_FUNCTIONS = frozenset(_MATH.split() + [f"{m}f" for m in _MATH.split()] + _CUDA.split())  # noqa: SIM905
_UNIT_FILE = re.compile(r"\bunit(\d+)(?:_harness)?\.cu\b")
_UNIT_NAMESPACE = re.compile(r"cudaperf_unit(\d+)_")
_ERROR = re.compile(r"\berror(?:\s+#\d+(?:-D)?)?\s*:|undefined reference", re.IGNORECASE)


def unit_namespace(uid: int) -> str:
    """The namespace that holds unit ``uid`` (its mangled names carry it)."""
    return f"cudaperf_unit{uid}_"


def unit_symbol(uid: int) -> str:
    """The exported call symbol of unit ``uid``: ``int (void** argv, char* err, int err_len)``."""
    return f"{CALL_SYMBOL}_{uid}"


def renamed_entry(task: Task, uid: int) -> str:
    """The unit's C-linkage entry name, unique across the bundle."""
    return f"{task.entry}_{unit_namespace(uid)}"


@dataclass(frozen=True)
class Bundle:
    """One translation unit that holds many implementations.

    Attributes:
        source: The ``.cu`` text.
        ids: Each unit's id: its code is ``unit<id>.cu`` in diagnostics.
        symbols: Each unit's exported call symbol, in the same order.
    """

    source: str
    ids: tuple[int, ...]
    symbols: tuple[str, ...]


@dataclass(frozen=True)
class UnitBuild:
    """Where one unit's call shim lives, or why it does not build.

    Attributes:
        library: The shared library (None when the unit does not compile).
        symbol: Its exported call symbol: ``cudaperf_call_<id>`` in a bundle,
            ``cudaperf_call`` when built alone (exactly as ``CudaBackend.build``).
        log: Compiler diagnostics of its own build (its own line numbers), "" when bundled.
        bundled: Whether it shares its library with other units.
        note: Why it was built alone ("" when bundled).
    """

    library: Path | None
    symbol: str
    log: str
    bundled: bool
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.library is not None


def bundle_blockers(task: Task, source: str) -> tuple[str, ...]:
    """Why ``source`` cannot share a translation unit with others ("()" when it can).

    Each reason is a construct that would fail or change meaning inside a
    namespace or next to other units; such units are built alone instead.
    """
    return _blockers(task.entry, source)


@lru_cache(maxsize=16384)  # bundle_source and every re-bundle after a failure ask again
def _blockers(entry: str, source: str) -> tuple[str, ...]:
    unit = parse(source)
    at_file_scope = _file_scope(unit.code, unit.partner)
    reasons = [*_directive_blockers(source, tokenize(source)), *_linkage_blockers(entry, unit.code)]
    reasons += _scope_blockers(unit, at_file_scope)
    mentions = [k for k, t in enumerate(unit.code) if t.kind == "ident" and t.text == entry]
    if not mentions:
        reasons.append(f"the entry `{entry}` is not spelled out in the code (made by a macro?)")
    if len(_renames(unit.code, entry, entry)) < len(mentions):  # some mention is `x.entry` or `ns::entry`
        reasons.append(f"`{entry}` also names a member or another scope's name (`x.{entry}`, `ns::{entry}`)")
    if any(_UNIT_NAMESPACE.search(t.text) for t in unit.code if t.kind == "ident"):
        reasons.append("uses a `cudaperf_unit<N>_` name, which bundling reserves")
    return tuple(dict.fromkeys(reasons))


def _directive_blockers(source: str, tokens: Sequence[Token]) -> list[str]:
    reasons, depth, defined = [], 0, False
    for tok in tokens:
        if tok.kind != "directive":
            continue
        name = directive_name(tok)
        if name == "include" and (depth or defined):
            reasons.append("an `#include` after a `#define` or inside `#if` cannot be hoisted")
        elif name == "pragma":
            words = directive_tokens(source, tok)[1:2]
            if words and words[0].text not in _PRAGMAS:
                reasons.append(f"`#pragma {words[0].text}` may change state for the units after it")
        elif name not in _DIRECTIVES:
            reasons.append(f"`#{name}` is not supported in a bundle")
        depth += _CONDITIONALS.get(name, 0)
        defined = defined or name in ("define", "undef")
    return reasons


def _linkage_blockers(entry: str, code: Sequence[Token]) -> list[str]:
    """C-linkage names other than the entry are global in every namespace: they would collide."""
    reasons = []
    for i in range(len(code) - 2):
        if code[i].text != "extern" or code[i + 1].text != '"C"':
            continue
        if code[i + 2].text == "{":
            reasons.append('an `extern "C" { ... }` block (its names would be global across units)')
            continue
        name = _declared_name(code, i + 2)
        if name != entry:
            reasons.append(f'`extern "C"` declares `{name or "a variable"}`, which would be global across units')
    for i in range(len(code) - 2):
        if code[i].text == "namespace" and code[i + 1].text in _EXTERNAL_NAMESPACES and code[i + 2].text in ("{", "::"):
            reasons.append(f"reopens `namespace {code[i + 1].text}` (it would become a nested namespace)")
        if code[i].text == "template" and code[i + 1].text == "<" and code[i + 2].text == ">":
            head = _statement(code, i)
            if any(t.text in _EXTERNAL_NAMESPACES and n.text == "::" for t, n in zip(head, head[1:], strict=False)):
                reasons.append("specializes a library template (it must stay in the library's namespace)")
    return reasons


def _scope_blockers(unit: Unit, at_file_scope: list[bool]) -> list[str]:
    reasons, code = [], unit.code
    functions = {f.name for f in unit.functions if at_file_scope[f.params[0]]}
    for name in sorted(functions & _GLOBAL_FUNCTIONS):
        reasons.append(f"defines `{name}` at file scope, which would hide the global `{name}` in a namespace")
    for i, tok in enumerate(code):
        prev = code[i - 1] if i else None
        after = code[i + 1].text if i + 1 < len(code) else ""
        if tok.text == "::" and after in functions and (prev is None or _starts_name(prev)):
            reasons.append(f"`::{after}` names the global scope, which the unit no longer is")
        elif not at_file_scope[i]:
            continue
        elif tok.text in ("asm", "__asm__") and (prev is None or prev.text in (";", "}", "{")):
            reasons.append("file-scope `asm` would be emitted once for the whole bundle")
        elif tok.text == "=" and _dynamic_initializer(code, i):
            reasons.append("a global with a dynamic initializer would run when any unit of the bundle loads")
    return reasons


def _starts_name(prev: Token) -> bool:
    """Whether a ``::`` after ``prev`` begins a name (``::f``) rather than continuing one (``A::f``)."""
    return (prev.kind != "ident" or prev.text in _KEYWORDS) and not prev.text.endswith(">")


def _file_scope(code: Sequence[Token], partner: Sequence[int]) -> list[bool]:
    """For each code token, whether it sits at namespace scope outside parentheses."""
    flags = [True] * len(code)
    i = 0
    while i < len(code):
        text = code[i].text
        opens_scope = text == "{" and ("namespace" in {t.text for t in _head(code, i)} or code[i - 1].text == '"C"')
        if text in ("(", "[", "{") and partner[i] > i and not opens_scope:
            flags[i + 1 : partner[i]] = [False] * (partner[i] - i - 1)
            i = partner[i]
        i += 1
    return flags


def _head(code: Sequence[Token], i: int) -> list[Token]:
    """The tokens of the declaration before ``code[i]`` (back to the last ``;``, ``{`` or ``}``)."""
    k = i
    while k > 0 and code[k - 1].text not in (";", "{", "}"):
        k -= 1
    return list(code[k:i])


def _statement(code: Sequence[Token], i: int) -> list[Token]:
    """The tokens from ``code[i]`` up to the next ``;`` or ``{``."""
    k = i
    while k < len(code) and code[k].text not in (";", "{"):
        k += 1
    return list(code[i:k])


def _declared_name(code: Sequence[Token], i: int) -> str:
    """The function name a declaration starting at ``code[i]`` declares ("" for a variable)."""
    for k, tok in enumerate(_statement(code, i)[:-1]):
        after = code[i + k + 1].text
        if after == "=":
            return ""
        if tok.kind == "ident" and after == "(" and tok.text not in _ANNOTATIONS:
            return tok.text
    return ""


def _dynamic_initializer(code: Sequence[Token], eq: int) -> bool:
    """Whether the file-scope ``=`` at ``code[eq]`` starts an initializer that calls a function."""
    if {t.text for t in _head(code, eq)} & _CONSTANT_INIT or any(t.text == "[" for t in code[eq + 1 : eq + 2]):
        return False  # constant, or a lambda
    k = eq + 1
    while k + 1 < len(code) and code[k].text != ";":
        if code[k].kind == "ident" and code[k + 1].text == "(" and code[k].text not in _NOT_CALLS:
            return True
        k += 1
    return False


def hoisted_includes(source: str) -> tuple[str, ...]:
    """The unit's ``#include`` lines, normalized (``#include <math.h>``), in order."""
    return tuple(_include_line(source, t) for t in tokenize(source) if _is_include(t))


def _is_include(tok: Token) -> bool:
    return tok.kind == "directive" and directive_name(tok) == "include"


def _include_line(source: str, tok: Token) -> str:
    return "#include " + join_tokens(directive_tokens(source, tok)[1:])


def bundle_source(units: Sequence[BundleUnit], ids: Sequence[int] | None = None) -> Bundle:
    """One ``.cu`` text with every unit isolated in its own namespace, with its own call shim.

    Args:
        units: ``(task, source)`` pairs; none may have ``bundle_blockers``.
        ids: Each unit's id (default ``0..n-1``): it names the unit's file, namespace and symbol.

    Raises:
        ValueError: A unit has blockers (build it alone), or the ids are not one unique id per unit.
    """
    ids = tuple(range(len(units))) if ids is None else tuple(ids)
    if len(set(ids)) != len(ids) or len(ids) != len(units):
        raise ValueError(f"need one unique id per unit; got {len(ids)} ids ({len(set(ids))} unique) for {len(units)}")
    includes: dict[str, tuple[int, int]] = {}  # include line -> the first (unit, line) with it
    parts = []
    for uid, (task, source) in zip(ids, units, strict=True):
        blockers = bundle_blockers(task, source)
        if blockers:
            raise ValueError(f"unit {uid} ({task.id}) cannot be bundled: {'; '.join(blockers)}; build it alone")
        tokens = tokenize(source)
        for tok in filter(_is_include, tokens):
            includes.setdefault(_include_line(source, tok), (uid, tok.line))
        parts.append(_unit_text(task, source, tokens, uid))
    # A hoisted include keeps the file and line of its first unit: a missing header blames that unit.
    head = "".join(f'#line {line} "unit{uid}.cu"\n{text}\n' for text, (uid, line) in includes.items())
    return Bundle(head + "".join(parts), ids, tuple(unit_symbol(uid) for uid in ids))


def _unit_text(task: Task, source: str, tokens: Sequence[Token], uid: int) -> str:
    """The unit in its namespace: entry declaration, code, macro restore, then its call shim."""
    renamed = replace(task, entry=renamed_entry(task, uid))
    body = _rewrite(source, tokens, task.entry, renamed.entry)
    directives = [t for t in tokens if t.kind == "directive"]
    names = [_macro_name(source, t) for t in directives if directive_name(t) in ("define", "undef")]
    macros = list(dict.fromkeys(renamed.entry if m == task.entry else m for m in names if m))
    declaration = entry_declaration(renamed)  # inside the namespace too: the definition inherits C linkage
    shim = call_shim(renamed, symbol=unit_symbol(uid))
    return (
        "".join(f'#pragma push_macro("{m}")\n' for m in macros)
        + f'#line 1 "unit{uid}_harness.cu"\n{declaration}'
        + f"namespace {unit_namespace(uid)} {{\n{declaration}"
        + f'#line 1 "unit{uid}.cu"\n{body}'
        + ("" if body.endswith("\n") else "\n")
        + f'#line 4 "unit{uid}_harness.cu"\n}}\n'
        + "".join(f'#undef {m}\n#pragma pop_macro("{m}")\n' for m in macros)
        + shim
    )


def _macro_name(source: str, tok: Token) -> str:
    words = directive_tokens(source, tok)
    return words[1].text if len(words) > 1 and words[1].kind == "ident" else ""


def _rewrite(source: str, tokens: Sequence[Token], entry: str, new: str) -> str:
    """``source`` with its ``#include`` lines blanked (lines kept) and ``entry`` renamed in code and directives."""
    edits = _renames([t for t in tokens if t.kind not in ("comment", "directive")], entry, new)
    for tok in tokens:
        if _is_include(tok):
            edits.append((tok.start, tok.end, "\n" * tok.text.count("\n")))
        elif tok.kind == "directive":
            edits += _renames(directive_tokens(source, tok)[1:], entry, new)
    out, at = [], 0
    for start, end, text in sorted(edits):
        out += [source[at:start], text]
        at = end
    return "".join(out) + source[at:]


def _renames(toks: Sequence[Token], entry: str, new: str) -> list[tuple[int, int, str]]:
    """Edits renaming ``entry``, except as a member (``a.entry``) or in another scope (``ns::entry``)."""
    edits = []
    for k, tok in enumerate(toks):
        if tok.kind != "ident" or tok.text != entry:
            continue
        prev = toks[k - 1].text if k else ""
        qualified = prev == "::" and k > 1 and not _starts_name(toks[k - 2])
        if prev not in (".", "->") and not qualified:
            edits.append((tok.start, tok.end, new))
    return edits


def failing_units(log: str) -> frozenset[int]:
    """Ids of the units an nvcc log blames for errors (by ``unit<id>.cu`` or a mangled namespace)."""
    found: set[int] = set()
    in_error = False
    for line in log.splitlines():
        if _ERROR.search(line):
            in_error = True
        elif line[:1] not in (" ", "\t"):  # an indented line continues the diagnostic above it
            in_error = False
        if in_error:
            found.update(int(m) for m in _UNIT_FILE.findall(line) + _UNIT_NAMESPACE.findall(line))
    return frozenset(found)


def build_bundle(
    units: Sequence[BundleUnit],
    arch: str,
    timeout_s: float | None = None,
    cancel: threading.Event | None = None,
) -> list[UnitBuild]:
    """Build ``units`` into as few libraries as possible; one bad unit never loses the others.

    Units with ``bundle_blockers`` are built alone. A bundle that fails is split:
    the units its log names are built alone (their logs then carry their own line
    numbers), the rest are bundled again; when the log names none (a ptxas limit,
    a time-out), the bundle is bisected.

    Args:
        units: ``(task, source)`` pairs; ids in diagnostics are their positions.
        arch: ``sm_XY`` for ``nvcc_flags``.
        timeout_s: Limit per bundle build (default: 60 s plus 3 s per unit).
        cancel: Set to stop; units not built yet come back with "build cancelled".

    Returns:
        One ``UnitBuild`` per unit, in order.
    """
    results: dict[int, UnitBuild] = {}
    bundleable = []
    for uid, (task, source) in enumerate(units):
        blockers = bundle_blockers(task, source)
        if blockers:
            results[uid] = _build_alone(task, source, arch, "; ".join(blockers), cancel)
        else:
            bundleable.append(uid)
    pending = [(bundleable, "")] if bundleable else []
    while pending:
        ids, note = pending.pop()
        if cancel is not None and cancel.is_set():
            results.update((uid, UnitBuild(None, CALL_SYMBOL, "build cancelled", False)) for uid in ids)
        elif len(ids) == 1:
            results[ids[0]] = _build_alone(*units[ids[0]], arch, note or "no other unit to bundle with", cancel)
        else:
            pending += _build_group(units, ids, arch, timeout_s or 60.0 + 3.0 * len(ids), cancel, results)
    return [results[uid] for uid in range(len(units))]


def _build_group(
    units: Sequence[BundleUnit],
    ids: list[int],
    arch: str,
    timeout_s: float,
    cancel: threading.Event | None,
    results: dict[int, UnitBuild],
) -> list[tuple[list[int], str]]:
    """Build one bundle into ``results``; returns the groups still to build, with why they were split off."""
    bundle = bundle_source([units[uid] for uid in ids], ids)
    built = build_library(tools.nvcc(), nvcc_flags(arch), bundle.source, ".cu", timeout_s=timeout_s,
                          memory_bytes=8 << 30, cancel=cancel)  # fmt: skip
    if built.ok:
        for uid, symbol in zip(ids, bundle.symbols, strict=True):
            results[uid] = UnitBuild(built.library, symbol, "", True)
        return []
    named = failing_units(built.log) & set(ids)
    if not named or built.timed_out:
        note = "bisected out of a bundle that " + ("timed out" if built.timed_out else "failed without naming a unit")
        return [(ids[: len(ids) // 2], note), (ids[len(ids) // 2 :], note)]
    for uid in sorted(named):
        results[uid] = _build_alone(*units[uid], arch, "named in the errors of its bundle", cancel)
    rest = [uid for uid in ids if uid not in named]
    return [(rest, "")] if rest else []


def _build_alone(task: Task, source: str, arch: str, note: str, cancel: threading.Event | None) -> UnitBuild:
    """The unit as ``CudaBackend.build`` builds it (same source, flags and cache entry)."""
    built = build_library(tools.nvcc(), nvcc_flags(arch), wrap(task, source), ".cu", cancel=cancel)
    return UnitBuild(built.library if built.ok else None, CALL_SYMBOL, built.log, False, note)


def plan_bundles(units: Sequence[BundleUnit], size: int = 48) -> list[list[int]]:
    """Indices of ``units`` in groups of at most ``size``; units in a group have the same ``#include`` set.

    Grouping by include set means no unit is compiled with a header it did not include.
    """
    groups: dict[frozenset[str], list[int]] = {}
    for uid, (_, source) in enumerate(units):
        groups.setdefault(frozenset(hoisted_includes(source)), []).append(uid)
    plan = []
    for members in groups.values():
        count = -(-len(members) // size)  # as few bundles as fit, of even sizes
        plan += [members[k * len(members) // count : (k + 1) * len(members) // count] for k in range(count)]
    return plan


def build_bundles(
    units: Sequence[BundleUnit],
    arch: str,
    size: int = 48,
    workers: int = 1,
    cancel: threading.Event | None = None,
) -> list[UnitBuild]:
    """``build_bundle`` over ``plan_bundles(units, size)``, ``workers`` bundles at a time."""
    plan = plan_bundles(units, size)

    def build(ids: list[int]) -> list[UnitBuild]:
        return build_bundle([units[uid] for uid in ids], arch, cancel=cancel)

    results: dict[int, UnitBuild] = {}
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for ids, built in zip(plan, pool.map(build, plan), strict=True):
            results.update(zip(ids, built, strict=True))
    return [results[uid] for uid in range(len(units))]
