"""Compile-time integers: constant folding over syntax nodes and the file's named constants.

Named constants are ``constexpr``/``const`` integer variables, enumerators and
object-like ``#define`` macros whose value folds to an integer. They give
tile sizes and launch configurations their values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cudaperf_env.analysis.syntax import TYPE_BYTES, base_type, child, int_literal, parse, text

_FOLD_DEPTH = 64
_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: int(a / b) if b else None,
    "%": lambda a, b: a - b * int(a / b) if b else None,
    "<<": lambda a, b: a << b if 0 <= b < 64 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 64 else None,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a and b)),
    "||": lambda a, b: int(bool(a or b)),
}
_LIMIT = 1 << 62  # folded values beyond this are not sizes; stop before Python makes huge ints


def fold(node: Any, env: Mapping[str, int], depth: int = 0) -> int | None:
    """The integer value of an expression node, or None when it is not a compile-time constant.

    Args:
        node: A tree-sitter expression node.
        env: Values of named constants.
        depth: Recursion depth so far (hostile nesting gives None, never RecursionError).
    """
    if node is None or depth > _FOLD_DEPTH:
        return None
    kind = node.type
    if kind == "number_literal":
        return int_literal(text(node))
    if kind in ("identifier", "qualified_identifier"):
        name = text(node).split("::")[-1]
        return env.get(name)
    if kind == "field_expression":  # ``blockDim.x``: only callers that bind it (configuration-aware features)
        return env.get(text(node).replace(" ", ""))
    if kind in ("true", "false"):
        return int(kind == "true")
    if kind == "char_literal":
        body = text(node).strip("'")
        return ord(body) if len(body) == 1 else None
    if kind in ("parenthesized_expression", "condition_clause"):
        inner = node.named_children
        return fold(inner[-1], env, depth + 1) if inner else None
    if kind == "cast_expression":
        return fold(child(node, "value"), env, depth + 1)
    if kind == "sizeof_expression":
        return _sizeof(node)
    if kind == "unary_expression":
        value = fold(child(node, "argument"), env, depth + 1)
        op = text(child(node, "operator"))
        if value is None:
            return None
        return {"-": -value, "+": value, "~": ~value, "!": int(not value)}.get(op)
    if kind == "binary_expression":
        return _binary(node, env, depth)
    if kind == "conditional_expression":
        cond = fold(child(node, "condition"), env, depth + 1)
        if cond is None:
            return None
        return fold(child(node, "consequence" if cond else "alternative"), env, depth + 1)
    if kind == "call_expression":
        return _call(node, env, depth)
    return None


def _binary(node: Any, env: Mapping[str, int], depth: int) -> int | None:
    op = _BINARY.get(text(child(node, "operator")))
    left = fold(child(node, "left"), env, depth + 1)
    right = fold(child(node, "right"), env, depth + 1)
    if op is None or left is None or right is None:
        return None
    value = op(left, right)
    return value if value is not None and abs(value) < _LIMIT else None


def _call(node: Any, env: Mapping[str, int], depth: int) -> int | None:
    name = text(child(node, "function")).split("::")[-1]
    args = [fold(a, env, depth + 1) for a in child(node, "arguments").named_children]
    if name in ("min", "max") and len(args) == 2 and None not in args:
        return min(args) if name == "min" else max(args)  # type: ignore[type-var]
    if name in ("static_cast", "int", "unsigned") or name.startswith("static_cast<"):
        return args[0] if len(args) == 1 else None
    return None


def _sizeof(node: Any) -> int | None:
    type_node = child(node, "type")
    if type_node is not None:
        return TYPE_BYTES.get(base_type(text(type_node)))
    return None


@dataclass(frozen=True)
class Declarator:
    """One name declared by a declaration.

    Attributes:
        name: The declared name.
        pointer: Declared as a pointer (``T* p``) or reference to one.
        dims: Array dimensions, outermost first (None: unsized or not constant).
        value: The initializer node (an expression, ``argument_list`` or ``initializer_list``), or None.
    """

    name: str
    pointer: bool
    dims: tuple[int | None, ...]
    value: Any


def declarators(node: Any, env: Mapping[str, int]) -> Iterator[Declarator]:
    """The names a ``declaration`` (or ``parameter_declaration``) declares, in order."""
    for decl in node.children_by_field_name("declarator"):
        yield unwrap_declarator(decl, env)


def unwrap_declarator(decl: Any, env: Mapping[str, int]) -> Declarator:
    """Name, pointer-ness, dimensions and initializer of one declarator node."""
    value = None
    pointer = False
    dims: list[int | None] = []
    node = decl
    for _ in range(32):
        kind = node.type
        if kind == "init_declarator":
            value = child(node, "value")
        elif kind in ("pointer_declarator", "abstract_pointer_declarator"):
            pointer = True
        elif kind == "array_declarator":
            size = child(node, "size")
            dims.insert(0, fold(size, env) if size is not None else None)
        elif kind == "reference_declarator":
            inner = node.named_children
            node = inner[-1] if inner else node
            continue
        else:
            break
        nxt = child(node, "declarator")
        if nxt is None:
            break
        node = nxt
    name = text(node).split("::")[-1] if node.type in ("identifier", "qualified_identifier") else ""
    return Declarator(name, pointer, tuple(dims), value)


def file_constants(root: Any) -> dict[str, int]:
    """Named integer constants at namespace scope and in ``#define``/``enum``, in source order."""
    env: dict[str, int] = {}
    for node in _top_level(root):
        if node.type == "preproc_def":
            _define(node, env)
        elif node.type == "declaration":
            add_declaration_constants(node, env)
        for enum in (node, *node.named_children):
            if enum.type == "enum_specifier":
                _enum(enum, env)
    return env


def _top_level(root: Any) -> Iterator[Any]:
    pending = list(reversed(root.named_children))
    while pending:
        node = pending.pop()
        yield node
        if node.type in ("namespace_definition", "linkage_specification", "declaration_list",
                         "preproc_if", "preproc_ifdef", "preproc_else", "template_declaration"):
            body = [c for c in node.named_children if c.type not in ("function_definition",)]
            pending.extend(reversed(body))


def add_declaration_constants(node: Any, env: dict[str, int]) -> None:
    """Adds the constant integer variables a declaration defines to ``env``."""
    head = " ".join(text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier"))
    if "const" not in head.split() and "constexpr" not in head.split():
        return
    type_text = text(child(node, "type"))
    if type_text and base_type(type_text) not in TYPE_BYTES:
        return
    for decl in declarators(node, env):
        if decl.name and not decl.pointer and not decl.dims and decl.value is not None:
            value = fold(decl.value, env)
            if value is not None:
                env[decl.name] = value


def _define(node: Any, env: dict[str, int]) -> None:
    name = text(child(node, "name"))
    body = text(child(node, "value")).strip()
    if not name or not body or len(body) > 200:
        return
    value = int_literal(body)
    if value is None:
        tree = parse(f"int __cudaperf_macro = ({body});")
        decl = tree.root.named_children[0] if tree.root.named_children else None
        if decl is not None and decl.type == "declaration":
            found = list(declarators(decl, env))
            value = fold(found[0].value, env) if found and found[0].value is not None else None
    if value is not None:
        env[name] = value


def _enum(node: Any, env: dict[str, int]) -> None:
    body = child(node, "body")
    if body is None:
        return
    nxt = 0
    for item in body.named_children:
        if item.type != "enumerator":
            continue
        value_node = child(item, "value")
        value = fold(value_node, env) if value_node is not None else nxt
        if value is None:
            return
        env[text(child(item, "name"))] = value
        nxt = value + 1
