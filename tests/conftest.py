"""Shared test setup: tests marked ``gpu`` run only where an NVIDIA GPU is usable; each pytest-xdist worker
(``pytest -n 2``) has a build cache of its own."""

import os

# Set before the package is imported: tests check that their evaluations leave the cache's scratch
# folders as they found them, which another worker's builds in progress would not.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _root = os.environ.get("CUDAPERF_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "cudaperf")
    os.environ["CUDAPERF_CACHE_DIR"] = os.path.join(_root, "xdist-" + os.environ["PYTEST_XDIST_WORKER"])

import pytest  # noqa: E402

from cudaperf_env.backends import gpu_available  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
