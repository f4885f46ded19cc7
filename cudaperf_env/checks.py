"""How one output buffer is compared: elementwise, up to order, or only its first ``count`` elements (pure).

A task's argument says which (``check:`` and ``length:`` in the task file): ``elementwise``
(the default), ``multiset`` (the same values in any order: atomics-based compaction, sets),
``sorted`` (the output must be the reference's values in non-decreasing order, whatever order
the reference produced them in), and ``length: COUNT`` (only the first ``COUNT[0]`` elements are
defined, ``COUNT`` being another output of one element whose own value is checked as usual).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cudaperf_env.compare import Comparison, compare
from cudaperf_env.tasks.schema import Arg, Task, Tolerance

CHECKS = ("elementwise", "multiset", "sorted")


def compare_output(
    task: Task, arg: Arg, got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray],
    tolerance: Tolerance | None = None,
) -> Comparison:
    """``arg``'s output compared with the expected one as the task asks (NaN poison is never sorted away).

    ``tolerance`` replaces the task's (the judge widens it for reordered sums, ``tolerance.py``).
    """
    g, w = np.asarray(got[arg.name]).ravel(), np.asarray(want[arg.name]).ravel()
    if arg.length:
        n = int(np.asarray(want[arg.length]).ravel()[0])
        g, w = g[:n], w[:n]
    if arg.check == "multiset":
        g, w = np.sort(g), np.sort(w)
    elif arg.check == "sorted":
        w = np.sort(w)
    return compare(g, w, tolerance or task.tolerance(arg.dtype))
