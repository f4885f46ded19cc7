"""The result of a structural analysis: features tagged with their source, a score and hints."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

SOURCES = ("static", "compiler", "profiler")
FeatureValue = float | int | bool | str


@dataclass(frozen=True)
class Feature:
    """One structural feature.

    Attributes:
        value: A number, flag or label.
        source: Where it came from: ``static`` (the source text), ``compiler``
            (ptxas, SASS, occupancy from them) or ``profiler`` (Nsight Compute on a GPU).
    """

    value: FeatureValue
    source: str

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"feature source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if not isinstance(self.value, float | int | bool | str):
            raise TypeError(f"feature value must be a number, bool or str, got {type(self.value).__name__}")


@dataclass(frozen=True)
class StructuralReport:
    """Structural features of one submission, its score and the feedback hints.

    Attributes:
        features: Feature by name (each with its source).
        score: Structural score in [0, 1]; 0 when no kernel was found.
        hints: Human-readable findings naming their cause, most important first.
        components: The score's components in [0, 1] (only those that could be computed).
    """

    features: Mapping[str, Feature] = field(default_factory=dict)
    score: float = 0.0
    hints: tuple[str, ...] = ()
    components: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (math.isnan(self.score) or 0.0 <= self.score <= 1.0):
            raise ValueError(f"score must be in [0, 1] or NaN, got {self.score}")
        object.__setattr__(self, "features", MappingProxyType(dict(self.features)))
        object.__setattr__(self, "components", MappingProxyType(dict(self.components)))

    def value(self, name: str, default: FeatureValue | None = None) -> FeatureValue | None:
        """A feature's value, or ``default`` when it is absent."""
        feature = self.features.get(name)
        return feature.value if feature is not None else default

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``structural_score``, ``features`` (value and source), ``hints``, ``components``.

        Non-finite numbers become None (JSON has no NaN).
        """
        return {
            "structural_score": _finite(self.score),
            "features": {k: {"value": _finite(f.value), "source": f.source} for k, f in sorted(self.features.items())},
            "hints": list(self.hints),
            "components": {k: _finite(v) for k, v in self.components.items()},
        }


def _finite(value: FeatureValue) -> FeatureValue | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
