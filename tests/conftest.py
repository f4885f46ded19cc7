"""Shared test setup: tests marked ``gpu`` run only where an NVIDIA GPU is usable."""

import pytest

from cudaperf_env.backends import gpu_available


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
