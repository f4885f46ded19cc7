"""Boundary rules of grid reads, shared by stencils, convolutions and PDE steps: the body of ``at()``.

A family declares ``T at(const T* x, <extents>, <coordinates>) { <read_body(...)> }`` and every
implementation reads the grid through it, so reference and kernels treat the border alike.
"""

from __future__ import annotations

from collections.abc import Sequence

RULES = ("zero", "clamp", "periodic", "valid", "constant")


def _flat(dims: Sequence[str], coords: Sequence[str]) -> str:
    """The row-major flat index of ``coords`` in a grid of extents ``dims``."""
    terms = []
    for k, c in enumerate(coords):
        stride = " * ".join(dims[k + 1 :])
        terms.append(f"(long){c} * {stride}" if stride else c)
    return " + ".join(terms)


def read_body(rule: str, t: str, dims: Sequence[str], coords: Sequence[str], array: str = "x",
              outside: str = "0") -> str:  # fmt: skip
    """The C statement ``return ...;`` that reads ``array`` at ``coords`` under ``rule``.

    Args:
        rule: ``zero`` (``outside`` value, default 0, off the grid), ``constant`` (same, named for a given
            value), ``clamp`` (nearest edge), ``periodic`` (wrap around), or ``valid`` (0 past the far end;
            the caller never reads below 0).
        t: C type of the elements.
        dims: Extent names, slowest first (``["h", "w"]``).
        coords: Coordinate names or expressions, in the order of ``dims``.
        array: Name of the grid pointer.
        outside: Value off the grid for ``zero``/``constant``.
    """
    if rule not in RULES:
        raise ValueError(f"unknown boundary rule {rule!r}; expected one of {', '.join(RULES)}")
    if rule in ("zero", "constant", "valid"):
        low = rule != "valid"
        tests = " || ".join((f"{c} < 0 || " if low else "") + f"{c} >= {d}" for c, d in zip(coords, dims, strict=True))
        return f"return ({tests}) ? ({t})({outside}) : {array}[{_flat(dims, coords)}];"
    if rule == "clamp":
        idx = [f"({c} < 0 ? 0 : ({c} >= {d} ? {d} - 1 : {c}))" for c, d in zip(coords, dims, strict=True)]
    else:
        idx = [f"((({c}) % {d} + {d}) % {d})" for c, d in zip(coords, dims, strict=True)]
    return f"return {array}[{_flat(dims, idx)}];"
