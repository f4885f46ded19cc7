"""Safe evaluation of the integer expressions used in task files (shapes, values)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from functools import lru_cache

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS = {"min": min, "max": max}


def evaluate(expression: str | int | float, symbols: Mapping[str, int]) -> int | float:
    """Evaluate a task-file expression such as ``N*M + 1`` or ``max(N // 2, 1)``.

    Args:
        expression: The expression text, or a number (returned as is).
        symbols: Values of the configuration's symbols.

    Returns:
        The value.

    Raises:
        ValueError: On unknown symbols or anything but arithmetic, min and max.
    """
    if isinstance(expression, bool):
        raise ValueError(f"expected a number or an expression, got {expression!r}")
    if isinstance(expression, (int, float)):
        return expression
    return _eval(_parse(str(expression)), symbols, str(expression))


@lru_cache(maxsize=16384)
def _parse(text: str) -> ast.expr:
    """The expression's syntax tree (cached: a dataset repeats the same few thousand; never mutated)."""
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse expression {text!r}: {exc.msg}") from None


def symbols_used(expression: str | int | float) -> set[str]:
    """Names an expression refers to (not counting ``min``/``max``)."""
    if not isinstance(expression, str):
        return set()
    tree = ast.parse(expression, mode="eval")
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - calls


def _eval(node: ast.AST, symbols: Mapping[str, int], text: str) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
        node.value, bool
    ):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise ValueError(f"unknown symbol '{node.id}' in {text!r} (configuration defines: {known})")
        return symbols[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, symbols, text), _eval(node.right, symbols, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, symbols, text)
        return -value if isinstance(node.op, ast.USub) else value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and node.args
    ):
        return _FUNCTIONS[node.func.id](*(_eval(a, symbols, text) for a in node.args))
    raise ValueError(
        f"unsupported syntax in {text!r}: use integers, symbols, + - * // % **, min() and max()"
    )
