"""Structural analysis of CUDA submissions: features from the source, the compiler and the profiler.

``analyze(code, report)`` runs the static analysis (tree-sitter parse of the
source), adds compiler features when the compile check succeeded (ptxas
resources, theoretical occupancy, SASS opcode histogram) and profiler
features when Nsight Compute metrics are given, then scores the structure in
[0, 1] (:mod:`cudaperf_env.analysis.score`) and words the findings as hints.
Nothing here needs a GPU except producing the profiler metrics, and nothing
raises on hostile or non-compiling source.

Cost (issue #5: under 0.2 s per submission without the profiler). Measured
with ``python benchmarks/analysis_cost.py`` (81 starter implementations,
compile reports made beforehand, SASS cache empty) on a 2-core x86 machine
(Intel Xeon, no GPU) shared with other jobs, nvcc and nvdisasm 13.5
(V13.5.37); medians per submission:

=========================================  ===========  ==============================
setting                                    before #5    after, 3 runs (load avg ~4.6)
=========================================  ===========  ==============================
static features only                       0.0016 s     0.0028-0.0031 s
+ compiler features, nothing cached        0.257 s      0.0047-0.0058 s
+ compiler features, SASS cached           0.0019 s     0.0022-0.0043 s
the old path in the same runs (nvdisasm)   --           0.522-0.549 s
=========================================  ===========  ==============================

("before": the old code on the same machine, load average ~0.1.) Nearly all of
the old cold cost was nvdisasm: about 0.22 s of CPU per run setting up its
tables for the architecture, after reading the input, whatever the input
(a 16-byte raw binary costs the same) and whatever the flags (``-c -ndf``
0.25 s, ``-raw`` 0.24 s, ``-novliw`` 0.24 s, ``-json`` 0.33 s, dataflow on
0.34 s; ``cuobjdump -sass`` 0.35 s). Overlapping it with the static pass
would hide at most that pass's 2 ms. The histogram is now read from the
cubin's instruction words (:mod:`~cudaperf_env.analysis.cubin`, 0.1 ms median),
with opcode tables learnt from nvdisasm; on the 3,854 cubins of the compile
check's cache, tables learnt from 1,000 of them give the disassembler's counts
on all the 2,854 others, and the features are identical to the old path's on
every starter implementation (the benchmark checks it). The static pass is
what remains (about 1 ms tokenizing, 1 ms parsing and walking).
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
from cudaperf_env.backends.compile_check import CompileReport

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
