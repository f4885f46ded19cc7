"""The trusted GPU harness, loaded into the test process (GPU tests only)."""

import ctypes

import pytest

from cudaperf_env.backends.cuda.backend import detect_arch, harness_library


@pytest.fixture(scope="module")
def harness():
    """The harness library with a CUDA context on GPU 0."""
    h = ctypes.CDLL(str(harness_library(detect_arch())))
    err = ctypes.create_string_buffer(512)
    name = ctypes.create_string_buffer(256)
    ints = [ctypes.c_int() for _ in range(3)]
    l2 = ctypes.c_longlong()
    assert h.cph_init(0, name, 256, *(ctypes.byref(i) for i in ints[:2]), ctypes.byref(l2),
                      ctypes.byref(ints[2]), err, 512) == 0, err.value  # fmt: skip
    return h
