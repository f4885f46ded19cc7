"""The structural score: features -> components in [0, 1] -> one weighted score in [0, 1].

Components (each computed only when its inputs exist; the weights of the
missing ones are left out of the normalisation):

==============  =======  ===========================================================================
component       weight   from (profiler value first when present)
==============  =======  ===========================================================================
coalescing      0.30     ncu load/store efficiency (bytes used per byte fetched), else the static
                         share of coalesced global access sites (uniform = 1, strided = 0,
                         indirect/unknown = 0.5)
occupancy       0.20     ncu achieved occupancy, else theoretical occupancy (ptxas + block size),
                         as ``min(1, occupancy / occupancy_target)``; target 0.5
reuse           0.15     arithmetic intensity (ncu DRAM FLOP/byte, else the static loop-weighted
                         FLOP per byte of global traffic): ``log2(1 + ai) / log2(1 + target)``, target 4
sync            0.15     1; ``1 - tree_reduction_penalty`` (0.5) with a shared-memory tree reduction
                         (a barrier per step); 0 with a barrier inside a thread-dependent branch
resources       0.10     ``1 - spill_bytes / spill_tolerance_bytes`` (256), at least 0
vectorization   0.05     share of 128-bit global loads/stores in SASS, else of vector-type sites
atomics         0.05     1; 0.5 with global atomics at data-dependent addresses; 0 with contended
                         ones (every lane on one address)
==============  =======  ===========================================================================

``score = sum(w * c) / sum(w)`` over the available components, multiplied by
``deadlock_factor`` (0.5) when a barrier sits in a thread-dependent branch. A
submission with no kernel, or nested too deeply to analyse (``analysis_truncated``), scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from cudaperf_env.analysis.report import Feature

COMPONENTS = ("coalescing", "occupancy", "reuse", "sync", "resources", "vectorization", "atomics")


@dataclass(frozen=True)
class ScoreWeights:
    """Weights and targets of the structural score.

    Attributes:
        coalescing: Weight of memory coalescing.
        occupancy: Weight of (theoretical or achieved) occupancy.
        reuse: Weight of arithmetic intensity (data reuse).
        sync: Weight of synchronization patterns.
        resources: Weight of register spilling.
        vectorization: Weight of 128-bit global accesses.
        atomics: Weight of atomic contention.
        occupancy_target: Occupancy that earns full credit (latency is usually hidden by then).
        intensity_target: FLOP per byte that earns full reuse credit.
        spill_tolerance_bytes: Spilled bytes at which the resources component reaches 0.
        tree_reduction_penalty: Taken off ``sync`` for a shared-memory tree reduction.
        deadlock_factor: Multiplies the score when a barrier may deadlock.
    """

    coalescing: float = 0.30
    occupancy: float = 0.20
    reuse: float = 0.15
    sync: float = 0.15
    resources: float = 0.10
    vectorization: float = 0.05
    atomics: float = 0.05
    occupancy_target: float = 0.5
    intensity_target: float = 4.0
    spill_tolerance_bytes: int = 256
    tree_reduction_penalty: float = 0.5
    deadlock_factor: float = 0.5

    def __post_init__(self) -> None:
        weights = [getattr(self, name) for name in COMPONENTS]
        if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
            given = dict(zip(COMPONENTS, weights, strict=True))
            raise ValueError(f"component weights must be finite, >= 0 and not all 0, got {given}")
        if not 0 < self.occupancy_target <= 1:
            raise ValueError(f"occupancy_target must be in (0, 1], got {self.occupancy_target}")
        if self.intensity_target <= 0 or self.spill_tolerance_bytes <= 0:
            raise ValueError("intensity_target and spill_tolerance_bytes must be positive")
        for name in ("tree_reduction_penalty", "deadlock_factor"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")

    def weight(self, component: str) -> float:
        """The weight of a component by name."""
        if component not in COMPONENTS:
            raise KeyError(f"no component {component!r}; expected one of {', '.join(COMPONENTS)}")
        return float(getattr(self, component))


def _num(features: Mapping[str, Feature], name: str) -> float | None:
    feature = features.get(name)
    if feature is None or isinstance(feature.value, str):
        return None
    value = float(feature.value)
    return value if math.isfinite(value) else None


def _first(features: Mapping[str, Feature], *names: str) -> float | None:
    return next((v for v in (_num(features, n) for n in names) if v is not None), None)


def components(features: Mapping[str, Feature], weights: ScoreWeights) -> dict[str, float]:
    """The score's components that the features allow, each in [0, 1]."""
    out: dict[str, float] = {}
    loads, stores = _num(features, "ncu_load_efficiency"), _num(features, "ncu_store_efficiency")
    measured = [v for v in (loads, stores) if v is not None]
    coalesced = sum(measured) / len(measured) if measured else _num(features, "coalescing")
    if coalesced is not None:
        out["coalescing"] = coalesced
    occ = _first(features, "ncu_achieved_occupancy", "occupancy")
    if occ is not None:
        out["occupancy"] = occ / weights.occupancy_target
    intensity = _first(features, "ncu_arithmetic_intensity", "arithmetic_intensity")
    if intensity is not None:
        out["reuse"] = math.log2(1 + max(0.0, intensity)) / math.log2(1 + weights.intensity_target)
    if _num(features, "kernels"):
        sync = 1.0 - weights.tree_reduction_penalty * ((_num(features, "smem_tree_reductions") or 0) > 0)
        out["sync"] = 0.0 if _num(features, "divergent_barriers") else sync
        atomics = 1.0
        if _num(features, "indirect_global_atomics"):
            atomics = 0.5
        if _num(features, "contended_atomics"):
            atomics = 0.0
        out["atomics"] = atomics
    spills = _num(features, "spill_bytes")
    if spills is not None:
        out["resources"] = 1.0 - spills / weights.spill_tolerance_bytes
    vector = _first(features, "sass_vector_fraction", "vectorized_fraction")
    if vector is not None:
        out["vectorization"] = vector
    return {k: min(1.0, max(0.0, v)) for k, v in out.items()}


def structural_score(
    features: Mapping[str, Feature], weights: ScoreWeights | None = None
) -> tuple[float, dict[str, float]]:
    """The score in [0, 1] and its components.

    Returns:
        ``(score, components)``; ``(0.0, {})`` when the features show no kernel.
    """
    weights = weights or ScoreWeights()
    if not _num(features, "kernels") and not _num(features, "compiled_kernels"):
        return 0.0, {}
    if _num(features, "analysis_truncated"):
        return 0.0, {}
    parts = components(features, weights)
    total_weight = sum(weights.weight(name) for name in parts)
    if total_weight <= 0:
        return 0.0, parts
    score = sum(weights.weight(name) * value for name, value in parts.items()) / total_weight
    if _num(features, "divergent_barriers"):
        score *= weights.deadlock_factor
    return min(1.0, max(0.0, score)), parts


def weights_table(weights: ScoreWeights | None = None) -> dict[str, float]:
    """Every field of the weights, for reports."""
    weights = weights or ScoreWeights()
    return {f.name: float(getattr(weights, f.name)) for f in fields(weights)}
