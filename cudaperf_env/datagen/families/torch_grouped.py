"""Grouped reductions: a program over groups of elements laid out with any stride, in three strategies.

A group is the set of elements one reduction covers: a column of ``[B, R, C]``
reduced over ``dim=1``, the channel of a BatchNorm (every batch and position), a
GroupNorm group, a row of a loss. :class:`Grouping` says how many groups there
are, how large each is and where element ``j`` of group ``g`` lives (a C
expression); a program is reduction passes over the group (sum, max, min of an
expression of the element ``xj``), scalar statements after each, then one output
per group or one per element. :func:`grouped_kernels` writes it three ways: a
thread per group, a block per group (shared-memory tree) and a warp per group
(shuffles), so every family built on it gets the same three strategies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cudaperf_env.datagen.families.torch_rowwise import BLOCK_REDUCE, COMBINE, WARP_REDUCE, Pass

Index = Callable[[str], str]  # j (a C expression) -> the flat offset of element j of group g


@dataclass(frozen=True)
class Grouping:
    """How the elements split into groups.

    Attributes:
        groups: C expression of the number of groups (of the entry's size arguments).
        size: C expression of the elements per group.
        at: Element ``j`` of group ``g``: its flat offset in the inputs (and per-element outputs).
        out_at: Where group ``g``'s single output goes (per-group outputs).
    """

    groups: str
    size: str
    at: Index
    out_at: str = "g"


@dataclass(frozen=True)
class GroupProgram:
    """A grouped computation.

    Attributes:
        load: C statements defining ``xj`` (and any other per-element value) from element ``$j``'s offset
            ``$o``; they may read ``g``.
        passes: Reductions, each with the scalar statements that follow it.
        out: The output: a per-group expression (of the scalars) or a per-element one (of ``xj`` too).
        per_element: One output per element (same layout as the input) instead of one per group.
    """

    load: str
    passes: tuple[tuple[Pass, str], ...]
    out: str
    per_element: bool


def grouped_kernels(program: GroupProgram, grouping: Grouping, sig: str, call: str, head: str,
                    few_groups: bool = False) -> list[tuple[str, list[str], str]]:  # fmt: skip
    """Thread-per-group, block-per-group and warp-per-group sources of ``program`` (with ``head`` first).

    ``few_groups`` (a handful of large groups at the perf sizes: BatchNorm's channels, a loss over
    everything) puts block-per-group first, so the task's baseline (its first implementation) is not a
    few GPU threads walking millions of elements each.
    """
    def load(j: str) -> str:
        return program.load.replace("$o", grouping.at(j)).replace("$j", j)

    serial, block, warp = [], [], []
    for p, after in program.passes:
        ident, _ = COMBINE[p.op]
        body = f"{{ {load('j')} {p.var} = combine_{p.op}({p.var}, {p.elem}); }}"
        serial.append(f"  float {p.var} = {ident};\n  for (long long j = 0; j < n; ++j) {body}\n  {after}\n")
        strided = f"  float {p.var} = {ident};\n  for (long long j = LANE; j < n; j += STEP) {body}\n"
        block.append(strided.replace("LANE", "threadIdx.x").replace("STEP", "blockDim.x")
                     + f"  {p.var} = block_{p.op}({p.var}, shared);\n  {after}\n")  # fmt: skip
        warp.append(strided.replace("LANE", "lane").replace("STEP", "32")
                    + f"  {p.var} = warp_{p.op}({p.var});\n  {after}\n")

    def write(first: str, step: str, only: str) -> str:
        if not program.per_element:
            return f"  {only}y[{grouping.out_at}] = {program.out};\n"
        return (f"  for (long long j = {first}; j < n; j += {step}) {{ {load('j')} "
                f"y[{grouping.at('j')}] = {program.out}; }}\n")

    combines = "".join(f"__device__ __forceinline__ float combine_{op}(float a, float b) {{ return {c}; }}\n"
                       for op, (_, c) in COMBINE.items())  # fmt: skip
    head = f"{head}{combines}"
    groups, size = grouping.groups, grouping.size
    thread = (f"{head}\n__global__ void group_kernel({sig}) {{\n  long long g = (long long)blockIdx.x * blockDim.x"
              f" + threadIdx.x;\n  if (g >= (long long)({groups})) return;\n  long long n = {size};\n"
              f"{''.join(serial)}{write('0', '1', '')}}}\n\n"
              f"extern \"C\" void forward({sig}) {{\n  long long groups = {groups};\n"
              f"  group_kernel<<<(unsigned)((groups + 127) / 128), 128>>>({call});\n}}\n")
    blocked = (f"{head}{BLOCK_REDUCE}\n__global__ void group_kernel({sig}) {{\n  __shared__ float shared[256];\n"
               f"  long long g = blockIdx.x;\n  long long n = {size};\n{''.join(block)}"
               f"{write('threadIdx.x', 'blockDim.x', 'if (threadIdx.x == 0) ')}}}\n\n"
               f"extern \"C\" void forward({sig}) {{\n  group_kernel<<<(unsigned)({groups}), 256>>>({call});\n}}\n")
    warped = (f"{head}{WARP_REDUCE}\n__global__ void group_kernel({sig}) {{\n  int lane = threadIdx.x & 31;\n"
              f"  long long g = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);\n"
              f"  if (g >= (long long)({groups})) return;  // whole warps leave together: shuffles stay full-warp\n"
              f"  long long n = {size};\n{''.join(warp)}{write('lane', '32', 'if (lane == 0) ')}}}\n\n"
              f"extern \"C\" void forward({sig}) {{\n  long long groups = {groups};\n"
              f"  group_kernel<<<(unsigned)((groups + 7) / 8), 256>>>({call});\n}}\n")
    kernels = [("thread_per_group", ["thread-per-group"], thread),
               ("block_per_group", ["block-per-group", "shared-memory", "tree-reduction"], blocked),
               ("warp_per_group", ["warp-per-group", "warp-shuffle"], warped)]
    return [kernels[1], kernels[0], kernels[2]] if few_groups else kernels


def signature(inputs: Sequence[str], sizes: Sequence[str], ints: Sequence[str] = ()) -> tuple[str, str]:
    """The entry's parameter list and the kernel call's argument list (float inputs, int inputs, y, sizes)."""
    sig = ", ".join([*(f"const float* {n}" for n in inputs), *(f"const int* {n}" for n in ints), "float* y",
                     *(f"int {s}" for s in sizes)])  # fmt: skip
    return sig, ", ".join([*inputs, *ints, "y", *sizes])
