"""CUDA syntax trees from tree-sitter's CUDA grammar, and small helpers over their nodes.

``#pragma`` lines are blanked before parsing (the grammar cannot place a
pragma between a ``for`` header and its body) and returned by line, so the
analysis still sees ``#pragma unroll``. Offsets and line numbers are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cudaperf_env.source.tokens import directive_name, tokenize

# Bytes of the element types the analysis meets in kernels (vector types included).
TYPE_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "half": 2, "__half": 2,
    "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "char4": 4, "uchar4": 4, "half2": 4, "__half2": 4, "__nv_bfloat162": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8, "short4": 8,
    "float4": 16, "int4": 16, "uint4": 16, "double2": 16, "longlong2": 16, "ulonglong2": 16,
}
FLOAT_TYPES = frozenset(
    {"float", "double", "half", "__half", "half2", "__half2", "__nv_bfloat16", "nv_bfloat16",
     "__nv_bfloat162", "float2", "float4", "double2"}
)
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|__shared__|extern|static|"
                         r"__device__|__constant__|struct|register|constexpr)\b")
_INT = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|0[0-7']*|[1-9][0-9']*)([uUlL]*)$")


@dataclass(frozen=True)
class Tree:
    """A parsed translation unit.

    Attributes:
        root: The tree-sitter root node.
        source: The source as parsed (pragmas blanked).
        pragmas: ``#pragma`` text by line (``{12: "unroll 4"}``).
        errors: Number of ERROR or missing nodes (0 for clean code).
    """

    root: Any
    source: bytes
    pragmas: dict[int, str]
    errors: int


@lru_cache(maxsize=1)
def _language() -> Any:
    import tree_sitter_cuda
    from tree_sitter import Language

    return Language(tree_sitter_cuda.language())


def available() -> bool:
    """Whether the tree-sitter CUDA grammar is installed."""
    try:
        _language()
    except ImportError:
        return False
    return True


def parse(code: str) -> Tree:
    """Parses CUDA source (never raises on malformed code; ImportError without tree-sitter)."""
    from tree_sitter import Parser

    text, pragmas = _blank_pragmas(code)
    data = text.encode("utf-8", "replace")
    root = Parser(_language()).parse(data).root_node
    return Tree(root, data, pragmas, _count_errors(root) if root.has_error else 0)


def _blank_pragmas(code: str) -> tuple[str, dict[int, str]]:
    pragmas: dict[int, str] = {}
    pieces: list[str] = []
    last = 0
    for tok in tokenize(code):
        if tok.kind != "directive" or directive_name(tok) != "pragma":
            continue
        body = tok.text.split("pragma", 1)[1].replace("\\\n", " ").strip()
        pragmas[tok.line + tok.text.count("\n")] = body  # the line the next statement follows
        pieces.append(code[last : tok.start])
        pieces.append(re.sub(r"[^\n]", " ", tok.text))
        last = tok.end
    pieces.append(code[last:])
    return "".join(pieces), pragmas


def _count_errors(root: Any) -> int:
    return sum(1 for n in walk(root) if n.type == "ERROR" or n.is_missing)


def walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` in document order (iterative: deep trees must not recurse)."""
    cursor = node.walk()
    visited = False
    while True:
        if not visited:
            yield cursor.node
            if cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited = False
            continue
        if not cursor.goto_parent() or cursor.node == node:
            return
        visited = True


def function_definitions(root: Any) -> Iterator[tuple[str, str, Any]]:
    """``(name, kind, node)`` of every function with a body; kind is ``kernel``, ``device`` or ``host``.

    The name drops qualifiers and template arguments (``ns::f<T>`` -> ``f``).
    """
    for node in walk(root):
        if node.type != "function_definition" or child(node, "body") is None:
            continue
        declarator = child(node, "declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = child(declarator, "declarator")
        if declarator is None:
            continue
        name = text(child(declarator, "declarator")).split("::")[-1].split("<")[0].strip()
        words = {text(c) for c in node.children if c.type != "compound_statement"}
        yield name, "kernel" if "__global__" in words else "device" if "__device__" in words else "host", node


def text(node: Any) -> str:
    """The node's source text."""
    return node.text.decode("utf-8", "replace") if node is not None else ""


def line(node: Any) -> int:
    """1-based line of the node's first character."""
    return int(node.start_point[0]) + 1


def child(node: Any, field: str) -> Any:
    """The child in ``field``, or None."""
    return node.child_by_field_name(field) if node is not None else None


def int_literal(token: str) -> int | None:
    """The value of a C integer literal (``0x1f``, ``256u``, ``1'000``), None for anything else."""
    m = _INT.match(token.strip())
    if not m:
        return None
    digits = m.group(1).replace("'", "")
    if digits.startswith(("0x", "0X")):
        return int(digits, 16)
    if digits.startswith(("0b", "0B")):
        return int(digits[2:], 2)
    if len(digits) > 1 and digits.startswith("0"):
        return int(digits, 8)
    return int(digits)


def is_float_literal(token: str) -> bool:
    """Whether a number literal is floating-point (``1.0f``, ``2e3``, ``.5``)."""
    t = token.lower()
    return not t.startswith("0x") and ("." in t or "e" in t or t.endswith("f"))


def base_type(type_text: str) -> str:
    """A declaration's type without qualifiers, namespaces or template arguments: ``"float4"``."""
    head = type_text.split("<")[0].replace("*", " ").replace("&", " ").replace("::", " ")
    bare = _QUALIFIERS.sub(" ", head).split()
    if len(bare) > 1 and " ".join(bare[-2:]) in TYPE_BYTES:
        return " ".join(bare[-2:])
    return bare[-1] if bare else ""


def type_bytes(type_text: str) -> int | None:
    """Size in bytes of a (qualified) scalar or vector type name, None when unknown."""
    return TYPE_BYTES.get(base_type(type_text))
