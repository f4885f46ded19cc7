"""CudaPerf: Gymnasium environments for writing fast, correct CUDA kernels.

``import cudaperf_env`` registers the environment ids, so that
``gymnasium.make("CudaPerf-C2CUDA-v0")`` works (as does
``gymnasium.make("cudaperf_env:CudaPerf-C2CUDA-v0")``).
"""

from typing import Any

from envs_registry import ENV_IDS, register_envs

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "CudaPerfEnv", "__version__"]

register_envs()


def __getattr__(name: str) -> Any:  # lazy: importing the package stays cheap
    if name == "CudaPerfEnv":
        from cudaperf_env.env import CudaPerfEnv

        return CudaPerfEnv
    raise AttributeError(f"module 'cudaperf_env' has no attribute {name!r}")
