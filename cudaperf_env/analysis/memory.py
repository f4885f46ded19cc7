"""Memory references in a kernel walk: where pointers point, which element an access touches.

A :class:`MemoryWalker` resolves ``x[i]``, ``*(p + k)``, ``&a[i][j]``,
``reinterpret_cast<const float4*>(x)`` and pointer variables to a base array
(kernel parameter: global memory; ``__shared__``: shared; a local array:
per-thread) and an element index as an abstract value, and records each access.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from cudaperf_env.analysis import values as V
from cudaperf_env.analysis.cuda_names import CASTS, FunctionDef, callee
from cudaperf_env.analysis.records import Access, Pointer, Record
from cudaperf_env.analysis.syntax import FLOAT_TYPES, TYPE_BYTES, base_type, child, line, text
from cudaperf_env.analysis.values import Value

LOOP_WEIGHT = 16  # assumed trip count of a loop when weighting its body
MAX_DEPTH = 120  # expression/statement nesting followed before giving up (hostile input)


@dataclass
class Scope:
    """What a function body has declared so far."""

    scalars: dict[str, Value] = field(default_factory=dict)
    level: dict[str, int] = field(default_factory=dict)
    pointers: dict[str, Pointer] = field(default_factory=dict)
    dims: dict[str, tuple[int | None, ...]] = field(default_factory=dict)
    consts: dict[str, int] = field(default_factory=dict)
    grid_vars: set[str] = field(default_factory=set)
    groups: dict[str, str] = field(default_factory=dict)  # cooperative group -> "block" | "warp"
    returns: list[Value] = field(default_factory=list)


class MemoryWalker:
    """The memory half of a kernel walk; :class:`~cudaperf_env.analysis.kernel_walk.KernelWalker` adds the rest."""

    def __init__(self, kernel: FunctionDef, record: Record, scope: Scope) -> None:
        self.kernel = kernel
        self.record = record
        self.scope = scope
        self.loop_depth = 0
        self.divergent = 0
        self.single_lane = 0  # inside `if (lane == 0)`-like branches: one lane (or a few) active
        self.open_loops: list[dict[str, bool]] = []
        self.depth = 0

    def ev(self, node: Any) -> Value:
        """The abstract value of an expression (the subclass walks expressions)."""
        raise NotImplementedError

    def pointer(self, node: Any) -> Pointer | None:
        """Where a pointer expression points, or None when it is not a known array."""
        if node is None or self.depth > MAX_DEPTH:
            self.record.truncated = self.record.truncated or node is not None
            return None
        kind = node.type
        if kind == "identifier":
            return self.scope.pointers.get(text(node))
        if kind == "parenthesized_expression":
            inner = node.named_children
            return self.pointer(inner[-1]) if inner else None
        if kind == "cast_expression":
            type_text = text(child(node, "type"))
            target = self.pointer(child(node, "value"))
            return retype(target, new_pointer("", "", type_text)) if target and "*" in type_text else target
        if kind == "call_expression" and callee(node) in CASTS:
            args = child(node, "arguments").named_children
            type_text = text(child(child(node, "function"), "arguments"))
            target = self.pointer(args[0]) if len(args) == 1 else None
            return retype(target, new_pointer("", "", type_text.strip("<>"))) if target else None
        if kind == "binary_expression" and text(child(node, "operator")) in ("+", "-"):
            sign = 1 if text(child(node, "operator")) == "+" else -1
            target = self.pointer(child(node, "left"))
            if target is not None:
                return replace(target, offset=V.add(target.offset, self.ev(child(node, "right")), sign))
            target = self.pointer(child(node, "right")) if sign > 0 else None
            if target is not None:
                return replace(target, offset=V.add(target.offset, self.ev(child(node, "left"))))
            return None
        if kind == "pointer_expression" and text(child(node, "operator")) == "&":
            ref = self.memref(child(node, "argument"))
            return replace(ref[0], offset=ref[1]) if ref else None
        if kind == "conditional_expression":
            self.ev(child(node, "condition"))
            return self.pointer(child(node, "consequence")) or self.pointer(child(node, "alternative"))
        return None

    def memref(self, node: Any) -> tuple[Pointer, Value] | None:
        """The array and element index a subscript or dereference designates."""
        if node is None:
            return None
        if node.type == "pointer_expression" and text(child(node, "operator")) == "*":
            target = self.pointer(child(node, "argument"))
            return (target, target.offset) if target else None
        if node.type != "subscript_expression":
            return None
        indices: list[Value] = []
        base = node
        while base is not None and base.type == "subscript_expression" and len(indices) < 8:
            found = child(base, "indices")
            parts = found.named_children if found is not None else []
            indices.insert(0, self.ev(parts[0]) if parts else V.opaque())
            base = child(base, "argument")
        target = self.pointer(base)
        if target is None:
            return None
        dims = self.scope.dims.get(text(base), ()) if base.type == "identifier" else ()
        flat = indices[0]
        for k, index in enumerate(indices[1:], start=1):
            size = dims[k] if k < len(dims) else None
            flat = V.add(V.mul(flat, V.constant(size) if size else V.symbol("dim")), index)
        return target, V.add(target.offset, flat)

    def access(self, node: Any, op: str) -> Value:
        """Records a load or store through ``node`` and returns the value read."""
        ref = self.memref(node)
        if ref is None:
            for sub in node.named_children:
                self.ev(sub)
            return V.opaque()
        return self._record(ref[0], ref[1], line(node), op)

    def _record(self, target: Pointer, index: Value, at: int, op: str) -> Value:
        if self.single_lane and target.space == "global" and index.kind != V.UNIFORM:
            index = Value(V.UNIFORM, 0, None, True, index.fp, "")  # one lane: nothing to coalesce
        if target.space in ("global", "shared"):
            self.record.accesses.append(
                Access(self.kernel.name, target.base, target.space, op, index, target.elem_bytes, target.vector,
                       at, self.loop_depth, self.single_lane > 0)
            )
        if target.space == "global":
            self.record.global_bytes += target.elem_bytes * self._weight()
        if target.space == "shared":
            for flags in self.open_loops:
                flags["shared"] = True
        if target.space in ("local", "unknown"):
            return V.opaque(True, target.fp)
        return V.loaded(index, target.fp)

    def _weight(self) -> float:
        return float(LOOP_WEIGHT**self.loop_depth)


def new_pointer(name: str, space: str, type_text: str) -> Pointer:
    base = base_type(type_text)
    size = TYPE_BYTES.get(base, 4)
    vector = size >= 8 and base[-1:].isdigit()
    return Pointer(name, space, V.constant(0), size, base in FLOAT_TYPES, vector)


def retype(target: Pointer | None, declared: Pointer) -> Pointer | None:
    """``target`` seen through a pointer of ``declared``'s element type."""
    if target is None or declared.elem_bytes == target.elem_bytes:
        return replace(target, fp=declared.fp, vector=declared.vector) if target else None
    offset = target.offset
    old, new = target.elem_bytes, declared.elem_bytes
    if offset.kind == V.LINEAR and isinstance(offset.stride, int) and (offset.stride * old) % new == 0:
        offset = replace(offset, stride=offset.stride * old // new)
    elif offset.kind == V.UNIFORM:
        const = offset.const * old // new if offset.const is not None and (offset.const * old) % new == 0 else None
        offset = replace(offset, const=const)
    else:
        offset = V.opaque(offset.per_thread)
    return Pointer(target.base, target.space, offset, new, declared.fp, declared.vector)


def is_memory(node: Any) -> bool:
    return node is not None and (
        node.type == "subscript_expression"
        or (node.type == "pointer_expression" and text(child(node, "operator")) == "*")
    )
