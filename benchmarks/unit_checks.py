"""What the checks of the submission's compiled unit cost per build (load-time code, unit imports).

A new saxpy source is built with the checks (CPU: ``-fdata-sections -save-temps=obj``, then
``toolchain/initcode.py`` and ``backends/cpu/imports.check_unit`` read the object; ``--gpu``: nvcc
with ``-keep``, then ``initcode.check(nvcc=True)`` and ``backends/cuda/imports.check_unit``) and
without them, interleaved so that other load on the machine falls on both alike; medians and
quartiles in milliseconds. Only a step with a new source builds (a source seen before is served
from the cache, checks included). ``--gpu`` needs nvcc, not a GPU (it builds for ``sm_90``) and
also times the two checks alone on the kept object.

Run::

    python benchmarks/unit_checks.py --repeats 30
    python benchmarks/unit_checks.py --gpu --repeats 20
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from cudaperf_env.backends.cpu import imports
from cudaperf_env.backends.cpu.compiler import build_cpu, ensure_prebuilt, runtime_version
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.cuda import imports as gpu_imports
from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.backends.harness import shim_first, units
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain import initcode, tools
from cudaperf_env.toolchain.cache import cache_dir
from cudaperf_env.toolchain.confine import Confinement
from cudaperf_env.toolchain.native import build_library

SAXPY = load_task(Path(__file__).parents[1] / "tests" / "fixtures" / "tasks" / "saxpy.yaml")
CODE = (
    "__global__ void k(int n, float a, const float* x, float* y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
    'extern "C" void saxpy(int n, float a, const float* x, float* y) {\n'
    "  k<<<(n + 255) / 256, 256>>>(n, a, x, y);\n}\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="builds with and without the checks, each")
    parser.add_argument("--gpu", action="store_true", help="the GPU build path (nvcc for sm_90; no GPU needed)")
    args = parser.parse_args()
    if args.gpu:
        gpu(args.repeats)
        return
    linked = ensure_prebuilt()
    imports.unit_baseline(runtime_version(), linked)  # measured once per prebuilt runtime, kept on disk

    def checks(obj: Path) -> str:
        return initcode.check(obj) or imports.check_unit(obj, linked)

    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.repeats):
        for mode, check in (("on", checks), ("off", None)):
            source = shim_first(SAXPY, prepass(CODE + f"// {uuid.uuid4()}\n", entry="saxpy").source)
            start = time.perf_counter()
            result = build_cpu(source, linked=linked, object_check=check)
            times[mode].append((time.perf_counter() - start) * 1e3)
            assert result.ok and not result.cached, result.log
    report(times)


def gpu(repeats: int) -> None:
    """The GPU build (``backends/cuda/backend.build_gpu``'s steps) with and without the unit checks."""
    flags = nvcc_flags("sm_90")
    library_check = gpu_imports.checker(tuple(flags))
    gpu_imports.runtime_imports(tuple(flags))  # both measured once per nvcc version and flags
    gpu_imports.unit_baseline(tools.version(tools.nvcc()), tuple(flags))

    def checks(obj: Path) -> str:
        return initcode.check(obj, nvcc=True) or gpu_imports.check_unit(obj, tuple(flags))

    kept: list[Path] = []
    folder = Path(tempfile.mkdtemp(dir=cache_dir("tmp")))

    def keeping(obj: Path) -> str:  # the checks, and a copy of the object to time them alone
        kept.append(Path(shutil.copy(obj, folder / f"{len(kept)}.o")))
        return checks(obj)

    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(repeats):
        for mode, check in (("on", keeping), ("off", None)):
            source = units(SAXPY, CODE + f"// {uuid.uuid4()}\n", "cuda")
            start = time.perf_counter()
            result = build_library(tools.nvcc(), flags, source, ".cu", confine=Confinement(), check=library_check,
                                   object_check=check)  # fmt: skip
            times[mode].append((time.perf_counter() - start) * 1e3)
            assert result.ok and not result.cached, result.log
    report(times)
    alone = [timed(checks, obj) for obj in kept]
    q1, q2, q3 = statistics.quantiles(alone, n=4)
    print(f"the checks alone on the kept object: median {q2:.1f} ms (quartiles {q1:.1f}-{q3:.1f})")
    shutil.rmtree(folder, ignore_errors=True)


def timed(check: Callable[[Path], str], obj: Path) -> float:
    start = time.perf_counter()
    assert check(obj) == ""
    return (time.perf_counter() - start) * 1e3


def report(times: dict[str, list[float]]) -> None:
    for mode, values in times.items():
        q1, q2, q3 = statistics.quantiles(values, n=4)
        print(f"{mode:>3}: median {q2:.0f} ms (quartiles {q1:.0f}-{q3:.0f}) over {len(values)} builds")
    print(f"added: {statistics.median(times['on']) - statistics.median(times['off']):.0f} ms per build")


if __name__ == "__main__":
    main()
