"""The harness's on-device output comparison follows ``compare.py``'s rule exactly.

Timing compares each implementation's outputs with the baseline's on the GPU
(``cph_compare``); these cases pin it to the host-side ``compare``: tolerances at
their edge, NaN against NaN and against numbers, infinities, integer exactness.
"""

import ctypes

import numpy as np
import pytest

from cudaperf_env.compare import compare
from cudaperf_env.tasks.schema import Tolerance

pytestmark = pytest.mark.gpu
H2D = 1


def device_copy(h, array: np.ndarray) -> ctypes.c_void_p:
    err, dev = ctypes.create_string_buffer(512), ctypes.c_void_p()
    assert h.cph_alloc(ctypes.c_size_t(array.nbytes), ctypes.c_size_t(0), ctypes.byref(dev), err, 512) == 0
    host = np.ascontiguousarray(array)
    assert h.cph_copy(dev, host.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(array.nbytes), H2D, err, 512) == 0
    return dev


def device_compare(h, got: np.ndarray, want: np.ndarray, tol: Tolerance) -> tuple[int, int]:
    a, b = device_copy(h, got), device_copy(h, want)
    count, first, err = ctypes.c_ulonglong(), ctypes.c_ulonglong(), ctypes.create_string_buffer(512)
    code = h.cph_compare(a, b, ctypes.c_size_t(got.size), got.dtype.itemsize, int(got.dtype.kind == "f"),
                         ctypes.c_double(tol.atol), ctypes.c_double(tol.rtol), ctypes.byref(count),
                         ctypes.byref(first), err, 512)  # fmt: skip
    assert code == 0, err.value
    h.cph_free(a)
    h.cph_free(b)
    return count.value, first.value


def cases():
    rng = np.random.default_rng(0)
    want = rng.standard_normal(100_003).astype(np.float32)
    tol = Tolerance(1e-4, 1e-5)
    edge = want + (tol.atol + tol.rtol * np.abs(want)) * 0.99
    special = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan, 0.0], np.float32)
    got_special = np.array([np.nan, np.inf, np.inf, np.nan, 2.0, 0.0], np.float32)
    bumped = want.copy()
    bumped[[17, 99_000]] += 1.0
    ints = rng.integers(-1000, 1000, 5001).astype(np.int32)
    ints_bad = ints.copy()
    ints_bad[[3, 4000]] += 1
    return [
        ("equal", want, want.copy(), tol),
        ("within tolerance", edge.astype(np.float32), want, tol),
        ("two off", bumped, want, tol),
        ("nan and inf", got_special, special, tol),
        ("float64", bumped.astype(np.float64), want.astype(np.float64), Tolerance(1e-9, 1e-9)),
        ("int32 exact", ints_bad, ints, Tolerance(0, 0)),
        ("uint8", np.arange(255, dtype=np.uint8), np.arange(255, dtype=np.uint8)[::-1].copy(), Tolerance(0, 0)),
    ]


@pytest.mark.parametrize(("name", "got", "want", "tol"), cases(), ids=[c[0] for c in cases()])
def test_device_compare_equals_host_compare(harness, name, got, want, tol):
    host = compare(got, want, tol)
    count, first = device_compare(harness, got, want, tol)
    assert count == host.mismatches
    assert first == (host.first_bad if host.mismatches else got.size)
