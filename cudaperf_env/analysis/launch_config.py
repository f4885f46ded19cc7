"""Launch configurations ``k<<<grid, block, shared>>>(...)`` read from host code, when they are constant.

The block size and dynamic shared memory of a launch are folded from
literals, named constants, ``dim3`` variables and simple expressions of them
(``dim3 block(16, 16)``, ``THREADS``, ``4 * sizeof(float)``); anything else
(a value computed at run time) stays unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cudaperf_env.analysis.constants import declarators, fold
from cudaperf_env.analysis.syntax import base_type, child, int_literal, line, text, walk

Dims = tuple[int, int, int]


@dataclass(frozen=True)
class Launch:
    """One kernel launch in host code.

    Attributes:
        kernel: The launched kernel's simple name.
        line: Source line.
        block: Block dimensions ``(x, y, z)`` when constant.
        shared_bytes: Dynamic shared memory per block when constant (0 when not given).
        template_args: Constant template arguments of the kernel (None where not constant).
        grid: Grid dimensions ``(x, y, z)`` when they fold (with the scalar arguments' values,
            when the caller put them in ``consts``).
        args: The launch's arguments, each folded to an integer where possible, else its text.
        in_loop: The launch sits inside a host loop (it may run many times).
    """

    kernel: str
    line: int
    block: Dims | None
    shared_bytes: int | None
    template_args: tuple[int | None, ...] = ()
    grid: Dims | None = None
    args: tuple[int | str, ...] = ()
    in_loop: bool = False

    @property
    def threads(self) -> int | None:
        """Threads per block, when constant."""
        if self.block is None:
            return None
        x, y, z = self.block
        return x * y * z


def find_launches(function: Any, consts: Mapping[str, int]) -> list[Launch]:
    """The launches in one host function, in source order.

    Args:
        function: A ``function_definition`` node.
        consts: The file's named constants.
    """
    env: dict[str, int] = dict(consts)
    dims: dict[str, Dims] = {}
    launches: list[Launch] = []
    for node in walk(function):
        if node.type == "declaration":
            _declare(node, env, dims)
        elif node.type == "assignment_expression":
            name = text(child(node, "left"))
            value = fold(child(node, "right"), env) if text(child(node, "operator")) == "=" else None
            env.pop(name, None)
            if value is not None:
                env[name] = value
        elif node.type == "call_expression" and _config(node) is not None:
            launches.append(_launch(node, env, dims))
    return launches


def _declare(node: Any, env: dict[str, int], dims: dict[str, Dims]) -> None:
    is_dim3 = base_type(text(child(node, "type"))) == "dim3"
    if is_dim3:
        _vexing_dim3(node, env, dims)
    for decl in declarators(node, env):
        if not decl.name or decl.pointer or decl.dims:
            continue
        env.pop(decl.name, None)
        if decl.value is None:
            continue
        if is_dim3:
            found = _dims(decl.value, env, dims)
            if found is not None:
                dims[decl.name] = found
        else:
            value = fold(decl.value, env)
            if value is not None:
                env[decl.name] = value


def _vexing_dim3(node: Any, env: Mapping[str, int], dims: dict[str, Dims]) -> None:
    """``dim3 block(TILE, ROWS);`` parses as a function declaration (names look like types): read it as a call."""
    for decl in node.children_by_field_name("declarator"):
        params = child(decl, "parameters")
        if decl.type != "function_declarator" or params is None:
            continue
        words = [text(p).strip() for p in params.named_children]
        values = [int_literal(w) if int_literal(w) is not None else env.get(w) for w in words]
        if 0 < len(values) <= 3 and all(v is not None and v > 0 for v in values):
            padded = [int(v) for v in values if v is not None] + [1, 1]
            dims[text(child(decl, "declarator"))] = (padded[0], padded[1], padded[2])


def _config(node: Any) -> Any:
    for sub in node.named_children:
        if sub.type == "kernel_call_syntax":
            return sub
    return None


def _launch(node: Any, env: Mapping[str, int], dims: Mapping[str, Dims]) -> Launch:
    parts = _config(node).named_children
    function = child(node, "function")
    template_args: tuple[int | None, ...] = ()
    if function is not None and function.type == "template_function":
        args = child(function, "arguments")
        template_args = tuple(fold(a, env) for a in (args.named_children if args is not None else ()))
        function = child(function, "name")
    name = text(function).split("::")[-1]
    block = _dims(parts[1], env, dims) if len(parts) > 1 else None
    shared = fold(parts[2], env) if len(parts) > 2 else 0
    grid = _dims(parts[0], env, dims) if parts else None
    call_args = child(node, "arguments")
    args = tuple(_arg(a, env) for a in (call_args.named_children if call_args is not None else ()))
    return Launch(name, line(node), block, shared, template_args, grid, args, _in_loop(node))


def _arg(node: Any, env: Mapping[str, int]) -> int | str:
    value = fold(node, env)
    return value if value is not None else text(node)


def _in_loop(node: Any) -> bool:
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type in ("for_statement", "while_statement", "do_statement"):
            return True
        parent = parent.parent
    return False


def _dims(node: Any, env: Mapping[str, int], dims: Mapping[str, Dims]) -> Dims | None:
    if node.type == "identifier" and text(node) in dims:
        return dims[text(node)]
    if node.type in ("argument_list", "initializer_list") or (
        node.type == "call_expression" and text(child(node, "function")) == "dim3"
    ):
        args = node.named_children if node.type != "call_expression" else child(node, "arguments").named_children
        values = [fold(a, env) for a in args]
        if not values or len(values) > 3 or any(v is None or v <= 0 for v in values):
            return None
        padded = [int(v) for v in values if v is not None] + [1, 1]
        return padded[0], padded[1], padded[2]
    value = fold(node, env)
    return (value, 1, 1) if value is not None and value > 0 else None
