"""The GPU backend's symbol check: a submission's build may import only what the CUDA runtime and the allowlist do.

The baseline is what the same nvcc build of a trivial submission imports (the statically
linked CUDA runtime's own ``dlopen``, threads and files), measured once per architecture
and compiler. See ``toolchain/symbols.py``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.native import build_library
from cudaperf_env.toolchain.symbols import UnreadableLibrary, explain, refused, undefined_symbols

TRIVIAL = (
    "#include <cstdio>\n"
    "__global__ void cudaperf_trivial(float* y) { y[threadIdx.x] = 0.0f; __syncthreads(); }\n"
    'extern "C" int cudaperf_call(void** argv, char* err, int err_len) {\n'
    "  cudaperf_trivial<<<1, 32>>>((float*)argv[0]);\n"
    "  cudaError_t e = cudaDeviceSynchronize();\n"
    "  if (e == cudaSuccess) e = cudaGetLastError();\n"
    '  if (e != cudaSuccess) snprintf(err, err_len, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));\n'
    "  return (int)e;\n}\n"
)


def checker(flags: tuple[str, ...]):
    """The check for builds made with nvcc ``flags`` (``build_library``'s ``check``)."""

    def check(library: Path) -> str:
        try:
            return explain(refused(undefined_symbols(library), runtime_imports(flags)))
        except (OSError, UnreadableLibrary) as exc:
            return f"the built library cannot be checked ({exc})"

    return check


@lru_cache(maxsize=4)
def runtime_imports(flags: tuple[str, ...]) -> frozenset[str]:
    """What a trivial submission's nvcc build with ``flags`` imports (cached)."""
    result = build_library(tools.nvcc(), list(flags), TRIVIAL, ".cu")
    if not result.ok or result.library is None:
        return frozenset()  # then every runtime import is refused: a clear failure, not a silent pass
    return undefined_symbols(result.library) | NVCC_HOST_STUB_IMPORTS


# What nvcc's generated host code imports in some translation units and not in the trivial one
# (measured: the exclusive_scan starter's reduce_then_scan build imports `exit`; the static CUDA
# runtime itself needs `atexit`). Refusing them rejected honest code on the H200 (2026-12-02).
NVCC_HOST_STUB_IMPORTS = frozenset({"exit", "atexit"})
