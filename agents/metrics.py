"""The metrics the field reports, as small pure functions (no I/O, no records).

- pass@k: the unbiased estimator of Chen et al. (2021), ``1 - C(n-c, k) / C(n, k)``
  for a task with ``n`` samples of which ``c`` are correct, averaged over tasks.
- fast_p (KernelBench): the fraction of *all* tasks whose answer is correct and
  faster than ``p`` times the baseline (``speedup > p``); ``fast_0`` is the
  correctness rate. With several samples per task, each task contributes the
  fraction of its samples that qualify (the expected fast_p of one sample).
- The geometric-mean speedup of correct answers with a measured speedup.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from ``n`` (``c`` correct) is correct.

    Raises:
        ValueError: Unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i): the stable form of 1 - C(n-c, k) / C(n, k)
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, each given as ``(samples, correct)``; NaN for no task or a task with n < k."""
    if not counts or any(n < k for n, _ in counts):
        return math.nan
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def is_fast(correct: bool, speedup: float | None, p: float) -> bool:
    """Correct and faster than ``p`` times the baseline (``p = 0``: correct); no measured speedup is not fast."""
    if not correct:
        return False
    if p == 0.0:
        return True
    return speedup is not None and math.isfinite(speedup) and speedup > p


def fast_p(samples_per_task: Sequence[Sequence[tuple[bool, float | None]]], p: float) -> float:
    """KernelBench's fast_p over all tasks; each task a list of ``(correct, speedup)`` samples. NaN for no task."""
    tasks = [s for s in samples_per_task if s]
    if not tasks:
        return math.nan
    return sum(sum(is_fast(c, s, p) for c, s in samples) / len(samples) for samples in tasks) / len(tasks)


def geomean_speedup(results: Iterable[tuple[bool, float | None]]) -> float:
    """Geometric mean of the speedups of correct answers that were timed; NaN when there are none."""
    logs = [math.log(s) for c, s in results if c and s is not None and math.isfinite(s) and s > 0]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def breakdown(statuses: Iterable[str]) -> dict[str, float]:
    """Fraction of each status, most frequent first."""
    counts = Counter(statuses)
    total = sum(counts.values())
    return {s: n / total for s, n in counts.most_common()} if total else {}
