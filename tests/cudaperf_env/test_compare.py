"""Output comparison: tolerances, NaN poison, integers, first mismatch."""

import numpy as np

from cudaperf_env.compare import compare, unchanged
from cudaperf_env.tasks.schema import Tolerance

TOL = Tolerance(rtol=1e-4, atol=1e-5)


def test_within_tolerance_passes():
    want = np.linspace(-1, 1, 1823, dtype=np.float32)
    assert compare(want * (1 + 5e-5), want, TOL).ok


def test_reports_first_mismatch_and_nans():
    want = np.arange(10, dtype=np.float32)
    got = want.copy()
    got[3] = 99
    got[7] = np.nan
    c = compare(got, want, TOL)
    assert not c.ok and c.mismatches == 2 and c.first_bad == 3
    assert (c.got, c.want, c.nans) == (99.0, 3.0, 1)


def test_integers_are_exact_and_nan_matches_nan():
    assert not compare(np.array([1, 2], np.int32), np.array([1, 3], np.int32), TOL).ok
    nan = np.array([np.nan, 1.0])
    assert compare(nan.copy(), nan, TOL).ok


def test_unchanged_is_bytewise():
    a = np.array([np.nan, 1.0])
    assert unchanged(a, a.copy())
    b = a.copy()
    b[1] = -1.0
    assert not unchanged(a, b)
