"""The CPU backend's symbol check: a submission's build may import only what the runtime and the allowlist do.

The baseline is what the same build of a trivial submission imports (the runtime's own
threads, fibers and signal handlers), measured once per runtime version and build mode,
so the check follows the runtime as it changes. See ``toolchain/symbols.py``.

The same check on the submission's own compiled unit (:func:`unit_checker`, before linking) is
tighter: it may import only what the runtime's headers can make a unit import (:func:`unit_baseline`)
and what the runtime object defines, not what only the runtime object imports (signals, ``dlopen``,
``fopen``, ``stat``, ``_exit``, ...). The runtime's headers declare those functions in the
submission's unit (``config.h``), so a call the screen misses compiles; this is what refuses it.

On a cold cache the baseline's build is as long as the submission's, so :func:`baseline`
starts it in a thread of its own beside the submission's build instead of after it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from functools import lru_cache
from pathlib import Path

from cudaperf_env.backends.cpu.compiler import build_cpu, compile_unit, prebuilt_runtime, runtime_version
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.source.screen import STANDARD_HEADERS
from cudaperf_env.toolchain.cache import digest, write_atomic
from cudaperf_env.toolchain.initcode import object_symbols
from cudaperf_env.toolchain.symbols import UnreadableLibrary, explain, refused, undefined_symbols

TRIVIAL = (
    "__global__ void cudaperf_trivial(float* y) { y[threadIdx.x] = 0.0f; __syncthreads(); }\n"
    'extern "C" int cudaperf_call(void** argv, char* err, int err_len) {\n'
    "  cudaperf_trivial<<<1, 32>>>((float*)argv[0]);\n"
    "  cudaError_t e = cudaDeviceSynchronize();\n"
    '  if (e != cudaSuccess) snprintf(err, err_len, "%s", cudaGetErrorName(e));\n'
    "  return (int)e;\n}\n"
)
DEVICE_VARIABLES = "__device__ float cudaperf_table[4] = {1, 2, 3, 4};\n__device__ int cudaperf_count;\n"
# What most submissions use beyond that: device memory from the host, a kernel with a barrier (fibers).
TOUR = (
    "__global__ void cudaperf_tour_k(float* y) {\n  __shared__ float s[64];\n  s[threadIdx.x] = y[threadIdx.x];\n"
    "  __syncthreads();\n  y[threadIdx.x] = s[63 - threadIdx.x];\n}\n"
    "void cudaperf_tour(float* y) {\n  float* d = nullptr;\n  cudaMalloc(&d, 256);\n"
    "  cudaMemcpy(d, y, 256, cudaMemcpyHostToDevice);\n  cudaperf_tour_k<<<1, 64>>>(d);\n"
    "  cudaMemset(d, 0, 256);\n  cudaFree(d);\n}\n"
)
# A function-local static with a destructor (honest code has them; so has <iostream>'s static streams
# object, and the runtime pre-includes neither): its destructor is registered with __cxa_atexit.
LOCAL_STATIC = (
    "const char* cudaperf_named() {\n"
    '  static struct Named { const char* s = "named"; ~Named() { s = nullptr; } } named;\n'
    "  return named.s;\n}\n"
)
# The full unit baseline includes every standard header the screen allows.
ALL_STANDARD_INCLUDES = "".join(f"#include <{name}>\n" for name in sorted(STANDARD_HEADERS))
_STARTING = threading.Lock()  # one baseline build per runtime version and mode, whoever asks first
_MEASURING = threading.Lock()  # one measure of the unit baseline at a time (a GRPO group's builds wait for it)


def checker(linked: bool) -> Callable[[Path], str]:
    """The check of builds made in mode ``linked`` (see :func:`check`); starts their baseline now."""
    future = baseline(linked)
    return lambda library: check(library, future.result())


def settle(linked: bool) -> None:
    """Wait until the baselines of mode ``linked`` are measured (their compilers never outlive the evaluation
    that started them, e.g. one whose own build failed first); never raises."""
    wait([baseline(linked), _unit_measure(linked)])


def check(library: Path, allowed: frozenset[str]) -> str:
    """Why ``library`` (a submission's CPU build) may not run: "" when its imports are in ``allowed``
    (the runtime's, :func:`baseline`) or on the allowlist."""
    try:
        bad = refused(undefined_symbols(library), allowed)
    except (OSError, UnreadableLibrary) as exc:
        return f"the built library cannot be checked ({exc})"
    return explain(bad)


def baseline(linked: bool) -> Future[frozenset[str]]:
    """What a trivial submission's build imports in mode ``linked`` (the prebuilt runtime linked, or
    header-only), for the current runtime version: built once per process, in a thread of its own."""
    return _in_background("imports", linked, runtime_imports)


def _unit_measure(linked: bool) -> Future[frozenset[str]]:
    """:func:`unit_baseline` of mode ``linked``, measured once per process in a thread of its own (beside the
    submission's compile, which then finds it measured)."""
    return _in_background("unit-imports", linked, _measured_unit_baseline)


def _measured_unit_baseline(linked: bool) -> frozenset[str]:
    with _MEASURING:
        return unit_baseline(runtime_version(), linked)


def _in_background(name: str, linked: bool, measure: Callable[[bool], frozenset[str]]) -> Future[frozenset[str]]:
    with _STARTING:
        future = _baseline(name, runtime_version(), linked)
        if future.running() or future.done():
            return future
        future.set_running_or_notify_cancel()
    threading.Thread(target=_measure, args=(future, measure, linked), daemon=True, name=f"cudaperf-{name}").start()
    return future


@lru_cache(maxsize=8)
def _baseline(name: str, version: str, linked: bool) -> Future[frozenset[str]]:
    del name, version, linked  # the cache key
    return Future()


def _measure(future: Future[frozenset[str]], measure: Callable[[bool], frozenset[str]], linked: bool) -> None:
    try:
        future.set_result(measure(linked))
    except BaseException as exc:  # the waiting check re-raises it
        future.set_exception(exc)


def runtime_imports(linked: bool) -> frozenset[str]:
    """What a trivial submission's build imports in mode ``linked`` (its build is cached on disk)."""
    result = build_cpu("#include <cstdio>\n" + prepass(LOCAL_STATIC + TRIVIAL).source, linked=linked)
    if not result.ok or result.library is None:
        return frozenset()  # then every runtime import is refused: a clear failure, not a silent pass
    return undefined_symbols(result.library)


def unit_checker(linked: bool) -> Callable[[Path], str]:
    """The check of a submission's compiled unit (its object, before linking) in mode ``linked``; starts
    measuring its baseline now (read from the prebuilt runtime's folder once measured there)."""
    _unit_measure(linked)
    return lambda obj: check_unit(obj, linked)


def check_unit(obj: Path, linked: bool) -> str:
    """Why the compiled unit ``obj`` may not run: "" when its imports are on the allowlist or in
    :func:`unit_baseline` (what the runtime's headers import in every unit, what the runtime defines)."""
    try:
        undefined, _ = object_symbols(obj.read_bytes())
    except (OSError, UnreadableLibrary) as exc:
        return f"the compiled unit cannot be checked ({exc})"
    with _MEASURING:  # the full baseline (~10 s, once per prebuilt runtime) only where the first does not do
        bad = refused(undefined, unit_baseline(runtime_version(), linked))
        if bad:
            bad = refused(bad, unit_baseline(runtime_version(), linked, full=True))
    return explain(bad)


@lru_cache(maxsize=8)
def unit_baseline(version: str, linked: bool, full: bool = False) -> frozenset[str]:
    """What the runtime's headers make a submission's unit import in mode ``linked`` (empty when it cannot be
    measured: then every runtime import is refused, a clear failure); measured once per prebuilt runtime
    folder (compiler, headers, flags) and kept there.

    The undefined names of one unit with ``__device__`` variables, :data:`TOUR`, :data:`LOCAL_STATIC`
    and :data:`TRIVIAL` (the templates they instantiate; the same names as units of them apart,
    measured), and every name the runtime object defines (0.1 CPU-s with the precompiled header);
    ``full`` adds a unit that includes every standard header the screen allows and emits every
    inline function the headers define (``-fkeep-inline-functions``: the standard library's too; ~10 s).
    """
    del version  # the cache key (the folder's name holds it too)
    units = [("#include <cstdio>\n", DEVICE_VARIABLES + TOUR + LOCAL_STATIC + TRIVIAL, False)]  # one compile
    if full and linked:  # header-only units hold every inline function already
        units.append((ALL_STANDARD_INCLUDES, TRIVIAL, True))
    runtime = prebuilt_runtime()
    measured = digest(*(f"{includes}{source}{keep_inline}" for includes, source, keep_inline in units))[:8]
    kept = runtime.folder / f"unit-imports-{'linked' if linked else 'header'}{'-full' if full else ''}-{measured}.json"
    with contextlib.suppress(OSError, ValueError):
        return frozenset(json.loads(kept.read_text()))
    names: set[str] = set()
    for includes, source, keep_inline in units:
        data = compile_unit(includes + prepass(source, entry="cudaperf_call").source, linked, keep_inline=keep_inline)
        if data is None:
            return frozenset()
        names |= object_symbols(data)[0]
    if linked:
        names |= object_symbols(runtime.runtime_object.read_bytes())[1]
    write_atomic(kept, json.dumps(sorted(names)).encode())
    return frozenset(names)
