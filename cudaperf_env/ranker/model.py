"""The pairwise model as data: P(a faster than b) from the difference of their feature vectors, in numpy.

Two kinds, both stored as JSON and evaluated without any learning library:

- ``trees``: a gradient-boosted Bradley-Terry model (LightGBM's binary objective on
  feature differences, trained on both orientations of every pair), exported tree
  by tree; evaluated here with LightGBM's rules for missing values;
- ``logistic``: L2-regularized logistic regression on standardized differences.

The margin is made exactly antisymmetric, ``m(a, b) = (f(x_a - x_b, c) - f(x_b - x_a, c)) / 2``
(``c``: the configuration's context features), so ``P(a > b) = 1 - P(b > a)`` and
``P(a > a) = 0.5``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "cudaperf-ranker/1"
KINDS = ("trees", "logistic")


@dataclass(frozen=True)
class Tree:
    """One regression tree, flattened: node ``i`` splits on ``feature[i] <= threshold[i]``.

    Children ``>= 0`` are nodes; a child ``c < 0`` is the leaf ``~c`` with value ``leaf[~c]``.
    ``missing[i]``: 0 (NaN compares as 0), 1 (0 and NaN take the default side), 2 (NaN takes it).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    missing: np.ndarray
    leaf: np.ndarray

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Leaf values for the rows of ``x`` (N, F)."""
        return Forest.pack([self]).predict(x)

    def as_dict(self) -> dict[str, list[Any]]:
        return {k: getattr(self, k).tolist() for k in ("feature", "threshold", "left", "right", "default_left",
                                                        "missing", "leaf")}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Sequence[Any]]) -> Tree:
        types = {"feature": np.int64, "threshold": float, "left": np.int64, "right": np.int64,
                 "default_left": bool, "missing": np.int8, "leaf": float}  # fmt: skip
        return cls(**{k: np.asarray(data[k], dtype=t) for k, t in types.items()})


@dataclass(frozen=True)
class Forest:
    """All trees packed into one node table, walked level by level for every (row, tree) at once.

    One row through 300 trees costs about as many numpy steps as the deepest tree has levels,
    not trees times levels: what keeps scoring one submission in milliseconds.
    """

    roots: np.ndarray  # (T,) node index, or ~leaf for a single-leaf tree
    tree: Tree  # the packed table (children and leaves renumbered globally)

    @classmethod
    def pack(cls, trees: Sequence[Tree]) -> Forest:
        cols: dict[str, list[np.ndarray]] = {k: [] for k in ("feature", "threshold", "left", "right",
                                                             "default_left", "missing", "leaf")}  # fmt: skip
        roots, nodes, leaves = [], 0, 0

        def renumber(children: np.ndarray) -> np.ndarray:
            return np.where(children >= 0, children + nodes, ~(~children + leaves))

        for t in trees:
            roots.append(nodes if t.feature.size else ~leaves)
            for k in ("feature", "threshold", "default_left", "missing"):
                cols[k].append(getattr(t, k))
            cols["left"].append(renumber(t.left))
            cols["right"].append(renumber(t.right))
            cols["leaf"].append(t.leaf)
            nodes, leaves = nodes + t.feature.size, leaves + t.leaf.size
        empty = {"feature": np.int64, "threshold": float, "left": np.int64, "right": np.int64,
                 "default_left": bool, "missing": np.int8, "leaf": float}  # fmt: skip
        packed = {k: np.concatenate(v).astype(empty[k]) if v else np.zeros(0, empty[k]) for k, v in cols.items()}
        return cls(np.asarray(roots, dtype=np.int64), Tree(**packed))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Sum over trees of the leaf values for the rows of ``x`` (N, F)."""
        t = self.tree
        if self.roots.size == 0:
            return np.zeros(x.shape[0])
        node = np.broadcast_to(self.roots, (x.shape[0], self.roots.size)).copy()  # (N, T)
        rows = np.arange(x.shape[0])[:, None]
        while True:
            inner = node >= 0
            if not inner.any():
                break
            at = np.where(inner, node, 0)
            value = x[rows, t.feature[at]]
            nan = np.isnan(value)
            kind = t.missing[at]
            to_default = ((kind == 2) & nan) | ((kind == 1) & (nan | (value == 0)))
            go_left = np.where(to_default, t.default_left[at], np.where(nan, 0.0, value) <= t.threshold[at])
            node = np.where(inner, np.where(go_left, t.left[at], t.right[at]), node)
        return t.leaf[~node].sum(axis=1)


@dataclass(frozen=True)
class PairwiseModel:
    """A trained pairwise model.

    Attributes:
        kind: ``trees`` or ``logistic``.
        features: Names of the differenced implementation features, in input order.
        context: Names of the configuration features appended after them (trees only).
        trees: The boosted trees (``trees``).
        bias: The trees' initial score.
        weights: Coefficients per feature (``logistic``), on standardized differences.
        scale: Standard deviation of each difference in training (``logistic``).
        meta: Training settings and provenance, as stored.
    """

    kind: str
    features: tuple[str, ...]
    context: tuple[str, ...] = ()
    trees: tuple[Tree, ...] = ()
    bias: float = 0.0
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"model kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "logistic" and not (len(self.weights) == len(self.scale) == len(self.features)):
            raise ValueError(f"logistic model needs one weight and scale per feature ({len(self.features)}), "
                             f"got {len(self.weights)} and {len(self.scale)}")  # fmt: skip

    def raw(self, diff: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """The model's (not yet antisymmetric) margin on difference rows (N, F) and context rows (N, C)."""
        if self.kind == "logistic":
            z = np.where(np.isnan(diff), 0.0, diff) / np.where(self.scale > 0, self.scale, 1.0)
            return np.asarray(z @ self.weights, dtype=float)
        x = np.concatenate([diff, ctx], axis=1)
        return self.bias + self._forest.predict(x)

    @cached_property
    def _forest(self) -> Forest:
        return Forest.pack(self.trees)

    def margin(self, a: np.ndarray, b: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """Antisymmetric margin of ``a`` over ``b`` (rows (N, F), context (N, C)): positive when a looks faster."""
        diff = a - b
        both = self.raw(np.concatenate([diff, -diff]), np.concatenate([ctx, ctx]))  # one pass for both orientations
        return 0.5 * (both[: len(diff)] - both[len(diff):])

    def probability(self, a: np.ndarray, b: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """P(a faster than b) per row."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.margin(a, b, ctx), -60, 60)))

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": self.kind, "features": list(self.features), "context": list(self.context),
                "bias": self.bias, "trees": [t.as_dict() for t in self.trees], "weights": self.weights.tolist(),
                "scale": self.scale.tolist(), "meta": dict(self.meta)}  # fmt: skip

    def save(self, path: str | Path) -> None:
        """Writes the model as JSON (compact: the shipped file stays small)."""
        Path(path).write_text(json.dumps(self.as_dict(), separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairwiseModel:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a ranker model: format {data.get('format')!r}, expected {FORMAT!r}")
        return cls(data["kind"], tuple(data["features"]), tuple(data.get("context", ())),
                   tuple(Tree.from_dict(t) for t in data.get("trees", ())), float(data.get("bias", 0.0)),
                   np.asarray(data.get("weights", []), float), np.asarray(data.get("scale", []), float),
                   dict(data.get("meta", {})))  # fmt: skip

    @classmethod
    def load(cls, path: str | Path) -> PairwiseModel:
        """Reads a model written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def from_lightgbm(dump: Mapping[str, Any], features: Sequence[str], context: Sequence[str],
                  meta: Mapping[str, Any] | None = None) -> PairwiseModel:  # fmt: skip
    """Converts ``Booster.dump_model()`` of a binary model into a ``trees`` model."""
    trees = tuple(_tree(info["tree_structure"]) for info in dump["tree_info"])
    return PairwiseModel("trees", tuple(features), tuple(context), trees, 0.0, meta=dict(meta or {}))


def _tree(root: Mapping[str, Any]) -> Tree:
    cols: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right", "default_left",
                                                  "missing")}  # fmt: skip
    leaves: list[float] = []

    def visit(node: Mapping[str, Any]) -> int:
        if "leaf_value" in node:
            leaves.append(float(node["leaf_value"]))
            return ~(len(leaves) - 1)
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r} (categorical features are not used)")
        at = len(cols["feature"])
        for k, v in (("feature", node["split_feature"]), ("threshold", float(node["threshold"])),
                     ("left", 0), ("right", 0), ("default_left", bool(node.get("default_left", True))),
                     ("missing", {"None": 0, "Zero": 1, "NaN": 2}[node.get("missing_type", "None")])):
            cols[k].append(v)
        cols["left"][at] = visit(node["left_child"])
        cols["right"][at] = visit(node["right_child"])
        return at

    visit(root)
    return Tree.from_dict({**cols, "leaf": leaves})


def finite_or_none(value: float) -> float | None:
    """JSON has no NaN: non-finite figures are written as null."""
    return value if math.isfinite(value) else None
