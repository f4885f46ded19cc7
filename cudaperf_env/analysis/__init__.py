"""Structural analysis of CUDA submissions: features from the source, the compiler and the profiler.

``analyze(code, report)`` runs the static analysis (tree-sitter parse of the
source), adds compiler features when the compile check succeeded (ptxas
resources, theoretical occupancy, SASS opcode histogram) and profiler
features when Nsight Compute metrics are given, then scores the structure in
[0, 1] (:mod:`cudaperf_env.analysis.score`) and words the findings as hints.
Nothing here needs a GPU except producing the profiler metrics, and nothing
raises on hostile or non-compiling source.

Measured costs and how the features compare with a real GPU: docs/structural-analysis.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudaperf_env.analysis.compiler import compiler_features
from cudaperf_env.analysis.hints import hints
from cudaperf_env.analysis.occupancy import Occupancy, occupancy
from cudaperf_env.analysis.profiler import KernelProfile, profile_features
from cudaperf_env.analysis.report import Feature, StructuralReport
from cudaperf_env.analysis.score import ScoreWeights, structural_score
from cudaperf_env.analysis.static import SourceAnalysis, analyze_source, source_features
from cudaperf_env.toolchain.compile_check import CompileReport

__all__ = [
    "Feature",
    "KernelProfile",
    "Occupancy",
    "ScoreWeights",
    "StructuralReport",
    "analyze",
    "occupancy",
]

# What a malformed syntax tree can make the walker raise; turned into the explicit
# `analysis_error` feature instead of an exception in the environment's step.
_ANALYSIS_FAILURES = (RecursionError, ValueError, TypeError, AttributeError, IndexError, KeyError, ArithmeticError)


def analyze(
    code: str,
    report: CompileReport | None,
    block_size_hint: int | None = None,
    *,
    profile: Sequence[KernelProfile] | None = None,
    weights: ScoreWeights | None = None,
    sass: bool = True,
) -> StructuralReport:
    """Structural features, score and hints of one submission.

    Args:
        code: The submission's CUDA source.
        report: The compile check's report (None, or not ``ok``: static features only).
        block_size_hint: Threads per block for kernels whose launch configuration is not a constant.
        profile: Nsight Compute results for the submission's kernels (GPU backend only).
        weights: Score weights (default :class:`ScoreWeights`).
        sass: Whether to disassemble the cubin for the SASS features.

    Returns:
        The report. Source with no kernel gives no static features and score 0;
        a failure inside the static analysis gives the feature ``analysis_error``.
    """
    weights = weights or ScoreWeights()
    features: dict[str, Feature] = {}
    try:
        analysis = analyze_source(code, block_size_hint)
    except _ANALYSIS_FAILURES as exc:
        analysis = SourceAnalysis(parsed=False)
        features["analysis_error"] = Feature(type(exc).__name__, "static")
    for name, value in source_features(analysis).items():
        features[name] = Feature(value, "static")
    occupancies: dict[str, Occupancy] = {}
    if report is not None and report.ok:
        found, occupancies = compiler_features(report, analysis, block_size_hint, sass=sass)
        for name, value in found.items():
            features[name] = Feature(value, "compiler")
    for name, value in profile_features(profile or ()).items():
        features[name] = Feature(value, "profiler")
    score, parts = structural_score(features, weights)
    try:
        found_hints = hints(analysis, occupancies, report if report is not None and report.ok else None,
                            weights.occupancy_target)
    except _ANALYSIS_FAILURES as exc:
        found_hints = ()
        features.setdefault("analysis_error", Feature(type(exc).__name__, "static"))
    if "analysis_error" in features:
        found_hints = (f"the static analysis failed ({features['analysis_error'].value}): "
                       "source features are missing", *found_hints)
    return StructuralReport(features, score, found_hints, parts)
