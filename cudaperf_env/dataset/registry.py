"""The family generators, by name: the one place a new family is registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from cudaperf_env.dataset.families import elementwise

Generator = Callable[[np.random.Generator, int], dict[str, Any]]

FAMILIES: Mapping[str, Generator] = MappingProxyType(
    {
        "map_unary": elementwise.map_unary,
        "map_binary": elementwise.map_binary,
    }
)


def family_names() -> tuple[str, ...]:
    """Every registered family, sorted."""
    return tuple(sorted(FAMILIES))
