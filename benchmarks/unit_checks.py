"""What the checks of the submission's compiled unit cost per CPU build (load-time code, unit imports).

A new saxpy source is built with the checks (``-fdata-sections -save-temps=obj``, then
``toolchain/initcode.py`` and ``backends/cpu/imports.check_unit`` read the object) and
without them, interleaved so that other load on the machine falls on both alike; medians
and quartiles in milliseconds. Only a step with a new source builds (a source seen before
is served from the cache, checks included).

Run::

    python benchmarks/unit_checks.py --repeats 30
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from pathlib import Path

from cudaperf_env.backends.cpu import imports
from cudaperf_env.backends.cpu.compiler import build_cpu, ensure_prebuilt, runtime_version
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.backends.harness import shim_first
from cudaperf_env.tasks import load_task
from cudaperf_env.toolchain import initcode

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
    args = parser.parse_args()
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
    for mode, values in times.items():
        q1, q2, q3 = statistics.quantiles(values, n=4)
        print(f"{mode:>3}: median {q2:.0f} ms (quartiles {q1:.0f}-{q3:.0f}) over {len(values)} builds")
    print(f"added: {statistics.median(times['on']) - statistics.median(times['off']):.0f} ms per build")


if __name__ == "__main__":
    main()
