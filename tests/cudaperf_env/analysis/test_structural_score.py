"""The structural score: weights, components, the deadlock factor, and the report's JSON form."""

from __future__ import annotations

import json
import math

import pytest

from cudaperf_env.analysis import Feature, ScoreWeights, StructuralReport, analyze
from cudaperf_env.analysis.score import COMPONENTS, components, structural_score


def feats(**values) -> dict[str, Feature]:
    return {k: Feature(v, "compiler" if k in ("occupancy", "spill_bytes") else "static") for k, v in values.items()}


BASE = dict(kernels=1, coalescing=1.0, occupancy=1.0, arithmetic_intensity=4.0, spill_bytes=0,
            vectorized_fraction=1.0, smem_tree_reductions=0, divergent_barriers=0)


def test_a_perfect_kernel_scores_1_and_each_defect_costs_its_weight():
    w = ScoreWeights()
    assert structural_score(feats(**BASE))[0] == pytest.approx(1.0)
    assert structural_score(feats(**{**BASE, "coalescing": 0.0}))[0] == pytest.approx(1 - w.coalescing)
    assert structural_score(feats(**{**BASE, "occupancy": 0.25}))[0] == pytest.approx(1 - w.occupancy / 2)
    assert structural_score(feats(**{**BASE, "spill_bytes": 512}))[0] == pytest.approx(1 - w.resources)
    tree = structural_score(feats(**{**BASE, "smem_tree_reductions": 1}))[0]
    assert tree == pytest.approx(1 - w.sync * w.tree_reduction_penalty)
    deadlock = structural_score(feats(**{**BASE, "divergent_barriers": 1}))[0]
    assert deadlock == pytest.approx((1 - w.sync) * w.deadlock_factor)


def test_missing_components_are_left_out_of_the_normalisation():
    score, parts = structural_score(feats(kernels=1, coalescing=0.5))
    assert set(parts) == {"coalescing", "sync", "atomics"}
    w = ScoreWeights()
    assert score == pytest.approx((0.5 * w.coalescing + w.sync + w.atomics) / (w.coalescing + w.sync + w.atomics))


def test_no_kernel_scores_zero():
    assert structural_score({}) == (0.0, {})
    assert structural_score(feats(kernels=0)) == (0.0, {})


def test_reuse_is_logarithmic_in_intensity_and_saturates():
    w = ScoreWeights()
    reuse = [components(feats(kernels=1, arithmetic_intensity=ai), w)["reuse"] for ai in (0.0, 0.25, 1.0, 4.0, 64.0)]
    assert reuse[0] == 0.0 and reuse[-1] == 1.0 and reuse == sorted(reuse)
    assert reuse[2] == pytest.approx(math.log2(2) / math.log2(5))


def test_custom_weights_change_the_score_and_are_validated():
    only_coalescing = ScoreWeights(**{c: 0.0 for c in COMPONENTS if c != "coalescing"})
    assert structural_score(feats(**{**BASE, "coalescing": 0.3}), only_coalescing)[0] == pytest.approx(0.3)
    with pytest.raises(ValueError, match="not all 0"):
        ScoreWeights(**{c: 0.0 for c in COMPONENTS})
    with pytest.raises(ValueError, match="occupancy_target"):
        ScoreWeights(occupancy_target=0.0)
    with pytest.raises(ValueError, match="deadlock_factor"):
        ScoreWeights(deadlock_factor=2.0)
    with pytest.raises(KeyError, match="no component 'speed'"):
        ScoreWeights().weight("speed")


def test_feature_and_report_validation():
    with pytest.raises(ValueError, match="source must be one of static, compiler, profiler"):
        Feature(1, "guess")
    with pytest.raises(ValueError, match=r"score must be in \[0, 1\]"):
        StructuralReport(score=1.5)
    assert math.isnan(StructuralReport(score=math.nan).score)


def test_as_dict_is_json_with_each_feature_source():
    code = """
__global__ void k(const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = x[i]; }
extern "C" void run(const float* x, float* y) { k<<<4, 128>>>(x, y); }
"""
    data = analyze(code, None).as_dict()
    text = json.dumps(data, allow_nan=False)  # no NaN leaks into the JSON
    assert json.loads(text)["features"]["block_size"] == {"value": 128, "source": "static"}
    assert set(data) == {"structural_score", "features", "hints", "components"}
    assert 0.0 < data["structural_score"] <= 1.0
