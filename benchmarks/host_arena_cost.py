"""Cost of the CPU backend's host arena (include/cudaperf/host_arena.h): per launch and per allocation.

The submission's malloc/new go to an arena whose mappings are closed (PROT_NONE) while kernels run:
two mprotect calls per arena mapping and launch. This builds one small library with the CPU
backend's own build (the prebuilt runtime linked, the allocator routed) and times, in it:

* an empty launch (1 block of 32 threads) with the submission holding no host allocations, and
  holding N live blocks of K KiB, every page touched (mprotect's cost grows with the pages mapped);
* a malloc/free pair of 64 bytes and of 1 MiB through the arena and through the real allocator
  (``__real_malloc``, which the linker binds to glibc's).

Run::

    python benchmarks/host_arena_cost.py --json > benchmarks/results/host_arena_cost.json
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudaperf_env.backends.cpu import compiler  # noqa: E402
from cudaperf_env.backends.cpu.prepass import prepass  # noqa: E402

SOURCE = r"""
#include <cstdlib>
#include <time.h>
extern "C" void* __real_malloc(size_t);
extern "C" void __real_free(void*);
__global__ void empty(int* p) {}
static double now_ns() {
  timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
// ns per empty launch while `blocks` host allocations of `kib` KiB each, every page touched, are live.
extern "C" double launch_ns(int count, int kib, int launches) {
  char* blocks[256];
  for (int i = 0; i < count && i < 256; ++i) {
    blocks[i] = (char*)malloc((size_t)kib << 10);
    for (size_t b = 0; b < ((size_t)kib << 10); b += 4096) blocks[i][b] = 1;
  }
  empty<<<1, 32>>>(nullptr);
  double t0 = now_ns();
  for (int i = 0; i < launches; ++i) empty<<<1, 32>>>(nullptr);
  double t = (now_ns() - t0) / launches;
  for (int i = 0; i < count && i < 256; ++i) free(blocks[i]);
  return t;
}
// ns per malloc/free pair of `bytes`: through the arena (real = 0) or glibc (real = 1).
extern "C" double alloc_ns(long bytes, int real, int pairs) {
  double t0 = now_ns();
  for (int i = 0; i < pairs; ++i) {
    void* p = real ? __real_malloc(bytes) : malloc(bytes);
    ((volatile char*)p)[0] = 1;
    if (real) __real_free(p); else free(p);
  }
  return (now_ns() - t0) / pairs;
}
"""


def build() -> ctypes.CDLL:
    if not compiler.ensure_prebuilt():
        raise SystemExit("the prebuilt runtime failed to build (see prebuild.log in its cache folder)")
    result = compiler.build_cpu(prepass(SOURCE).source, linked=True)
    if not result.ok or result.library is None:
        raise SystemExit(result.log)
    lib = ctypes.CDLL(str(result.library))
    lib.launch_ns.restype = ctypes.c_double
    lib.launch_ns.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int)
    lib.alloc_ns.restype = ctypes.c_double
    lib.alloc_ns.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_int)
    return lib


def best(fn, *args, rounds: int) -> float:  # type: ignore[no-untyped-def]
    return min(fn(*args) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="best of this many runs of each measurement")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    lib = build()
    shapes = ((0, 0), (1, 1), (64, 16), (64, 1024), (1, 65536))  # (blocks, KiB each)
    launches = {f"{n}x{kib}KiB": best(lib.launch_ns, n, kib, 500, rounds=args.rounds) for n, kib in shapes}
    allocs = {f"{kind}_{size}": best(lib.alloc_ns, size, real, 20000, rounds=args.rounds)
              for size in (64, 1 << 20) for kind, real in (("arena", 0), ("glibc", 1))}  # fmt: skip
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
        "rounds": args.rounds,
        "empty_launch_ns_by_live_host_allocations": launches,
        "malloc_free_pair_ns": allocs,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in launches.items():
        print(f"empty launch, live host allocations {key:>10}: {value / 1000:8.2f} us")
    for key, value in allocs.items():
        print(f"malloc/free pair, {key:>14}: {value:8.1f} ns")


if __name__ == "__main__":
    main()
