"""Training: deterministic for a seed, learns the obvious direction, validates its configuration."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cudaperf_env.ranker.train import TrainConfig, fit


def _rows(seed: int = 0):
    config = TrainConfig(kind="logistic", sources=("parallelism",))
    width = len(config.features)
    rng = np.random.default_rng(seed)
    faster, slower = rng.normal(size=(300, width)), rng.normal(size=(300, width))
    it = config.features.index("parallelism/log2_iterations_per_thread")
    faster[:, it] -= 2.0  # faster sides run fewer serial iterations
    return faster, slower, np.zeros((300, 3)), np.ones(300), it


@pytest.mark.parametrize("kind", ["logistic", "trees"])
def test_same_seed_same_model_and_it_learns_the_direction(kind):
    if kind == "trees":
        pytest.importorskip("lightgbm")
    faster, slower, ctx, w, it = _rows()
    config = TrainConfig(kind=kind, sources=("parallelism",), rounds=20, threads=1, seed=3)
    one, two = fit(config, faster, slower, ctx, w), fit(config, faster, slower, ctx, w)
    assert one.as_dict() == two.as_dict()
    assert (one.probability(faster, slower, ctx) > 0.5).mean() > 0.8
    if kind == "logistic":
        assert one.weights[it] < 0  # more serial iterations: slower


def test_hand_written_features_are_out_by_default_and_in_when_asked():
    from cudaperf_env.ranker.features import HAND_WRITTEN

    default, full = TrainConfig(sources=("parallelism",)), TrainConfig(sources=("parallelism",), exclude=())
    assert set(full.features) - set(default.features) == set(HAND_WRITTEN)
    faster, slower, ctx, w, _ = _rows()  # rows of the default features
    assert "exclude" not in fit(replace(default, kind="logistic"), faster, slower, ctx, w).meta["config"]
    wide = np.zeros((len(faster), len(full.features)))
    keep = [full.features.index(n) for n in default.features]
    wide_faster, wide_slower = wide.copy(), wide.copy()
    wide_faster[:, keep], wide_slower[:, keep] = faster, slower
    model = fit(replace(full, kind="logistic"), wide_faster, wide_slower, ctx, w)
    assert model.features == full.features and model.meta["config"]["exclude"] == []


def test_no_pairs_says_what_to_check():
    config = TrainConfig(kind="logistic", sources=("parallelism",))
    empty = np.zeros((0, len(config.features)))
    with pytest.raises(ValueError, match="no training pairs"):
        fit(config, empty, empty, np.zeros((0, 3)), np.zeros(0))


@pytest.mark.parametrize("bad, message", [
    ({"kind": "forest"}, "kind must be one of trees, logistic"),
    ({"sources": ("ncu",)}, "sources must be a non-empty subset"),
    ({"pair_kinds": ()}, "pair_kinds must be a non-empty subset"),
    ({"rounds": 0}, "rounds >= 1"),
    ({"exclude": ("parallelism/nope",)}, r"exclude names unknown features \['parallelism/nope'\]"),
])  # fmt: skip
def test_config_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**bad)
