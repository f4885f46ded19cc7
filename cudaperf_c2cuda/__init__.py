"""The verifiers taskset ``cudaperf-c2cuda``: CudaPerf's kernel tasks as a multi-turn verifiers environment.

verifiers resolves a taskset id to a top-level module of that name (``cudaperf-c2cuda`` ->
``cudaperf_c2cuda``) exporting its ``Taskset`` and ``Env`` subclasses; the code lives in
:mod:`cudaperf_env.integrations.verifiers`. ``vf-eval cudaperf-c2cuda`` and
``verifiers.v1.load_environment`` find it here.
"""

from cudaperf_env.integrations.verifiers import (
    CudaPerfData,
    CudaPerfEnv,
    CudaPerfEnvConfig,
    CudaPerfTask,
    CudaPerfTaskset,
    CudaPerfTasksetConfig,
    load_environment,
)

__all__ = ["CudaPerfData", "CudaPerfEnv", "CudaPerfEnvConfig", "CudaPerfTask", "CudaPerfTaskset",
           "CudaPerfTasksetConfig", "load_environment"]  # fmt: skip
