"""The family generators, by name: the one place a new family is registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from cudaperf_env.dataset.families import (
    argreduce,
    elementwise,
    histogram,
    linalg,
    reduction,
    rowwise,
    stencil,
    transpose,
)

Generator = Callable[[np.random.Generator, int], dict[str, Any]]

FAMILIES: Mapping[str, Generator] = MappingProxyType(
    {
        "map_unary": elementwise.map_unary,
        "map_binary": elementwise.map_binary,
        "reduce": reduction.reduce,
        "norm": reduction.norm,
        "dot_reduce": reduction.dot_reduce,
        "argreduce": argreduce.argreduce,
        "histogram": histogram.histogram,
        "transpose": transpose.transpose,
        "matvec": linalg.matvec,
        "matmul": linalg.matmul,
        "row_reduce": rowwise.row_reduce,
        "row_normalize": rowwise.row_normalize,
        "stencil1d": stencil.stencil1d,
        "stencil2d": stencil.stencil2d,
        "stencil3d": stencil.stencil3d,
    }
)


def family_names() -> tuple[str, ...]:
    """Every registered family, sorted."""
    return tuple(sorted(FAMILIES))
