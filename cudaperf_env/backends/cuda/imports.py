"""The GPU backend's symbol check: a submission's build may import only what the CUDA runtime and the allowlist do.

The baseline is what the same nvcc build of a trivial submission imports (the statically
linked CUDA runtime's own ``dlopen``, threads and files), measured once per architecture
and compiler. See ``toolchain/symbols.py``.

The same check on the submission's own compiled unit (nvcc's host object, before linking:
:func:`check_unit`) is tighter, as on the CPU backend: the unit may import only what nvcc's host code
for an honest unit imports (:func:`unit_baseline`), the CUDA runtime's API (``cuda*``, ``__cuda*``:
linked statically into the same library, so any other system call it makes is not the unit's) and the
allowlist, not what only the static runtime imports (``dlopen``, ``fopen``, ``pthread_create``,
``getenv``, ...). And it may define no name the runtime or the harness imports from the system
(:func:`runtime_imports`): with ``-Bsymbolic`` the library's own definition wins, so a submission's
``malloc``, ``calloc``, ``pthread_once`` or ``atexit`` would be called by the CUDA runtime when the
library is loaded, before the harness.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, write_atomic
from cudaperf_env.toolchain.initcode import object_symbols
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

# Honest units beyond TRIVIAL: device, constant and managed variables, a template kernel, device memory from
# the host, the standard streams (what nvcc's and the headers' host code for them imports: registration of
# variables, the managed runtime's, the streams' initialiser).
TOUR = (
    "#include <cstdio>\n#include <iostream>\n__device__ float cudaperf_table[4] = {1, 2, 3, 4};\n"
    "__constant__ double cudaperf_c[2];\n__managed__ int cudaperf_count;\n"
    "template <int N> __global__ void cudaperf_tour_k(float* y) {\n  extern __shared__ float s[];\n"
    "  s[threadIdx.x] = y[threadIdx.x] * N + cudaperf_table[threadIdx.x % 4] + cudaperf_c[0];\n"
    "  __syncthreads();\n  y[threadIdx.x] = s[31 - threadIdx.x] + cudaperf_count;\n}\n"
    'extern "C" void cudaperf_tour(float* y) {\n  float* d = nullptr;\n  cudaMalloc(&d, 128);\n'
    "  cudaMemcpy(d, y, 128, cudaMemcpyHostToDevice);\n  cudaperf_tour_k<4><<<1, 32, 128>>>(d);\n"
    "  cudaMemset(d, 0, 128);\n  cudaFree(d);\n  cudaperf_count = 1;\n}\n"
)
# The CUDA runtime API and nvcc's host-stub interface, defined by the statically linked runtime.
CUDA_RUNTIME_API = re.compile(r"(?:cuda[A-Z]|__cuda[A-Z])\w*")


def unit_checker(flags: tuple[str, ...]):
    """The check of a submission's compiled unit (nvcc's host object, before linking) built with ``flags``."""
    return lambda obj: check_unit(obj, flags)


def check_unit(obj: Path, flags: tuple[str, ...]) -> str:
    """Why the compiled unit ``obj`` may not run: "" when it imports only the allowlist, the CUDA runtime's
    API and :func:`unit_baseline`, and defines no name the runtime imports (:func:`runtime_imports`)."""
    try:
        undefined, defined = object_symbols(obj.read_bytes())
    except (OSError, UnreadableLibrary) as exc:
        return f"the compiled unit cannot be checked ({exc})"
    shadowed = sorted(defined & runtime_imports(flags))
    if shadowed:
        return shadowing_message(shadowed)
    baseline = unit_baseline(tools.version(tools.nvcc()), flags) | NVCC_HOST_STUB_IMPORTS
    return explain([name for name in refused(undefined, baseline) if not CUDA_RUNTIME_API.fullmatch(name)])


def shadowing_message(names: list[str]) -> str:
    """The message for a unit defining names the runtime calls (pure)."""
    shown = ", ".join(f"`{name}`" for name in names[:6]) + (" ..." if len(names) > 6 else "")
    return (f"the submission defines {shown}, which the CUDA runtime and the harness call from the system "
            "libraries (also when the library is loaded, before the harness): a submission may not replace "
            "system functions; rename it")  # fmt: skip


@lru_cache(maxsize=4)
def unit_baseline(version: str, flags: tuple[str, ...]) -> frozenset[str]:
    """What nvcc's host code makes an honest unit import with ``flags`` (empty when it cannot be measured:
    then every such import is refused, a clear failure): the undefined names of the units of
    :data:`TRIVIAL` and :data:`TOUR`, measured once per nvcc version and flags and kept in the cache."""
    kept = cache_dir("builds") / f"unit-imports-{digest('cuda-unit/1', version, TRIVIAL, TOUR, *flags)[:24]}.json"
    with contextlib.suppress(OSError, ValueError):
        return frozenset(json.loads(kept.read_text()))
    names: set[str] = set()
    with tempfile.TemporaryDirectory(dir=cache_dir("tmp")) as work:
        for k, source in enumerate((TRIVIAL, TOUR)):
            path, obj = Path(work) / f"unit{k}.cu", Path(work) / f"unit{k}.o"
            path.write_text(source)
            result = tools.run_tool([tools.nvcc(), *flags, "-c", str(path), "-o", str(obj)], work, 300.0)
            if not result.ok or not obj.is_file():
                return frozenset()
            names |= object_symbols(obj.read_bytes())[0]
    write_atomic(kept, json.dumps(sorted(names)).encode())
    return frozenset(names)
