"""Tolerances that follow the computation: reordered sums and the output's own scale (pure functions).

A task's tolerance (``|got - want| <= atol + rtol * |want|``) is written for the
values a typical output takes. Two things it cannot know are measured here from
the configuration and the expected output:

* **Reordered sums.** A GPU adds in a different order than the reference (tree
  reductions, blocked scans, atomics). In float64 the difference of two orders of
  a sum of ``L`` terms is bounded by about ``L * eps * sum|x|`` and in practice
  stays near ``sqrt(L) * eps * max|want|``; where a prefix sum crosses zero the
  relative error is unbounded, so a fixed ``atol = 1e-12`` fails correct scans.
  :func:`reorder_tolerance` widens ``atol`` to ``16 * sqrt(L) * eps * max|want|``
  (and ``rtol`` to ``16 * sqrt(L) * eps``) for float64, ``L`` being the largest
  input buffer (no sum in these tasks is longer). Float32 tasks carry explicit,
  looser tolerances already; widening them by the same rule would admit wrong
  answers (``sqrt(16M) * eps32`` is 4e-4), so they are left as written.
* **The output's scale.** An ``atol`` sized for outputs near 1 admits zeros or
  any constant when the output is small, and an ``rtol`` admits a constant when
  the output varies less than ``rtol`` around a large mean. :func:`constant_fill`
  rejects a candidate that explains the output no better than a constant would:
  whenever the expected values vary by more than ``rtol`` of their magnitude,
  the candidate's root-mean-square error must stay under half their standard
  deviation (any constant fill's error is at least the standard deviation).
  Rounding differences of correct code are orders of magnitude below it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from cudaperf_env.tasks.schema import Tolerance

# Headroom over the typical sqrt(L) growth of reordering error (measured: a blocked scan of 1M
# float64 values differs from the serial one by 3e-14 * max|want|; the bound gives 3.5e-12).
REORDER_HEADROOM = 16.0
# The candidate's RMS error must stay below this fraction of the expected output's standard deviation.
CONSTANT_FILL_FRACTION = 0.5


def reorder_tolerance(base: Tolerance, dtype: str, length: int, scale: float) -> Tolerance:
    """``base`` widened for a float64 sum of ``length`` terms reordered, on outputs of magnitude ``scale``.

    Args:
        base: The task's tolerance for this dtype.
        dtype: The output's dtype name (``float64`` is widened; others are returned as given).
        length: Longest reduction the computation may perform (the largest input buffer's size).
        scale: Largest finite ``|want|`` of the output.
    """
    if dtype != "float64" or length <= 1:
        return base
    grow = REORDER_HEADROOM * math.sqrt(length) * float(np.finfo(np.float64).eps)
    scale = scale if math.isfinite(scale) else 0.0
    return Tolerance(rtol=max(base.rtol, grow), atol=max(base.atol, grow * scale))


def output_scale(want: np.ndarray) -> float:
    """Largest finite ``|value|`` of an expected output (0 for an empty or all-non-finite one)."""
    if want.dtype.kind not in "f" or want.size == 0:
        return 0.0
    finite = np.abs(want[np.isfinite(want)])
    return float(finite.max()) if finite.size else 0.0


def constant_fill(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> str:
    """Why ``got`` explains ``want`` no better than a constant fill ("" when it does better or the check is moot).

    Applies to float outputs of two or more finite values whose standard deviation exceeds
    ``rtol`` times their RMS magnitude (the output varies beyond what the tolerance calls noise).
    """
    if want.dtype.kind != "f" or want.size < 2:
        return ""
    w = want.astype(np.float64).ravel()
    g = got.astype(np.float64).ravel()
    finite = np.isfinite(w) & np.isfinite(g)
    if np.count_nonzero(finite) < 2:
        return ""
    w, g = w[finite], g[finite]
    spread = float(np.std(w))
    magnitude = float(np.sqrt(np.mean(w * w)))
    if spread <= tolerance.rtol * magnitude or spread == 0.0:
        return ""
    error = float(np.sqrt(np.mean((g - w) ** 2)))
    if error <= CONSTANT_FILL_FRACTION * spread:
        return ""
    return (
        f"matches the expected output no better than a constant would (RMS error {error:.3g} against the "
        f"expected values' standard deviation {spread:.3g}); every element must be computed"
    )


def reduction_length(inputs: Mapping[str, np.ndarray]) -> int:
    """The largest input buffer's element count: an upper bound on any sum's length (1 without inputs)."""
    sizes = [int(v.size) for v in inputs.values() if isinstance(v, np.ndarray) and v.ndim > 0]
    return max(sizes, default=1)
