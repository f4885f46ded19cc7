"""Source features of a CUDA submission, from a real parse (tree-sitter's CUDA grammar).

What is measured, per kernel and then summed over the file:

- every global-memory access site and how its index moves with ``threadIdx.x``:
  coalesced (unit stride), strided, warp-uniform, indirect (``x[idx[i]]``) or unknown;
- vector-type accesses (``float4``), shared arrays, their padding and bank conflicts;
- barriers, barriers inside thread-dependent branches (a possible deadlock),
  warp-level primitives, shared-memory tree reductions (a barrier per step);
- atomics on global and shared memory, and contended ones (every lane on one address);
- loops: unrolled, grid-stride, nesting; floating-point operations per byte of
  global traffic, each weighted by ``LOOP_WEIGHT`` per enclosing loop;
- launch configurations when they are constant.

Garbage in gives an analysis with no kernels, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cudaperf_env.analysis import syntax
from cudaperf_env.analysis.constants import declarators, file_constants, fold
from cudaperf_env.analysis.kernel_walk import LOOP_WEIGHT, FunctionDef, KernelWalker
from cudaperf_env.analysis.launch_config import Launch, find_launches
from cudaperf_env.analysis.records import (
    BROADCAST,
    COALESCED,
    GATHER,
    STRIDED,
    UNCLEAR,
    Access,
    Barrier,
    Loop,
    Record,
    SharedArray,
)

DEFAULT_BLOCK_SIZE = 256
MAX_SOURCE_CHARS = 200_000  # larger inputs are not analysed (the extractor caps submissions well below)


@dataclass(frozen=True)
class KernelInfo:
    """A ``__global__`` function and how it is launched.

    Attributes:
        name: Simple name.
        line: Line of its definition.
        threads: Threads per block used for occupancy.
        threads_origin: Where ``threads`` came from: ``launch``, ``launch_bounds``, ``hint`` or ``default``.
        dynamic_shared: Dynamic shared memory per block at its first launch (0 when none or unknown).
        launched: Whether the host code launches it.
        launch_bounds: Its ``__launch_bounds__`` maximum threads, if constant.
    """

    name: str
    line: int
    threads: int
    threads_origin: str
    dynamic_shared: int
    launched: bool
    launch_bounds: int | None


@dataclass(frozen=True)
class SourceAnalysis:
    """Everything the static analysis found.

    Attributes:
        parsed: The grammar was available and the text was analysed.
        parse_errors: Syntax-error nodes in the tree (0 for clean code).
        kernels: The kernels, in source order.
        launches: The launches, in source order.
        accesses: Global and shared memory access sites.
        barriers: Block-wide barriers.
        loops: Loops.
        shared: Shared-memory declarations.
        warp_ops: ``(kernel, line, name)`` of each warp-level primitive.
        warp_syncs: Number of ``__syncwarp`` (and tile ``sync``) calls.
        flops: Floating-point operations, loop-weighted.
        int_divs: Integer divisions and modulos by a divisor unknown at compile time, loop-weighted.
        global_bytes: Bytes of global traffic, loop-weighted.
        truncated: The walk stopped early (nesting deeper than any real kernel's); counts are
            partial, so the score is 0 and the features say ``analysis_truncated``.
    """

    parsed: bool
    parse_errors: int = 0
    kernels: tuple[KernelInfo, ...] = ()
    launches: tuple[Launch, ...] = ()
    accesses: tuple[Access, ...] = ()
    barriers: tuple[Barrier, ...] = ()
    loops: tuple[Loop, ...] = ()
    shared: tuple[SharedArray, ...] = ()
    warp_ops: tuple[tuple[str, int, str], ...] = ()
    warp_syncs: int = 0
    flops: float = 0.0
    int_divs: float = 0.0
    global_bytes: float = 0.0
    truncated: bool = False

    def global_accesses(self) -> tuple[Access, ...]:
        """Loads and stores (not atomics) of global memory."""
        return tuple(a for a in self.accesses if a.space == "global" and a.op != "atomic")


def analyze_source(code: str, block_size_hint: int | None = None) -> SourceAnalysis:
    """Parses ``code`` and walks every kernel.

    Args:
        code: CUDA C++ source (a whole submission).
        block_size_hint: Threads per block to assume for kernels whose launch is not constant.

    Returns:
        The analysis; ``parsed=False`` when the grammar is not installed or the
        text is too large, and no kernels for text that holds none.
    """
    if len(code) > MAX_SOURCE_CHARS or not syntax.available():
        return SourceAnalysis(parsed=False)
    tree = syntax.parse(code)
    consts = file_constants(tree.root)
    functions = _functions(tree.root, consts)
    launches = [
        launch for fn in functions if fn.kind == "host" for launch in find_launches(fn.node, consts)
    ]
    by_name = {fn.name: fn for fn in functions}
    record = Record()
    kernels: list[KernelInfo] = []
    truncated = False
    for fn in functions:
        if fn.kind != "kernel":
            continue
        first = next((la for la in launches if la.kernel == fn.name), None)
        kernels.append(_kernel_info(fn, first, block_size_hint))
        block_x = first.block[0] if first is not None and first.block is not None else None
        args = first.template_args if first is not None else ()
        walker = KernelWalker(fn, consts, by_name, tree.pragmas, record, block_x, args)
        try:
            walker.run()
        except RecursionError:
            truncated = True
    return SourceAnalysis(
        parsed=True,
        parse_errors=tree.errors,
        kernels=tuple(kernels),
        launches=tuple(launches),
        accesses=tuple(record.accesses),
        barriers=tuple(record.barriers),
        loops=tuple(record.loops),
        shared=tuple(record.shared),
        warp_ops=tuple(record.warp_ops),
        warp_syncs=record.warp_syncs,
        flops=record.flops,
        int_divs=record.int_divs,
        global_bytes=record.global_bytes,
        truncated=truncated or record.truncated,
    )


def _kernel_info(fn: FunctionDef, launch: Launch | None, hint: int | None) -> KernelInfo:
    if launch is not None and launch.threads:
        threads, origin = launch.threads, "launch"
    elif hint:
        threads, origin = hint, "hint"
    elif fn.launch_bounds:
        threads, origin = fn.launch_bounds, "launch_bounds"
    else:
        threads, origin = DEFAULT_BLOCK_SIZE, "default"
    shared = launch.shared_bytes if launch is not None and launch.shared_bytes else 0
    return KernelInfo(fn.name, fn.line, threads, origin, shared, launch is not None, fn.launch_bounds)


def _functions(root: Any, consts: Mapping[str, int]) -> list[FunctionDef]:
    found: list[FunctionDef] = []
    for name, kind, node in syntax.function_definitions(root):
        bounds = next((c for c in node.children if c.type == "launch_bounds"), None)
        limit = fold(bounds.named_children[0], consts) if bounds is not None and bounds.named_children else None
        found.append(FunctionDef(name, node, kind, _template_params(node, consts), limit, syntax.line(node)))
    return found


def _template_params(node: Any, consts: Mapping[str, int]) -> tuple[str, ...]:
    parent = node.parent
    if parent is None or parent.type != "template_declaration":
        return ()
    params = syntax.child(parent, "parameters")
    names: list[str] = []
    for param in params.named_children if params is not None else ():
        if param.type in ("parameter_declaration", "optional_parameter_declaration"):
            found = [d.name for d in declarators(param, consts)]
            names.append(found[0] if found else "")
        else:
            names.append("")
    return tuple(names)


def main_kernel(analysis: SourceAnalysis) -> KernelInfo | None:
    """The kernel that does the most work: the most memory access sites, each weighted by its loops."""
    if not analysis.kernels:
        return None
    weight = {k.name: 0.0 for k in analysis.kernels}
    for access in analysis.accesses:
        if access.kernel in weight:
            weight[access.kernel] += float(LOOP_WEIGHT**access.loop_depth)
    return max(analysis.kernels, key=lambda k: weight[k.name])  # the first of equals


def source_features(analysis: SourceAnalysis) -> dict[str, float | int | bool | str]:
    """The static features (flat name -> value) of an analysis; empty when it found no kernel."""
    if not analysis.parsed or not analysis.kernels:
        return {}
    if analysis.truncated:
        return {"kernels": len(analysis.kernels), "analysis_truncated": True}
    mem = analysis.global_accesses()
    verdicts = [a.verdict for a in mem]
    shared_acc = [a for a in analysis.accesses if a.space == "shared" and a.op != "atomic"]
    atomics = [a for a in analysis.accesses if a.op == "atomic"]
    global_atomics = [a for a in atomics if a.space == "global"]
    ways = [a.bank_ways for a in shared_acc]
    first = main_kernel(analysis) or analysis.kernels[0]
    features: dict[str, float | int | bool | str] = {
        "kernels": len(analysis.kernels),
        "parse_errors": analysis.parse_errors,
        "launches": len(analysis.launches),
        "block_size": first.threads,
        "block_size_origin": first.threads_origin,
        "global_accesses": len(mem),
        "global_loads": sum(a.op == "load" for a in mem),
        "global_stores": sum(a.op == "store" for a in mem),
        "coalesced_accesses": verdicts.count(COALESCED),
        "strided_accesses": verdicts.count(STRIDED),
        "strided_loads": sum(a.verdict == STRIDED and a.op == "load" for a in mem),
        "strided_stores": sum(a.verdict == STRIDED and a.op == "store" for a in mem),
        "uniform_accesses": verdicts.count(BROADCAST),
        "indirect_accesses": verdicts.count(GATHER),
        "unknown_accesses": verdicts.count(UNCLEAR),
        "vector_accesses": sum(a.vector for a in mem),
        "shared_arrays": len(analysis.shared),
        "shared_static_bytes": sum(s.bytes or 0 for s in analysis.shared),
        "dynamic_shared": any(s.dynamic for s in analysis.shared),
        "shared_padded": any(s.padded for s in analysis.shared),
        "shared_accesses": len(shared_acc),
        "bank_conflict_accesses": sum(w >= 2 for w in ways),
        "max_bank_ways": max(ways, default=1),
        "syncthreads": len(analysis.barriers),
        "barriers_in_loops": sum(b.in_loop for b in analysis.barriers),
        "divergent_barriers": sum(b.divergent for b in analysis.barriers),
        "warp_primitives": len(analysis.warp_ops),
        "warp_syncs": analysis.warp_syncs,
        "smem_tree_reductions": sum(loop.tree_reduction for loop in analysis.loops),
        "global_atomics": len(global_atomics),
        "shared_atomics": len(atomics) - len(global_atomics),
        "contended_atomics": sum(_contended(a) for a in global_atomics),
        "indirect_global_atomics": sum(a.index.kind == "indirect" for a in global_atomics),
        "loops": len(analysis.loops),
        "unrolled_loops": sum(loop.unrolled for loop in analysis.loops),
        "grid_stride_loops": sum(loop.grid_stride for loop in analysis.loops),
        "max_loop_depth": max((loop.depth for loop in analysis.loops), default=0),
        "flops_weighted": analysis.flops,
        "int_divmods_weighted": analysis.int_divs,
    }
    if mem:
        features["coalescing"] = coalescing(verdicts)
        features["vectorized_fraction"] = features["vector_accesses"] / len(mem)  # type: ignore[operator]
    if analysis.global_bytes > 0:
        features["arithmetic_intensity"] = analysis.flops / analysis.global_bytes
    return features


def coalescing(verdicts: list[str]) -> float:
    """Share of global access sites that coalesce: coalesced and warp-uniform sites count 1,
    strided 0, indirect and unknown 0.5 (the analysis cannot tell)."""
    if not verdicts:
        return 1.0
    credit = {COALESCED: 1.0, BROADCAST: 1.0, STRIDED: 0.0, GATHER: 0.5, UNCLEAR: 0.5}
    return sum(credit[v] for v in verdicts) / len(verdicts)


def _contended(access: Access) -> bool:
    """Every lane of a warp updates the same global address (not guarded by a per-thread branch)."""
    return access.index.kind == "uniform" and not access.guarded
