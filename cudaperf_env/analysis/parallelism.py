"""Configuration-aware parallelism features: how a submission spreads one configuration's work over the GPU.

The static features (:mod:`cudaperf_env.analysis.static`) describe the code;
these describe the code *at one configuration*: the task's scalar arguments
are bound to the entry function's parameters (by position), launch grids and
blocks are folded with them, and every loop of the launched kernels (and the
``__device__`` functions they call) gets a trip count from its bounds:

- threads and blocks launched, against the output size and the GPU's SM count
  (``sm_fill``, ``waves``, ``threads_per_output``);
- serial work per thread: loop iterations the first thread runs (loop variables
  that depend on the thread count as 0; a loop nested in another sees the outer
  variable at its midpoint, so a triangular nest counts half);
- global bytes moved (every access site on a global pointer, times the loop
  iterations around it, times the threads) against the memory-bound minimum
  (each input read once, each output written once), and arithmetic operations per
  byte of that minimum;
- what hand-written kernels do differently: warp primitives per thread, global
  atomics issued in all (a lane- or thread-0-guarded one once per warp or block),
  the largest thread-local array (a register tile), shared-memory bytes read per
  global byte, and the host code's allocations and synchronizations per call
  (``cudaMalloc``/``cudaFree``, ``cudaDeviceSynchronize``, blocking copies).

What cannot be folded (a data-dependent bound, a ``while`` loop, a grid computed at
run time) counts one iteration and is counted in ``unknown_trip_loops`` or leaves
``grid_known`` at 0. A C reference (no kernel) is read as one thread running the
entry function. Values are floats, most of them log2-scaled; nothing raises on
hostile source (:func:`config_features` returns ``{}`` when it cannot read it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cudaperf_env.analysis import syntax
from cudaperf_env.analysis.kernel_cost import Cost, CostWalker, Program, params, parse_program
from cudaperf_env.analysis.launch_config import Launch, find_launches
from cudaperf_env.tasks.schema import Config, Task

H200_SMS = 132
"""SMs of the card the shipped labels come from (NVIDIA H200)."""
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
_IDENT = re.compile(r"[A-Za-z_]\w*")
HOST_ALLOCATIONS = re.compile(r"^(cudaMalloc\w*|cudaFree\w*|malloc|free|cudaHostAlloc|cudaHostRegister)$")
HOST_SYNCS = re.compile(r"^(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaMemcpy|"
                        r"cudaMemcpy2D|cudaMemcpyFromSymbol|cudaMemcpyToSymbol|cudaThreadSynchronize)$")  # fmt: skip
_FAILURES = (RecursionError, ValueError, TypeError, AttributeError, IndexError, KeyError, ArithmeticError,
             OverflowError)  # fmt: skip


def config_features(task: Task, code: str, config: Config, sm_count: int = H200_SMS) -> dict[str, float]:
    """The parallelism features of ``code`` (a submission or an implementation of ``task``) at ``config``.

    Args:
        task: The task (its arguments give the entry parameters' values and the buffers' sizes).
        code: CUDA source defining the task's entry function (or the C reference).
        config: One configuration of the task.
        sm_count: SMs of the target GPU.

    Returns:
        Feature name -> value (NaN where a value needs what did not fold); ``{}`` when
        the source cannot be read.
    """
    program = parse_program(code)
    if program is None:
        return {}
    try:
        return _features(program, task, config, sm_count)
    except _FAILURES:
        return {}


def _features(program: Program, task: Task, config: Config, sm_count: int) -> dict[str, float]:
    entry = program.functions.get(task.entry)
    scalars, buffers = _bind_entry(entry[1], task, config, program.consts) if entry else ({}, {})
    host_env = {**program.consts, **scalars}
    shapes = _launch_costs(program, entry, host_env, buffers)
    min_bytes, outputs = _minimum(task, config)
    out: dict[str, float] = {"launches": float(len(shapes)), "log2_min_bytes": _log2(min_bytes),
                             "log2_outputs": _log2(outputs), **host_calls(program)}  # fmt: skip
    if not shapes:
        return out
    threads = [s[0] * s[1] if s[0] and s[1] else math.nan for s in shapes]
    work = [(t if t == t else 1.0) * (1 + s[2].iterations) for t, s in zip(threads, shapes, strict=True)]
    heavy = max(range(len(shapes)), key=lambda i: (work[i], -i))  # the launch that does the most work
    blocks, per_block, cost, _ = shapes[heavy]
    total_threads = threads[heavy]
    resident = min(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // max(1, per_block or 256))
    moved = sum(t * s[2].global_bytes for t, s in zip(threads, shapes, strict=True))
    ops = sum(t * s[2].ops for t, s in zip(threads, shapes, strict=True))
    waves = (blocks or math.nan) / (sm_count * max(1, resident))
    out.update({
        "grid_known": float(all(math.isfinite(t) for t in threads)),
        "launch_in_loop": float(any(s[3] for s in shapes)),
        "threads_per_block": float(per_block or math.nan),
        "log2_blocks": _log2(blocks or math.nan),
        "log2_threads": _log2(total_threads),
        "sm_fill": min(1.0, (blocks or math.nan) / sm_count),
        "thread_fill": min(1.0, total_threads / (sm_count * MAX_THREADS_PER_SM)),
        "log2_waves": _log2(waves),
        "log2_threads_per_output": _log2(total_threads / max(1, outputs)),
        "log2_iterations_per_thread": _log2(1 + cost.iterations),
        "log2_serial_chain": _log2(1 + cost.iterations) + _log2_waves_run(waves),
        "log2_bytes_per_thread": _log2(1 + cost.global_bytes),
        "log2_traffic_over_minimum": _log2(moved / max(1, min_bytes)),
        "log2_ops_per_byte": _log2(1 + ops / max(1, min_bytes)),
        "log2_shared_bytes_per_thread": _log2(1 + cost.shared_bytes),
        "log2_barriers_per_thread": _log2(1 + cost.barriers),
        "unknown_trip_loops": float(sum(s[2].unknown_loops for s in shapes)),
        "log2_warp_ops_per_thread": _log2(1 + cost.warp_ops),
        "log2_global_atomics": _log2(1 + sum((t if t == t else 1.0) * s[2].atomics
                                             for t, s in zip(threads, shapes, strict=True))),
        "log2_register_tile": _log2(1 + max(s[2].local_elements for s in shapes)),
        "log2_shared_over_global": _log2((1 + cost.shared_bytes) / (1 + cost.global_bytes)),
    })  # fmt: skip
    return out


def host_calls(program: Program) -> dict[str, float]:
    """Calls in the host code that cost a round trip per call: allocations and frees, synchronizations."""
    names = [syntax.text(syntax.child(node, "function")).split("::")[-1].split("<")[0].strip()
             for kind, function in program.functions.values() if kind == "host"
             for node in syntax.walk(function) if node.type == "call_expression"]  # fmt: skip
    return {"host_allocations": float(sum(bool(HOST_ALLOCATIONS.match(n)) for n in names)),
            "host_syncs": float(sum(bool(HOST_SYNCS.match(n)) for n in names))}  # fmt: skip


def _log2_waves_run(waves: float) -> float:
    """log2 of the waves of blocks a launch runs in (at least one; NaN when the grid is unknown)."""
    return _log2(max(1.0, math.ceil(waves))) if waves == waves else math.nan


def _log2(x: float) -> float:
    return math.log2(x) if x == x and x > 0 else (math.nan if x != x else -1.0)


def _bind_entry(function: Any, task: Task, config: Config, consts: Mapping[str, int]
                ) -> tuple[dict[str, int], dict[str, int]]:  # fmt: skip
    """The entry's integer parameters' values and its buffer parameters' element bytes, bound by position."""
    scalars: dict[str, int] = {}
    buffers: dict[str, int] = {}
    for (name, pointer, _), arg in zip(params(function, consts), task.args, strict=False):
        if not name:
            continue
        if arg.is_buffer and pointer:
            buffers[name] = int(arg.dtype.numpy.itemsize)
        elif not arg.is_buffer and not arg.dtype.is_float:
            scalars[name] = int(arg.scalar_value(config))
    return scalars, buffers


def _minimum(task: Task, config: Config) -> tuple[int, int]:
    """Bytes of the memory-bound minimum (inputs read once, outputs written once) and output elements."""
    total = outputs = 0
    for arg in task.args:
        if not arg.is_buffer:
            continue
        size = arg.numel(config)
        total += size * int(arg.dtype.numpy.itemsize) * (2 if arg.role == "inout" else 1)
        outputs += size if arg.role in ("out", "inout") else 0
    return total, outputs


def _launch_costs(program: Program, entry: tuple[str, Any] | None, host_env: dict[str, int],
                  buffers: dict[str, int]) -> list[tuple[int | None, int | None, Cost, bool]]:  # fmt: skip
    """``(blocks, threads per block, per-thread cost, in a host loop)`` of each launch of a known kernel."""
    kernels = {n for n, (kind, _) in program.functions.items() if kind == "kernel"}
    if not kernels:  # a C reference: one thread runs the entry function
        if entry is None:
            return []
        walker = CostWalker(program, dict(host_env), dict(buffers))
        walker.block(syntax.child(entry[1], "body"))
        return [(1, 1, walker.cost, False)]
    launches: list[Launch] = find_launches(entry[1], host_env) if entry is not None else []
    if not launches:
        hosts = [node for kind, node in program.functions.values() if kind == "host"]
        launches = [la for node in hosts for la in find_launches(node, program.consts)]
    out = []
    for launch in launches:
        if launch.kernel not in kernels:
            continue
        kernel = program.functions[launch.kernel][1]
        blocks = _product(launch.grid)
        per_block = _product(launch.block)
        cost = _kernel_cost(program, kernel, launch, buffers)
        out.append((blocks, per_block, cost, launch.in_loop))
    return out


def _product(dims: tuple[int, int, int] | None) -> int | None:
    return dims[0] * dims[1] * dims[2] if dims is not None else None


def _kernel_cost(program: Program, kernel: Any, launch: Launch, buffers: Mapping[str, int]) -> Cost:
    env = dict(program.consts)
    for axis, i in (("x", 0), ("y", 1), ("z", 2)):
        env[f"threadIdx.{axis}"] = env[f"blockIdx.{axis}"] = 0
        if launch.block is not None:
            env[f"blockDim.{axis}"] = launch.block[i]
        if launch.grid is not None:
            env[f"gridDim.{axis}"] = launch.grid[i]
    walker = CostWalker(program, env, {})
    for (name, pointer, type_text), arg in zip(params(kernel, program.consts), launch.args, strict=False):
        if pointer and isinstance(arg, str):
            base = next((n for n in _IDENT.findall(arg) if n in buffers), None)
            if base is not None:
                walker.pointers[name] = syntax.type_bytes(type_text) or buffers[base]
        elif not pointer and isinstance(arg, int):
            env[name] = arg
    walker.block(syntax.child(kernel, "body"))
    return walker.cost
