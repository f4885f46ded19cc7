"""Fidelity tests: each kernel is judged by the CPU backend and, under ``pytest -m gpu``, by the CUDA backend."""

import pytest

from cudaperf_env.evaluate import EvalOptions, Evaluator


def _backend(name: str):
    if name == "cpu":
        from cudaperf_env.backends.cpu.backend import CpuBackend

        return CpuBackend(timeout_s=10.0)
    from cudaperf_env.backends.cuda.backend import CudaBackend

    return CudaBackend()


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def evaluator(request):
    """The same submission through each backend: the verdicts must agree."""
    return Evaluator(_backend(request.param), EvalOptions(compile_timeout_s=60.0))
