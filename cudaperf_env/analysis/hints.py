"""Feedback hints: each finding of the analysis as one sentence that names its cause and place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cudaperf_env.analysis.occupancy import Occupancy
from cudaperf_env.analysis.records import GATHER, STRIDED, Access
from cudaperf_env.analysis.static import SourceAnalysis, main_kernel
from cudaperf_env.toolchain.compile_check import CompileReport

MAX_HINTS = 8
_VERBS = {"load": "loads", "store": "stores", "atomic": "atomics"}


def hints(
    analysis: SourceAnalysis,
    occupancies: Mapping[str, Occupancy],
    report: CompileReport | None,
    occupancy_target: float = 0.5,
) -> tuple[str, ...]:
    """Findings, most important first (at most ``MAX_HINTS``)."""
    if analysis.parsed and not analysis.kernels:
        return ("no __global__ kernel found: nothing runs on the GPU",)
    if analysis.truncated:
        return ("the code nests too deeply to analyse: flatten the nested branches and expressions",)
    found: list[str] = []
    found += _barriers(analysis)
    found += _strided(analysis.global_accesses())
    found += _occupancy(analysis, occupancies, occupancy_target)
    found += _spills(report)
    found += _atomics(analysis.accesses)
    found += _tree_reductions(analysis)
    found += _bank_conflicts(analysis.accesses)
    found += _gathers(analysis.global_accesses())
    found += _reuse(analysis)
    return tuple(found[:MAX_HINTS])


def _barriers(analysis: SourceAnalysis) -> list[str]:
    return [
        f"__syncthreads inside a divergent branch (line {b.line}): may deadlock; "
        "move the barrier out of code that depends on the thread index"
        for b in analysis.barriers
        if b.divergent
    ][:2]


def _grouped(accesses: Sequence[Access], verdict: str) -> dict[tuple[str, str, str], list[Access]]:
    groups: dict[tuple[str, str, str], list[Access]] = {}
    for a in accesses:
        if a.verdict == verdict:
            groups.setdefault((a.array, a.op, str(a.index.stride)), []).append(a)
    return groups


def _lines(group: Sequence[Access]) -> str:
    lines = sorted({a.line for a in group})
    return f"line {lines[0]}" if len(lines) == 1 else "lines " + ", ".join(map(str, lines[:4]))


def _strided(accesses: Sequence[Access]) -> list[str]:
    return [
        f"{_VERBS[op]} of `{array}` are strided by {stride} in threadIdx.x ({_lines(group)}): not coalesced"
        for (array, op, stride), group in _grouped(accesses, STRIDED).items()
    ][:3]


def _gathers(accesses: Sequence[Access]) -> list[str]:
    return [
        f"{_VERBS[op]} of `{array}` are indexed by loaded data ({_lines(group)}): a gather, not coalesced"
        for (array, op, _), group in _grouped(accesses, GATHER).items()
    ][:2]


def _occupancy(analysis: SourceAnalysis, occ: Mapping[str, Occupancy], target: float) -> list[str]:
    main = main_kernel(analysis)
    if main is None or main.name not in occ:
        return []
    o = occ[main.name]
    if o.blocks == 0:
        return [f"`{main.name}` cannot launch with {main.threads} threads per block "
                f"({_cause(o, main.threads)}): it would fail at run time"]
    if o.occupancy >= target:
        return []
    return [f"occupancy {o.occupancy:.0%}, limited by {_cause(o, main.threads)}"]


def _cause(o: Occupancy, threads: int) -> str:
    if o.limiter == "registers":
        return f"{o.registers} registers per thread"
    if o.limiter == "shared_memory":
        return f"{o.smem_per_block / 1024:.1f} KiB shared memory per block"
    if o.limiter == "barriers":
        return "the number of named barriers per block"
    if o.limiter == "launch":
        return "the block size limit"
    if o.limiter == "blocks":
        return f"the resident-block limit with {threads}-thread blocks: use larger blocks"
    return f"{threads}-thread blocks"


def _spills(report: CompileReport | None) -> list[str]:
    if report is None:
        return []
    return [
        f"`{k.name.split('(')[0]}` spills {k.spill_stores + k.spill_loads} bytes to local memory "
        f"({k.registers} registers): reduce register pressure (smaller per-thread arrays or tiles)"
        for k in report.kernels
        if k.spill_stores + k.spill_loads > 0
    ][:2]


def _atomics(accesses: Sequence[Access]) -> list[str]:
    found: list[str] = []
    for a in accesses:
        if a.op != "atomic" or a.space != "global":
            continue
        if a.index.kind == "uniform" and not a.guarded:
            found.append(f"every thread does an atomic on the same address of `{a.array}` (line {a.line}): "
                         "contended; reduce within the warp or block first and let one thread update")
        elif a.index.kind == "indirect":
            found.append(f"atomics on global `{a.array}` at data-dependent addresses (line {a.line}): "
                         "privatize them in shared memory and merge once per block")
    return found[:2]


def _tree_reductions(analysis: SourceAnalysis) -> list[str]:
    return [
        f"shared-memory tree reduction with a barrier per step (line {loop.line}): "
        "reduce within warps with __shfl_down_sync, then across warps once"
        for loop in analysis.loops
        if loop.tree_reduction
    ][:1]


def _bank_conflicts(accesses: Sequence[Access]) -> list[str]:
    worst: dict[str, Access] = {}
    for a in accesses:
        if a.space != "shared" or a.bank_ways < 4:
            continue
        if a.array not in worst or a.bank_ways > worst[a.array].bank_ways:
            worst[a.array] = a
    return [
        f"shared `{a.array}` is accessed with a stride of {a.index.stride} elements in threadIdx.x "
        f"(line {a.line}): {a.bank_ways}-way bank conflicts; pad rows by one element"
        for a in worst.values()
    ][:1]


def _reuse(analysis: SourceAnalysis) -> list[str]:
    """Loops where every lane reads one value next to per-lane reads: the naive matmul/matvec shape."""
    if analysis.shared or analysis.flops <= 0 or analysis.global_bytes <= 0:
        return []
    if analysis.flops / analysis.global_bytes >= 1.0:
        return []
    loads = [a for a in analysis.global_accesses() if a.op == "load" and a.loop_depth > 0 and not a.guarded]
    varying = {(a.kernel, a.loop_depth) for a in loads if a.verdict != "uniform"}
    arrays = sorted({a.array for a in loads if a.verdict == "uniform" and (a.kernel, a.loop_depth) in varying})
    if not arrays:
        return []
    names = ", ".join(f"`{n}`" for n in arrays[:3])
    return [f"every warp re-reads {names} from global memory inside a loop "
            f"({analysis.flops / analysis.global_bytes:.2f} FLOP/byte): stage tiles in shared memory for reuse"]
