"""The per-thread cost of a kernel at one configuration: loop trip counts, global bytes, operations, barriers.

A submission is parsed once (:func:`parse_program`, cached by its text); a
:class:`KernelWalker`-like pass (:class:`CostWalker`) then walks a kernel with an
environment of folded integers (the configuration's values, ``blockDim``,
``gridDim``; ``threadIdx`` and ``blockIdx`` at 0: the first thread, which does the
most work) and a multiplier of enclosing loop iterations. ``for`` loops get a trip
count from their bounds (additive, multiplicative and halving steps); a nested
loop sees the outer variable at its midpoint; what does not fold counts one
iteration and is counted in ``unknown_loops``. ``__device__`` functions are
followed with their arguments bound. Warp primitives (shuffles, votes, warp
reductions) and global atomics are counted per thread; an atomic inside an
``if`` that tests equality (``lane == 0``, ``threadIdx.x == 0``) counts as once
per warp, or once per block when the test names ``threadIdx`` (what such a guard
usually means); thread-local arrays of constant size (register tiles) are measured.
Used by :mod:`cudaperf_env.analysis.parallelism`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cudaperf_env.analysis import syntax
from cudaperf_env.analysis.constants import declarators, file_constants, fold
from cudaperf_env.analysis.cuda_names import WARP_PRIMITIVES
from cudaperf_env.analysis.static import MAX_SOURCE_CHARS

MAX_INLINE_DEPTH = 6
WARP_SIZE = 32
MAX_BLOCK_THREADS = 1024
_ARITH = {"+", "-", "*", "/", "%"}
_COMPOUND = {"+=", "-=", "*=", "/=", "%="}
_VECTOR = re.compile(r"\b((?:u?char|u?short|u?int|float|double|longlong|ulonglong)[234])\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_FAILURES = (RecursionError, ValueError, TypeError, AttributeError, IndexError, KeyError, ArithmeticError,
             OverflowError)  # fmt: skip


@dataclass(frozen=True)
class Program:
    """A parsed submission: its named constants and functions by name (``kind``, node)."""

    consts: Mapping[str, int]
    functions: Mapping[str, tuple[str, Any]]


@dataclass
class Cost:
    """Per-thread cost of one kernel, accumulated by :class:`CostWalker`."""

    iterations: float = 0.0
    global_bytes: float = 0.0
    shared_bytes: float = 0.0
    ops: float = 0.0
    barriers: float = 0.0
    unknown_loops: int = 0
    warp_ops: float = 0.0
    atomics: float = 0.0  # global atomics per thread, guarded ones as a share (see the module docstring)
    local_elements: int = 0  # elements of the largest thread-local constant-size array


@dataclass
class CostWalker:
    """Walks a kernel body with an environment of folded integers and a loop-iteration multiplier."""

    program: Program
    env: dict[str, int]
    pointers: dict[str, int]  # global pointer name -> element bytes
    shared: set[str] = field(default_factory=set)
    cost: Cost = field(default_factory=Cost)
    times: float = 1.0
    depth: int = 0
    guard: float = 1.0  # threads sharing one execution of the code here (an equality-tested branch)

    def block(self, node: Any) -> None:
        if node is None or self.depth > 64:
            return
        kind = node.type
        handler = getattr(self, f"_s_{kind}", None)
        if handler is not None:
            handler(node)
        else:
            for sub in node.named_children:
                self.block(sub)

    def _s_compound_statement(self, node: Any) -> None:
        for sub in node.named_children:
            self.block(sub)

    def _s_declaration(self, node: Any) -> None:
        words = {syntax.text(c) for c in node.children}
        type_text = syntax.text(syntax.child(node, "type"))
        for decl in declarators(node, self.env):
            if not decl.name:
                continue
            self.env.pop(decl.name, None)
            if "__shared__" in words or "__shared__" in syntax.text(node).split("[")[0]:
                self.shared.add(decl.name)
                continue
            if decl.dims and not decl.pointer and all(d is not None and d > 0 for d in decl.dims):
                elements = math.prod(d for d in decl.dims if d is not None)
                self.cost.local_elements = max(self.cost.local_elements, elements)
            if decl.value is None:
                continue
            self.expression(decl.value)
            if decl.pointer and self._global_base(decl.value):
                self.pointers[decl.name] = syntax.type_bytes(type_text) or 4
            elif not decl.pointer and not decl.dims:
                value = fold(decl.value, self.env)
                if value is not None:
                    self.env[decl.name] = value

    def _s_expression_statement(self, node: Any) -> None:
        for sub in node.named_children:
            self.expression(sub)

    def _s_return_statement(self, node: Any) -> None:
        self._s_expression_statement(node)

    def _s_if_statement(self, node: Any) -> None:
        condition = syntax.child(node, "condition")
        self.expression(condition)
        saved = self.guard
        self.guard = min(saved * _guard_share(condition), _block_threads(self.env))
        self.block(syntax.child(node, "consequence"))
        self.guard = saved
        self.block(syntax.child(node, "alternative"))

    def _s_for_statement(self, node: Any) -> None:
        init = syntax.child(node, "initializer")
        if init is not None:
            self.block(init) if init.type == "declaration" else self.expression(init)
        var, trips, middle = _trip_count(node, self.env)
        if trips is None:
            self.cost.unknown_loops += 1
        self._loop(syntax.child(node, "body"), var, trips or 1.0, middle)

    def _s_while_statement(self, node: Any) -> None:
        self.cost.unknown_loops += 1
        self._loop(syntax.child(node, "body"), None, 1.0, None)

    _s_do_statement = _s_while_statement

    def _loop(self, body: Any, var: str | None, trips: float, middle: int | None) -> None:
        saved, self.times, self.depth = self.times, self.times * max(trips, 0.0), self.depth + 1
        self.cost.iterations += self.times
        if var is not None:
            self.env.pop(var, None)
            if middle is not None:
                self.env[var] = middle
        self.block(body)
        if var is not None:
            self.env.pop(var, None)
        self.times, self.depth = saved, self.depth - 1

    def expression(self, node: Any) -> None:
        """Counts the accesses, operations, barriers and calls of one expression (and binds assignments)."""
        if node is None:
            return
        for sub in syntax.walk(node):
            kind = sub.type
            if kind == "subscript_expression":
                self._access(sub)
            elif kind == "binary_expression" and syntax.text(syntax.child(sub, "operator")) in _ARITH:
                self.cost.ops += self.times
            elif kind == "assignment_expression":
                self._assign(sub)
            elif kind == "call_expression":
                self._call(sub)

    def _assign(self, node: Any) -> None:
        operator = syntax.text(syntax.child(node, "operator"))
        name = syntax.text(syntax.child(node, "left"))
        if operator in _COMPOUND:
            self.cost.ops += self.times
        if name in self.env:
            value = fold(syntax.child(node, "right"), self.env) if operator == "=" else None
            self.env.pop(name)
            if value is not None:
                self.env[name] = value

    def _access(self, node: Any) -> None:
        base = syntax.child(node, "argument")
        name = self._global_base(base)
        if name is not None:
            vector = _VECTOR.search(syntax.text(base)) if base is not None and base.type != "identifier" else None
            width = syntax.TYPE_BYTES.get(vector.group(1), 16) if vector else self.pointers[name]
            self.cost.global_bytes += self.times * width
        elif base is not None and syntax.text(base).split("[")[0] in self.shared:
            self.cost.shared_bytes += self.times * 4

    def _global_base(self, node: Any) -> str | None:
        if node is None:
            return None
        if node.type == "identifier":
            name = syntax.text(node)
            return name if name in self.pointers else None
        return next((n for n in _IDENT.findall(syntax.text(node)) if n in self.pointers), None)

    def _call(self, node: Any) -> None:
        raw = syntax.text(syntax.child(node, "function"))
        name = raw.split("::")[-1].split("<")[0].strip()
        if name in ("__syncthreads", "__syncthreads_or", "__syncthreads_and", "__syncthreads_count"):
            self.cost.barriers += self.times
            return
        target = self.program.functions.get(name)
        if target is None or target[0] != "device" or self.depth > MAX_INLINE_DEPTH:
            member = name.split(".")[-1].split("->")[-1]
            if WARP_PRIMITIVES.match(member) and (member.startswith("__") or member != name or "::" in raw):
                self.cost.warp_ops += self.times
            if name.startswith("atomic"):
                self.cost.ops += self.times
                args = syntax.child(node, "arguments")
                first = args.named_children[0] if args is not None and args.named_children else None
                if self._global_base(first) is not None:
                    self.cost.atomics += self.times / self.guard
            return
        args = syntax.child(node, "arguments")
        inner = CostWalker(self.program, dict(self.program.consts), {}, set(), self.cost, self.times, self.depth + 1,
                           self.guard)  # fmt: skip
        _bind(target[1], [syntax.text(a) for a in (args.named_children if args is not None else ())],
              [fold(a, self.env) for a in (args.named_children if args is not None else ())], self, inner)
        inner.block(syntax.child(target[1], "body"))


def _bind(function: Any, texts: list[str], values: list[int | None], outer: CostWalker, inner: CostWalker) -> None:
    """Binds a callee's parameters: integers that fold, pointers into global memory (by the argument's names)."""
    for (name, pointer, type_text), arg, value in zip(params(function, outer.program.consts), texts, values,
                                                      strict=False):  # fmt: skip
        if pointer:
            base = next((n for n in _IDENT.findall(arg) if n in outer.pointers), None)
            if base is not None:
                inner.pointers[name] = syntax.type_bytes(type_text) or outer.pointers[base]
            elif arg.split("[")[0].strip("&* ") in outer.shared:
                inner.shared.add(name)
        elif value is not None:
            inner.env[name] = value
    for key in ("threadIdx", "blockIdx", "blockDim", "gridDim"):
        inner.env.update({k: v for k, v in outer.env.items() if k.startswith(key + ".")})


def _guard_share(condition: Any) -> float:
    """How many threads share one execution of a branch on ``condition``: an equality test naming
    ``threadIdx`` is taken as one thread per block (capped by the caller), any other equality test
    (``lane == 0``, ``warp == 0``) as one in a warp; nested tests multiply."""
    tests = [sub for sub in syntax.walk(condition) if sub.type == "binary_expression"
             and syntax.text(syntax.child(sub, "operator")) == "=="] if condition is not None else []  # fmt: skip
    if not tests:
        return 1.0
    return float(MAX_BLOCK_THREADS if any("threadIdx" in syntax.text(t) for t in tests) else WARP_SIZE)


def _block_threads(env: Mapping[str, int]) -> float:
    """Threads per block where the launch folded (else the largest block)."""
    dims = [env.get(f"blockDim.{axis}") for axis in "xyz"]
    return float(math.prod(d for d in dims if d is not None)) if dims[0] is not None else float(MAX_BLOCK_THREADS)


def params(function: Any, consts: Mapping[str, int]) -> list[tuple[str, bool, str]]:
    """``(name, is_pointer, type text)`` of a function definition's parameters, in order."""
    declarator = syntax.child(function, "declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = syntax.child(declarator, "declarator")
    params = syntax.child(declarator, "parameters")
    out = []
    for param in params.named_children if params is not None else ():
        if param.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        found = list(declarators(param, consts))
        decl = found[0] if found else None
        out.append((decl.name if decl else "", bool(decl and (decl.pointer or decl.dims)),
                    syntax.text(syntax.child(param, "type"))))  # fmt: skip
    return out


def _trip_count(node: Any, env: Mapping[str, int]) -> tuple[str | None, float | None, int | None]:
    """``(loop variable, trip count, midpoint value)`` of a ``for`` loop; None where they do not fold."""
    init, cond, update = (syntax.child(node, f) for f in ("initializer", "condition", "update"))
    var, start = _loop_start(init, env)
    if var is None or cond is None or cond.type != "binary_expression" or update is None:
        return var, None, None
    left, right = syntax.child(cond, "left"), syntax.child(cond, "right")
    op = syntax.text(syntax.child(cond, "operator"))
    if syntax.text(left) != var:
        return var, None, None
    bound = fold(right, env)
    step = _step(update, var, env)
    if bound is None or start is None or step is None:
        return var, None, None
    kind, amount = step
    if kind == "add" and amount > 0 and op in ("<", "<=", "!="):
        span = bound - start + (op == "<=")
        return var, float(max(0.0, math.ceil(span / amount))), (start + bound) // 2
    if kind == "add" and amount < 0 and op in (">", ">="):
        span = start - bound + (op == ">=")
        return var, float(max(0.0, math.ceil(span / -amount))), (start + bound) // 2
    if kind == "mul" and amount > 1 and op in ("<", "<=") and start > 0:
        return var, float(max(0.0, math.ceil(math.log(max(bound, 1) / start, amount)))), None
    if kind == "div" and amount > 1 and op in (">", ">=", "!=") and start > 0:
        return var, float(max(0.0, math.floor(math.log(start / max(bound, 1), amount)) + 1)), None
    return var, None, None


def _loop_start(init: Any, env: Mapping[str, int]) -> tuple[str | None, int | None]:
    if init is None:
        return None, None
    if init.type == "declaration":
        found = list(declarators(init, env))
        if found and found[0].value is not None:
            return found[0].name, fold(found[0].value, env)
        return (found[0].name if found else None), None
    if init.type == "assignment_expression":
        return syntax.text(syntax.child(init, "left")), fold(syntax.child(init, "right"), env)
    return None, None


def _step(update: Any, var: str, env: Mapping[str, int]) -> tuple[str, int] | None:
    """How the loop variable moves: ``("add", k)``, ``("mul", k)`` or ``("div", k)``."""
    if update.type == "update_expression":
        return "add", 1 if "++" in syntax.text(update) else -1
    if update.type != "assignment_expression" or syntax.text(syntax.child(update, "left")) != var:
        return None
    op = syntax.text(syntax.child(update, "operator"))
    right = syntax.child(update, "right")
    amount = fold(right, env)
    if op == "=" and right is not None and right.type == "binary_expression":
        if syntax.text(syntax.child(right, "left")) != var:
            return None
        op = syntax.text(syntax.child(right, "operator")) + "="
        amount = fold(syntax.child(right, "right"), env)
    if amount is None:
        return None
    table = {"+=": ("add", amount), "-=": ("add", -amount), "*=": ("mul", amount), "/=": ("div", amount),
             "<<=": ("mul", 2**amount if 0 <= amount < 62 else 0), ">>=": ("div", 2**amount if 0 <= amount < 62 else 0)}
    return table.get(op)


@lru_cache(maxsize=512)
def parse_program(code: str) -> Program | None:
    """The constants and functions of a submission (cached by source text); None when it cannot be read."""
    if len(code) > MAX_SOURCE_CHARS or not syntax.available():
        return None
    try:
        tree = syntax.parse(code)
        consts = file_constants(tree.root)
        functions: dict[str, tuple[str, Any]] = {}
        for name, kind, node in syntax.function_definitions(tree.root):
            functions.setdefault(name, (kind, node))
        return Program(consts, functions)
    except _FAILURES:
        return None


