"""The numpy pairwise model: antisymmetric, round-trips through JSON, evaluates LightGBM's trees exactly."""

from __future__ import annotations

import numpy as np
import pytest

from cudaperf_env.ranker.model import PairwiseModel, Tree, from_lightgbm


def _stump(feature: int = 0, threshold: float = 0.0, missing: int = 2, default_left: bool = True) -> Tree:
    return Tree.from_dict({"feature": [feature], "threshold": [threshold], "left": [~0], "right": [~1],
                           "default_left": [default_left], "missing": [missing], "leaf": [-1.0, 1.0]})


def test_tree_follows_thresholds_and_missing_rules():
    x = np.array([[-1.0], [1.0], [np.nan], [0.0]])
    assert _stump(missing=2, default_left=False).predict(x).tolist() == [-1.0, 1.0, 1.0, -1.0]
    assert _stump(missing=0).predict(x).tolist() == [-1.0, 1.0, -1.0, -1.0]  # NaN compares as 0
    assert _stump(missing=1, default_left=False, threshold=0.5).predict(x).tolist() == [-1.0, 1.0, 1.0, 1.0]


def test_margin_is_antisymmetric_and_round_trips(tmp_path):
    model = PairwiseModel("trees", ("f0", "f1"), ("c0",), (_stump(0, 0.3), _stump(1, -0.2)), 0.1)
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(50, 2)), rng.normal(size=(50, 2)), rng.normal(size=(50, 1))
    np.testing.assert_allclose(model.probability(a, b, c), 1 - model.probability(b, a, c))
    np.testing.assert_allclose(model.probability(a, a, c), 0.5)
    model.save(tmp_path / "m.json")
    np.testing.assert_allclose(PairwiseModel.load(tmp_path / "m.json").probability(a, b, c), model.probability(a, b, c))


def test_foreign_json_is_refused_with_the_expected_format():
    with pytest.raises(ValueError, match="not a ranker model: format None, expected 'cudaperf-ranker/1'"):
        PairwiseModel.from_dict({"kind": "trees"})


def test_numpy_trees_match_lightgbm():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 4))
    x[::7, 2] = np.nan
    y = (x[:, 0] + np.nan_to_num(x[:, 2]) > 0).astype(float)
    booster = lgb.train({"objective": "binary", "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0,
                         "deterministic": True}, lgb.Dataset(x, y), num_boost_round=20)  # fmt: skip
    model = from_lightgbm(booster.dump_model(), ["a", "b", "c"], ["d"])
    np.testing.assert_allclose(model.raw(x[:, :3], x[:, 3:]), booster.predict(x, raw_score=True), atol=1e-9)
