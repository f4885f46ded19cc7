"""Walks one kernel's syntax tree and records its memory accesses, barriers, loops and arithmetic.

One pass in source order with an environment of abstract values
(:mod:`cudaperf_env.analysis.values`): each local variable's variation across
lanes, each pointer's base array and offset. Calls of ``__device__``
functions defined in the file are followed with their arguments bound.
Loops count ``LOOP_WEIGHT`` iterations when weighting arithmetic and traffic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cudaperf_env.analysis import values as V
from cudaperf_env.analysis.constants import add_declaration_constants, declarators, fold
from cudaperf_env.analysis.cuda_names import (
    BARRIERS,
    CASTS,
    FMAS,
    FP_MATH,
    HALVING,
    LOADS,
    STORES,
    WARP_PRIMITIVES,
    FunctionDef,
    callee,
    first_text,
    mentions_grid,
)
from cudaperf_env.analysis.memory import (
    LOOP_WEIGHT,
    MAX_DEPTH,
    MemoryWalker,
    Scope,
    is_memory,
    new_pointer,
    retype,
)
from cudaperf_env.analysis.records import Barrier, Loop, Pointer, Record, SharedArray
from cudaperf_env.analysis.syntax import FLOAT_TYPES, base_type, child, int_literal, is_float_literal, line, text
from cudaperf_env.analysis.values import Value

__all__ = ["LOOP_WEIGHT", "FunctionDef", "KernelWalker"]
MAX_INLINE = 4
_BINOPS = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"}


class KernelWalker(MemoryWalker):
    """Walks one kernel (and the device functions it calls) into a :class:`Record`."""

    def __init__(
        self,
        kernel: FunctionDef,
        consts: Mapping[str, int],
        functions: Mapping[str, FunctionDef],
        pragmas: Mapping[int, str],
        record: Record,
        block_x: int | None = None,
        template_args: tuple[int | None, ...] = (),
    ) -> None:
        super().__init__(kernel, record, Scope(consts=dict(consts)))
        self.functions = functions
        self.pragmas = pragmas
        self.block_x = block_x
        for name, value in zip(kernel.template_params, template_args, strict=False):
            if value is not None:
                self.scope.consts[name] = value
        self.cond_depth = 0
        self.few_lanes: set[int] = set()  # ids of conditions that select single lanes
        self.inlined: list[str] = []

    # ----------------------------------------------------------------- entry
    def run(self) -> None:
        """Walks the kernel body with its pointer parameters bound to global memory."""
        params = child(child(self.kernel.node, "declarator"), "parameters")
        for param in params.named_children if params is not None else ():
            if param.type in ("parameter_declaration", "optional_parameter_declaration"):
                self._bind_param(param, None)
        self.stmt(child(self.kernel.node, "body"))

    def _bind_param(self, param: Any, arg: Any) -> None:
        type_text = text(child(param, "type"))
        fp = base_type(type_text) in FLOAT_TYPES
        for decl in declarators(param, self.scope.consts):
            if not decl.name:
                continue
            if decl.pointer or decl.dims:
                target = self.pointer(arg) if arg is not None else None
                self.scope.pointers[decl.name] = target or new_pointer(decl.name, "global", type_text)
            else:
                value = self.ev(arg) if arg is not None else V.symbol(decl.name, fp=fp)
                self.scope.scalars[decl.name] = replace(value, fp=fp) if type_text != "auto" else value

    # ------------------------------------------------------------ statements
    def stmt(self, node: Any) -> None:
        """Walks a statement."""
        if node is None:
            return
        if self.depth > MAX_DEPTH:
            self.record.truncated = True
            return
        self.depth += 1
        try:
            handler = getattr(self, "_s_" + node.type, None)
            if handler is not None:
                handler(node)
            elif node.type.endswith("_expression") or node.type in ("identifier", "number_literal"):
                self.ev(node)
            else:
                for sub in node.named_children:
                    self.stmt(sub)
        finally:
            self.depth -= 1

    def _s_declaration(self, node: Any) -> None:
        heads = {text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
        type_text = text(child(node, "type"))
        if "const" in heads or "constexpr" in heads:
            add_declaration_constants(node, self.scope.consts)
        for decl in declarators(node, self.scope.consts):
            if not decl.name:
                continue
            if "__shared__" in heads:
                self._shared(decl.name, decl.dims, type_text, "extern" in heads, line(node))
            elif decl.dims:
                self.scope.pointers[decl.name] = new_pointer(decl.name, "local", type_text)
                self.scope.dims[decl.name] = decl.dims
                if decl.value is not None:
                    self.ev(decl.value)
            elif decl.pointer:
                target = self.pointer(decl.value) if decl.value is not None else None
                declared = new_pointer(decl.name, "unknown", type_text)
                self.scope.pointers[decl.name] = retype(target, declared) or declared
            else:
                self._scalar(decl.name, decl.value, type_text)

    def _shared(self, name: str, dims: tuple[int | None, ...], type_text: str, extern: bool, at: int) -> None:
        elem = new_pointer(name, "shared", type_text)
        self.scope.pointers[name] = elem
        self.scope.dims[name] = dims
        self.record.shared.append(SharedArray(self.kernel.name, name, dims or (1,), elem.elem_bytes, extern, at))

    def _scalar(self, name: str, init: Any, type_text: str) -> None:
        fp = base_type(type_text) in FLOAT_TYPES
        made_by = callee(init) if init is not None and init.type == "call_expression" else ""
        if made_by == "this_thread_block" or "thread_block" in type_text and "tile" not in type_text:
            self.scope.groups[name] = "block"
        elif made_by.startswith(("tiled_partition", "coalesced_threads")) or "thread_block_tile" in type_text:
            self.scope.groups[name] = "warp"
        if init is None or init.type in ("argument_list", "initializer_list"):
            if init is not None:
                for arg in init.named_children:
                    self.ev(arg)
            value = V.symbol(name, fp=fp)
        else:
            value = self.ev(init)
            if mentions_grid(init, self.scope.grid_vars):
                self.scope.grid_vars.add(name)
        if type_text not in ("auto", "") and base_type(type_text) != "auto":
            value = replace(value, fp=fp)
        self.scope.scalars[name] = value
        self.scope.level[name] = self.cond_depth

    def _s_if_statement(self, node: Any) -> None:
        condition = child(node, "condition")
        cond = self.ev(condition)
        few = condition is not None and self._selects_few(condition)
        with_branch = self._branch(cond.per_thread)
        self.single_lane += int(few)
        self.stmt(child(node, "consequence"))
        self.single_lane -= int(few)
        self.stmt(child(node, "alternative"))
        self._unbranch(with_branch)

    def _selects_few(self, node: Any) -> bool:
        while node.type in ("condition_clause", "parenthesized_expression") and node.named_children:
            node = node.named_children[-1]
        return node.id in self.few_lanes

    def _s_switch_statement(self, node: Any) -> None:
        self._s_if_statement(node)

    def _branch(self, per_thread: bool) -> bool:
        self.cond_depth += 1
        self.divergent += int(per_thread)
        return per_thread

    def _unbranch(self, per_thread: bool) -> None:
        self.cond_depth -= 1
        self.divergent -= int(per_thread)

    def _s_for_statement(self, node: Any) -> None:
        init, update = child(node, "initializer"), child(node, "update")
        start = None
        if init is not None:
            self.stmt(init)
            start = self._loop_var_value(init)
        self.cond_depth += 1
        step = self.ev(update) if update is not None else None
        grid = (
            start is not None and start.per_thread and step is not None and update is not None
            and mentions_grid(update, self.scope.grid_vars)
        )
        halving = update is not None and bool(HALVING.match(re.sub(r"\s+", "", text(update))))
        self.cond_depth -= 1
        self._loop(node, child(node, "condition"), child(node, "body"), grid, halving)

    def _loop_var_value(self, init: Any) -> Value | None:
        if init.type == "declaration":
            names = [d.name for d in declarators(init, self.scope.consts)]
            return self.scope.scalars.get(names[0]) if names else None
        if init.type == "assignment_expression":
            return self.scope.scalars.get(text(child(init, "left")))
        return None

    def _s_while_statement(self, node: Any) -> None:
        self._loop(node, child(node, "condition"), child(node, "body"), False, False)

    def _s_do_statement(self, node: Any) -> None:
        self._loop(node, child(node, "condition"), child(node, "body"), False, False)

    def _loop(self, node: Any, condition: Any, body: Any, grid: bool, halving: bool) -> None:
        self.loop_depth += 1
        self.cond_depth += 1
        cond = self.ev(condition) if condition is not None else V.constant(1)
        self.divergent += int(cond.per_thread)
        nested = halving and any(f["halving"] for f in self.open_loops)  # bitonic networks nest two
        for outer in self.open_loops:
            outer["nested_halving"] = outer["nested_halving"] or halving
        flags = {"barrier": False, "shared": False, "halving": halving, "nested_halving": nested}
        self.open_loops.append(flags)
        self.stmt(body)
        self.open_loops.pop()
        self.divergent -= int(cond.per_thread)
        self.cond_depth -= 1
        at = line(node)
        unrolled = any(self.pragmas.get(at - k, "").startswith("unroll") for k in (1, 2))
        tree = halving and flags["barrier"] and flags["shared"] and not flags["nested_halving"]
        self.record.loops.append(Loop(self.kernel.name, at, self.loop_depth, unrolled, grid, tree))
        self.loop_depth -= 1

    def _s_return_statement(self, node: Any) -> None:
        for sub in node.named_children:
            self.scope.returns.append(self.ev(sub))

    # ----------------------------------------------------------- expressions
    def ev(self, node: Any) -> Value:
        """The abstract value of an expression, recording what it does."""
        if node is None:
            return V.opaque(False)
        if self.depth > MAX_DEPTH:
            self.record.truncated = True
            return V.opaque()
        self.depth += 1
        try:
            handler = getattr(self, "_e_" + node.type, None)
            if handler is not None:
                return handler(node)  # type: ignore[no-any-return]
            if node.type.endswith("_statement") or node.type == "declaration":
                self.stmt(node)
                return V.opaque(False)
            parts = [self.ev(sub) for sub in node.named_children]
            return V.call_result(parts)
        finally:
            self.depth -= 1

    def _e_number_literal(self, node: Any) -> Value:
        token = text(node)
        value = int_literal(token)
        if value is not None:
            return V.constant(value)
        return Value(V.UNIFORM, 0, None, False, is_float_literal(token), token)

    def _e_identifier(self, node: Any) -> Value:
        name = text(node)
        scope = self.scope
        if name in scope.scalars:
            return scope.scalars[name]
        if name in scope.consts:
            return V.constant(scope.consts[name])
        if name == "warpSize":
            return V.constant(32)
        return V.symbol(name)

    def _e_qualified_identifier(self, node: Any) -> Value:
        return self._e_identifier(child(node, "name") or node)

    def _e_parenthesized_expression(self, node: Any) -> Value:
        inner = node.named_children
        return self.ev(inner[-1]) if inner else V.opaque(False)

    def _e_condition_clause(self, node: Any) -> Value:
        return self._e_parenthesized_expression(node)

    def _e_field_expression(self, node: Any) -> Value:
        base = text(child(node, "argument"))
        fld = text(child(node, "field"))
        if base == "threadIdx":
            return V.lane() if fld == "x" else V.symbol(f"threadIdx.{fld}", per_thread=True)
        if base == "blockDim" and fld == "x" and self.block_x:
            return V.constant(self.block_x)
        if base in ("blockIdx", "blockDim", "gridDim"):
            return V.symbol(f"{base}.{fld}")
        return self.ev(child(node, "argument"))

    def _e_cast_expression(self, node: Any) -> Value:
        value = self.ev(child(node, "value"))
        type_text = text(child(node, "type"))
        return value if "*" in type_text else replace(value, fp=base_type(type_text) in FLOAT_TYPES)

    def _e_unary_expression(self, node: Any) -> Value:
        arg = self.ev(child(node, "argument"))
        op = text(child(node, "operator"))
        if op == "-":
            return V.mul(V.constant(-1, arg.fp), arg)
        if op == "+":
            return arg
        return V.bitwise(arg, V.constant(0))

    def _e_pointer_expression(self, node: Any) -> Value:
        if text(child(node, "operator")) == "*":
            return self.access(node, "load")
        target = child(node, "argument")
        if target is not None and target.type == "subscript_expression":
            self.memref(target)  # the address only: evaluate the index, record no access
            return V.symbol(text(target))
        return V.symbol(text(node))

    def _e_binary_expression(self, node: Any) -> Value:
        op = text(child(node, "operator"))
        left, right = self.ev(child(node, "left")), self.ev(child(node, "right"))
        if op == "==" and (left.kind == V.LINEAR) != (right.kind == V.LINEAR) and V.UNIFORM in (left.kind, right.kind):
            self.few_lanes.add(node.id)  # `lane == 0`: one lane of the warp
        elif op in ("&&", "||"):
            sides = [self._selects_few(child(node, "left")), self._selects_few(child(node, "right"))]
            if any(sides) if op == "&&" else all(sides):
                self.few_lanes.add(node.id)
            return V.bitwise(left, right)
        return self._binop(op, left, right)

    def _binop(self, op: str, left: Value, right: Value) -> Value:
        if op in ("+", "-"):
            result = V.add(left, right, 1 if op == "+" else -1)
        elif op == "*":
            result = V.mul(left, right)
        elif op == "/":
            result = V.div(left, right)
        elif op == "%":
            result = V.mod(left, right)
        elif op in ("<<", ">>"):
            result = V.shift(left, right, op == "<<")
        elif op == "&":
            result = V.bitand(left, right)
        elif op == "^":
            result = V.bitxor(left, right)
        elif op in _BINOPS:
            result = V.bitwise(left, right)
        else:
            return V.compare(left, right)
        if result.fp and op in ("+", "-", "*", "/"):
            self.record.flops += self._weight()
        elif op in ("/", "%") and right.const is None:
            # a runtime integer divisor: tens of instructions (more in 64 bits), where a constant one is a multiply
            self.record.int_divs += self._weight()
        return result

    def _e_conditional_expression(self, node: Any) -> Value:
        cond = self.ev(child(node, "condition"))
        per_thread = self._branch(cond.per_thread)
        a, b = self.ev(child(node, "consequence")), self.ev(child(node, "alternative"))
        self._unbranch(per_thread)
        return V.join(a, b)

    def _e_comma_expression(self, node: Any) -> Value:
        values = [self.ev(sub) for sub in node.named_children]
        return values[-1] if values else V.opaque(False)

    def _e_subscript_expression(self, node: Any) -> Value:
        return self.access(node, "load")

    def _e_sizeof_expression(self, node: Any) -> Value:
        size = fold(node, self.scope.consts)
        return V.constant(size) if size is not None else V.symbol("sizeof")

    def _e_update_expression(self, node: Any) -> Value:
        target = child(node, "argument")
        if target is not None and target.type in ("subscript_expression", "pointer_expression"):
            value = self.access(target, "load")
            self.access(target, "store")
            return value
        return self.ev(target)

    def _e_assignment_expression(self, node: Any) -> Value:
        op = text(child(node, "operator"))
        left, right = child(node, "left"), child(node, "right")
        if left is not None and left.type == "identifier" and text(left) in self.scope.pointers:
            target = self.pointer(right)
            if target is not None and op == "=":
                self.scope.pointers[text(left)] = target
            else:
                self.ev(right)
            return V.symbol(text(left))
        value = self.ev(right)
        if left is not None and left.type == "identifier":
            name = text(left)
            old = self.scope.scalars.get(name, V.symbol(name))
            new = value if op == "=" else self._binop(op[:-1], old, value)
            if mentions_grid(right, self.scope.grid_vars):
                self.scope.grid_vars.add(name)
            self._bind(name, replace(new, fp=old.fp or new.fp))
            return new
        target = left
        if left is not None and left.type == "field_expression" and is_memory(child(left, "argument")):
            target = child(left, "argument")
        if target is not None and is_memory(target):
            if op != "=":
                old = self.access(target, "load")
                self._binop(op[:-1], old, value)
            self.access(target, "store")
        else:
            self.ev(left)
        return value

    def _bind(self, name: str, value: Value) -> None:
        scope = self.scope
        if name in scope.scalars and self.cond_depth > scope.level.get(name, 0):
            value = V.join(scope.scalars[name], value)
        scope.scalars[name] = value

    def _e_call_expression(self, node: Any) -> Value:
        name = callee(node)
        function = child(node, "function")
        args = list(child(node, "arguments").named_children) if child(node, "arguments") is not None else []
        obj = text(child(function, "argument")) if function is not None and function.type == "field_expression" else ""
        if name in BARRIERS or (name == "sync" and self.scope.groups.get(obj or first_text(args)) == "block"):
            self._barrier(node)
        elif name in ("__syncwarp",) or name == "sync":
            self.record.warp_syncs += 1
        elif WARP_PRIMITIVES.match(name) and (name.startswith("__") or obj or name in ("reduce",)):
            self.record.warp_ops.append((self.kernel.name, line(node), name))
        if name == "thread_rank" and self.scope.groups.get(obj):
            return V.lane()
        if name.startswith("atomic") and args:
            return self._address_op(args, "atomic")
        if name in LOADS and args:
            return self._address_op(args, "load")
        if name in STORES and args:
            return self._address_op(args, "store")
        if name in CASTS and len(args) == 1:
            value = self.ev(args[0])
            type_text = text(child(function, "arguments"))
            return value if "*" in type_text else replace(value, fp=base_type(type_text.strip("<>")) in FLOAT_TYPES)
        if name in self.functions and self.functions[name].kind != "host":
            return self._inline(self.functions[name], args)
        values = [self.ev(a) for a in args]
        if name in ("min", "max", "umin", "umax", "fminf", "fmaxf", "abs"):
            result = values[0] if len(values) == 1 else V.join(*values[:2]) if len(values) >= 2 else V.opaque()
        else:
            fp = name in FMAS or bool(FP_MATH.match(name)) or any(v.fp for v in values)
            result = V.call_result(values, fp=fp)
        if name in FMAS:
            self.record.flops += 2 * self._weight()
        elif FP_MATH.match(name):
            self.record.flops += self._weight()
        return result

    def _barrier(self, node: Any) -> None:
        for flags in self.open_loops:
            flags["barrier"] = True
        self.record.barriers.append(Barrier(self.kernel.name, line(node), self.divergent > 0, self.loop_depth > 0))

    def _address_op(self, args: list[Any], op: str) -> Value:
        for extra in args[1:]:
            self.ev(extra)
        target = self.pointer(args[0])
        if target is None:
            self.ev(args[0])
            return V.opaque()
        return self._record(target, target.offset, line(args[0]), op)

    def _inline(self, fn: FunctionDef, args: list[Any]) -> Value:
        if fn.name in self.inlined or len(self.inlined) >= MAX_INLINE:
            return V.call_result([self.ev(a) for a in args])
        params = child(child(fn.node, "declarator"), "parameters")
        plist = [p for p in (params.named_children if params is not None else ()) if "parameter" in p.type]
        outer = self.scope
        inner = Scope(consts=dict(outer.consts), groups=dict(outer.groups))
        bound: list[tuple[Any, Any]] = list(zip(plist, args, strict=False))
        pending: list[tuple[Any, Value | Pointer | None]] = []
        for param, arg in bound:  # evaluate in the caller's scope, bind in the callee's
            is_ptr = any(d.pointer or d.dims for d in declarators(param, outer.consts))
            pending.append((param, self.pointer(arg) if is_ptr else self.ev(arg)))
        self.scope = inner
        for param, got in pending:
            self._bind_evaluated(param, got)
        self.inlined.append(fn.name)
        try:
            self.stmt(child(fn.node, "body"))
        finally:
            self.inlined.pop()
            self.scope = outer
        if not inner.returns:
            return V.opaque()
        result = inner.returns[0]
        for value in inner.returns[1:]:
            result = V.join(result, value)
        return result

    def _bind_evaluated(self, param: Any, got: Value | Pointer | None) -> None:
        type_text = text(child(param, "type"))
        for decl in declarators(param, self.scope.consts):
            if not decl.name:
                continue
            if isinstance(got, Pointer):
                self.scope.pointers[decl.name] = got
            elif decl.pointer or decl.dims:
                self.scope.pointers[decl.name] = new_pointer(decl.name, "unknown", type_text)
            else:
                value = got if isinstance(got, Value) else V.opaque()
                self.scope.scalars[decl.name] = replace(value, fp=base_type(type_text) in FLOAT_TYPES)
