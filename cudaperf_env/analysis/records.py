"""What the static analysis records while it walks a kernel: accesses, barriers, loops, arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudaperf_env.analysis.values import INDIRECT, LINEAR, UNIFORM, Value

# Verdicts of a global-memory access (the ``coalescing`` feature counts them).
COALESCED, STRIDED, BROADCAST, GATHER, UNCLEAR = "coalesced", "strided", "uniform", "indirect", "unknown"


@dataclass(frozen=True)
class Pointer:
    """Where a pointer points.

    Attributes:
        base: The array it points into: a kernel parameter or a shared/local array.
        space: ``global``, ``shared``, ``local`` (a per-thread array) or ``unknown``.
        offset: Offset from the base, in elements of this pointer's type.
        elem_bytes: Size of one element of this pointer's type.
        fp: Elements are floating-point.
        vector: Elements are a CUDA vector type of 8 bytes or more (``float4``, ``double2``...).
    """

    base: str
    space: str
    offset: Value
    elem_bytes: int
    fp: bool
    vector: bool


@dataclass(frozen=True)
class Access:
    """One memory access in the source (one site; a loop does not multiply it).

    Attributes:
        kernel: The kernel it was reached from.
        array: Name of the accessed array (its base).
        space: ``global`` or ``shared``.
        op: ``load``, ``store`` or ``atomic``.
        index: How the element index varies across the lanes of a warp.
        elem_bytes: Bytes per accessed element.
        vector: A vector-type access (``float4`` and the like).
        line: Source line.
        loop_depth: Number of enclosing loops.
        guarded: Under a condition that lets one lane (or a few) of a warp through (``if (lane == 0)``).
    """

    kernel: str
    array: str
    space: str
    op: str
    index: Value
    elem_bytes: int
    vector: bool
    line: int
    loop_depth: int
    guarded: bool

    @property
    def verdict(self) -> str:
        """``coalesced``, ``strided``, ``uniform`` (one address per warp), ``indirect`` or ``unknown``."""
        kind = self.index.kind
        if kind == UNIFORM:
            return BROADCAST
        if kind == LINEAR:
            return COALESCED if self.index.stride in (1, -1) else STRIDED
        return GATHER if kind == INDIRECT else UNCLEAR

    @property
    def bank_ways(self) -> int:
        """Shared-memory bank conflict degree of the access (1: none; 0: unknown)."""
        stride = self.index.stride
        if self.index.kind == UNIFORM:
            return 1
        if self.index.kind != LINEAR or not isinstance(stride, int):
            return 0
        words_per_elem = max(1, self.elem_bytes // 4)
        return max(1, _gcd(abs(stride) * words_per_elem, 32) // words_per_elem)


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@dataclass(frozen=True)
class Barrier:
    """A block-wide barrier (``__syncthreads`` and equivalents).

    Attributes:
        kernel: The kernel it was reached from.
        line: Source line.
        divergent: Inside a branch or loop whose condition differs between threads.
        in_loop: Inside a loop.
    """

    kernel: str
    line: int
    divergent: bool
    in_loop: bool


@dataclass(frozen=True)
class Loop:
    """A loop.

    Attributes:
        kernel: The kernel it was reached from.
        line: Source line of the loop.
        depth: Nesting depth (1: outermost).
        unrolled: Preceded by ``#pragma unroll``.
        grid_stride: Starts at a per-thread index and steps by a multiple of ``gridDim``.
        tree_reduction: Halves or doubles its variable, with a barrier and shared
            memory in the body (one barrier per reduction step), and is not part
            of a nest of such loops (a sorting network).
    """

    kernel: str
    line: int
    depth: int
    unrolled: bool
    grid_stride: bool
    tree_reduction: bool


@dataclass(frozen=True)
class SharedArray:
    """A ``__shared__`` declaration.

    Attributes:
        kernel: The function it was declared in.
        name: Its name.
        dims: Dimensions, outermost first (None: unsized or not constant).
        elem_bytes: Bytes per element.
        dynamic: ``extern __shared__`` (sized at launch).
        line: Source line.
    """

    kernel: str
    name: str
    dims: tuple[int | None, ...]
    elem_bytes: int
    dynamic: bool
    line: int

    @property
    def padded(self) -> bool:
        """A 2-D or deeper array whose rows have an odd length (``[32][33]``): padded against conflicts."""
        last = self.dims[-1] if self.dims else None
        return len(self.dims) >= 2 and last is not None and last % 2 == 1

    @property
    def bytes(self) -> int | None:
        """Static size in bytes, when every dimension is a constant."""
        if self.dynamic or not self.dims or None in self.dims:
            return None
        size = self.elem_bytes
        for d in self.dims:
            size *= d or 0
        return size


@dataclass
class Record:
    """Mutable accumulator of one walk (internal to the analysis)."""

    accesses: list[Access] = field(default_factory=list)
    barriers: list[Barrier] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    shared: list[SharedArray] = field(default_factory=list)
    warp_ops: list[tuple[str, int, str]] = field(default_factory=list)
    warp_syncs: int = 0
    flops: float = 0.0
    int_divs: float = 0.0  # integer / and % by a divisor not known at compile time, loop-weighted
    global_bytes: float = 0.0
    truncated: bool = False  # nesting deeper than the walk follows: counts are partial
