"""Compare outputs with expected values: pure functions, explicit about how they differ."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cudaperf_env.tasks.schema import Tolerance


@dataclass(frozen=True)
class Comparison:
    """How one output buffer compares with its expected values.

    Attributes:
        ok: Every element within tolerance (and no NaN where a number was expected).
        mismatches: Number of elements out of tolerance.
        total: Number of elements.
        first_bad: Flat index of the first mismatch (-1 if none).
        got: Value at ``first_bad``.
        want: Expected value at ``first_bad``.
        max_abs_error: Largest absolute difference over finite pairs.
        max_rel_error: Largest relative difference over finite pairs.
        nans: Elements that are NaN where the expected value is not (poison left unwritten).
    """

    ok: bool
    mismatches: int
    total: int
    first_bad: int = -1
    got: float = 0.0
    want: float = 0.0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    nans: int = 0


def compare(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> Comparison:
    """Compare ``got`` with ``want`` elementwise: ``|got - want| <= atol + rtol * |want|``."""
    got, want = got.ravel(), want.ravel()
    if _all_close(got, want, tolerance):  # the common case, without the diagnostics
        return Comparison(True, 0, got.size)
    if want.dtype.kind in "iub":
        bad = got != want
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        nans = 0
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(g - w)
            bad = ~(diff <= tolerance.atol + tolerance.rtol * np.abs(w))
        both_nan = np.isnan(g) & np.isnan(w)
        bad &= ~(both_nan | ((g == w) & np.isinf(w)))
        nans = int(np.count_nonzero(np.isnan(g) & ~np.isnan(w)))
    finite = np.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = diff / np.maximum(np.abs(want.astype(np.float64)), np.finfo(np.float64).tiny)
    rel_finite = rel[np.isfinite(rel)]
    max_rel = float(rel_finite.max()) if rel_finite.size else 0.0
    count = int(np.count_nonzero(bad))
    if count == 0:
        return Comparison(True, 0, got.size, max_abs_error=max_abs, max_rel_error=max_rel)
    first = int(np.argmax(bad))
    return Comparison(
        False, count, got.size, first, float(got[first]), float(want[first]), max_abs, max_rel, nans
    )


def _all_close(got: np.ndarray, want: np.ndarray, tolerance: Tolerance) -> bool:
    if want.dtype.kind in "iub":
        return bool(np.array_equal(got, want))
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(got - want) <= tolerance.atol + tolerance.rtol * np.abs(want)
    return bool(close.all())


def unchanged(before: np.ndarray, after: np.ndarray) -> bool:
    """Bytewise equality (NaN-safe): was an input buffer left as it was?"""
    return before.tobytes() == after.tobytes()
