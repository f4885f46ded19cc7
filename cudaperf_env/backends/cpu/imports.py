"""The CPU backend's symbol check: a submission's build may import only what the runtime and the allowlist do.

The baseline is what the same build of a trivial submission imports (the runtime's own
threads, fibers and signal handlers), measured once per runtime version and build mode,
so the check follows the runtime as it changes. See ``toolchain/symbols.py``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cudaperf_env.backends.cpu.compiler import build_cpu, prebuilt_runtime, runtime_version
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.toolchain.symbols import UnreadableLibrary, explain, refused, undefined_symbols

TRIVIAL = (
    "__global__ void cudaperf_trivial(float* y) { y[threadIdx.x] = 0.0f; __syncthreads(); }\n"
    'extern "C" int cudaperf_call(void** argv, char* err, int err_len) {\n'
    "  cudaperf_trivial<<<1, 32>>>((float*)argv[0]);\n"
    "  cudaError_t e = cudaDeviceSynchronize();\n"
    '  if (e != cudaSuccess) snprintf(err, err_len, "%s", cudaGetErrorName(e));\n'
    "  return (int)e;\n}\n"
)


def check(library: Path) -> str:
    """Why ``library`` (a submission's CPU build) may not run: "" when its imports are allowed."""
    try:
        bad = refused(undefined_symbols(library), runtime_imports(runtime_version(), prebuilt_runtime().linkable()))
    except (OSError, UnreadableLibrary) as exc:
        return f"the built library cannot be checked ({exc})"
    return explain(bad)


@lru_cache(maxsize=4)
def runtime_imports(version: str, linked: bool) -> frozenset[str]:
    """What a trivial submission's build imports for this runtime ``version`` and mode (cached)."""
    del version, linked  # the cache key: the build below is made with the current runtime and mode
    result = build_cpu("#include <cstdio>\n" + prepass(TRIVIAL).source)
    if not result.ok or result.library is None:
        return frozenset()  # then every runtime import is refused: a clear failure, not a silent pass
    return undefined_symbols(result.library)
