"""The offline pairwise ranker: pairs from the GPU labels, features, a small model, training and scoring.

``load_ranker()`` gives the shipped model; ``Ranker.score(task, code, report, structure)``
is the probability that a submission is faster than the task's baseline on its
shown configurations (NaN where it cannot be scored). Figures: docs/structural-analysis.md.
"""

from __future__ import annotations

from cudaperf_env.ranker.score import Ranker, load_ranker

__all__ = ["Ranker", "load_ranker"]
