"""Theoretical occupancy: the CUDA occupancy calculation as pure functions.

A port of the rules in the CUDA toolkit's ``cuda_occupancy.h`` (the header
behind ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``) for the default
cache configuration, no partitioned global caching and no clusters:

- **warps**: ``floor(max_warps_per_sm / ceil(threads / 32))``;
- **blocks**: the architecture's resident-block limit (32 on sm_90);
- **registers**: registers are allocated per warp, ``ceil(regs * 32 / 256) * 256``,
  inside each of the 4 SM sub-partitions: ``floor(regs_per_sm / 4 / per_warp) * 4``
  warps fit, ``floor`` of that over the block's warps blocks; a block whose
  warps, rounded up to a multiple of 4, exceed the per-block register file does
  not launch;
- **shared memory**: ``static + dynamic + 1 KiB`` reserved per block (sm_80+),
  rounded up to 128 bytes, into the SM's shared memory (228 KiB on sm_90); a
  block over the per-block limit (48 KiB, or the opt-in maximum, 227 KiB on
  sm_90, when it needs more) does not launch;
- **barriers** (sm_90+): ``2 * block_limit / barriers_used``.

The result is the minimum. ``occupancy = active warps / max warps per SM``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

KIB = 1024
# Order in which a tie names the limiting factor (the hint names one cause).
FACTORS = ("launch", "registers", "shared_memory", "barriers", "blocks", "warps")


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM and per-block resources of one architecture (values of ``cudaDeviceProp``).

    Attributes:
        name: ``sm_XY``.
        max_threads_per_sm: ``maxThreadsPerMultiProcessor``.
        max_blocks_per_sm: Resident blocks per SM.
        smem_per_sm: ``sharedMemPerMultiprocessor`` in bytes.
        smem_per_block_optin: ``sharedMemPerBlockOptin`` in bytes.
        smem_carveouts_kib: Shared-memory carveout sizes the SM can be configured to.
        barrier_factor: Block barriers available per resident-block slot (0: no limit modelled).
        warp_size: Threads per warp.
        max_threads_per_block: ``maxThreadsPerBlock``.
        regs_per_sm: ``regsPerMultiprocessor``.
        regs_per_block: ``regsPerBlock``.
        reg_alloc_unit: Register allocation granularity per warp.
        max_regs_per_thread: Register limit per thread used by the calculation.
        sub_partitions: SM sub-partitions (register files).
        smem_per_block: ``sharedMemPerBlock`` (the limit without opting in), bytes.
        smem_reserved_per_block: ``reservedSharedMemPerBlock``, bytes.
        smem_alloc_unit: Shared-memory allocation granularity, bytes.
    """

    name: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int
    smem_per_block_optin: int
    smem_carveouts_kib: tuple[int, ...]
    barrier_factor: int = 0
    warp_size: int = 32
    max_threads_per_block: int = 1024
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    reg_alloc_unit: int = 256
    max_regs_per_thread: int = 256
    sub_partitions: int = 4
    smem_per_block: int = 48 * KIB
    smem_reserved_per_block: int = 1 * KIB
    smem_alloc_unit: int = 128

    def __post_init__(self) -> None:
        if self.max_threads_per_sm % self.warp_size or self.smem_per_sm <= 0 or self.max_blocks_per_sm <= 0:
            raise ValueError(f"{self.name}: inconsistent limits")

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


_AMPERE_CARVEOUTS = (0, 8, 16, 32, 64, 100)
ARCHS: Mapping[str, ArchLimits] = MappingProxyType({
    "sm_80": ArchLimits("sm_80", 2048, 32, 164 * KIB, 163 * KIB, (*_AMPERE_CARVEOUTS, 132, 164)),
    "sm_86": ArchLimits("sm_86", 1536, 16, 100 * KIB, 99 * KIB, _AMPERE_CARVEOUTS),
    "sm_89": ArchLimits("sm_89", 1536, 24, 100 * KIB, 99 * KIB, _AMPERE_CARVEOUTS),
    "sm_90": ArchLimits("sm_90", 2048, 32, 228 * KIB, 227 * KIB, (*_AMPERE_CARVEOUTS, 132, 164, 196, 228), 2),
})


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one kernel and launch configuration.

    Attributes:
        blocks: Resident blocks per SM (0: the block cannot launch).
        warps: Resident warps per SM.
        occupancy: ``warps / max warps per SM``, in [0, 1].
        limiter: The factor that sets ``blocks`` (see ``FACTORS``).
        limits: Blocks per SM allowed by each factor.
        registers: Registers per thread used in the calculation.
        smem_per_block: Shared memory allocated per block, bytes (reserved part included).
    """

    blocks: int
    warps: int
    occupancy: float
    limiter: str
    limits: Mapping[str, int] = field(default_factory=dict)
    registers: int = 0
    smem_per_block: int = 0


def arch_limits(arch: str) -> ArchLimits:
    """The limits of ``arch`` (``sm_90``, ``sm_80``, ``sm_86``, ``sm_89``; ``sm_90a`` reads as ``sm_90``)."""
    key = arch.lower().removeprefix("compute_").rstrip("af")
    key = key if key.startswith("sm_") else f"sm_{key}"
    if key not in ARCHS:
        raise ValueError(f"no occupancy table for {arch!r}; known: {', '.join(ARCHS)}")
    return ARCHS[key]


def round_up(value: int, unit: int) -> int:
    """``value`` rounded up to a multiple of ``unit``."""
    return -(-value // unit) * unit


def warps_per_block(threads: int, limits: ArchLimits) -> int:
    """Warps a block of ``threads`` occupies."""
    return -(-threads // limits.warp_size)


def register_limit(threads: int, registers: int, limits: ArchLimits) -> int:
    """Blocks per SM allowed by the register file."""
    warps = warps_per_block(threads, limits)
    per_warp = round_up(registers * limits.warp_size, limits.reg_alloc_unit)
    if per_warp == 0:
        return 1 << 30
    assumed = per_warp * round_up(warps, limits.sub_partitions)  # the hardware's per-block check
    too_many = registers > limits.max_regs_per_thread or per_warp * warps > limits.regs_per_block
    if too_many or assumed > limits.regs_per_block:
        return 0
    warps_per_partition = limits.regs_per_sm // limits.sub_partitions // per_warp
    return warps_per_partition * limits.sub_partitions // warps


def smem_per_block(static_bytes: int, dynamic_bytes: int, limits: ArchLimits) -> int:
    """Shared memory allocated to one block: used + reserved, rounded up to the granularity."""
    return round_up(static_bytes + dynamic_bytes + limits.smem_reserved_per_block, limits.smem_alloc_unit)


def shared_memory_limit(static_bytes: int, dynamic_bytes: int, limits: ArchLimits) -> int:
    """Blocks per SM allowed by shared memory (the block opts in to the large limit when it needs it)."""
    allocated = smem_per_block(static_bytes, dynamic_bytes, limits)
    needs_optin = static_bytes + dynamic_bytes > limits.smem_per_block
    per_block = (limits.smem_per_block_optin if needs_optin else limits.smem_per_block) + limits.smem_reserved_per_block
    if allocated > per_block:
        return 0
    per_sm = limits.smem_per_sm
    if allocated > per_sm:  # cannot happen within the per-block limit; kept for custom tables
        return 0
    return per_sm // allocated


def occupancy(
    threads: int,
    registers: int,
    static_smem: int = 0,
    dynamic_smem: int = 0,
    barriers: int = 0,
    arch: str = "sm_90",
    max_threads: int | None = None,
) -> Occupancy:
    """Theoretical occupancy of a kernel launch.

    Args:
        threads: Threads per block.
        registers: Registers per thread (ptxas ``Used N registers``).
        static_smem: Static shared memory per block, bytes (ptxas ``N bytes smem``).
        dynamic_smem: Dynamic shared memory per block at launch, bytes.
        barriers: Named barriers the kernel uses (ptxas ``used N barriers``).
        arch: Target architecture.
        max_threads: The kernel's ``__launch_bounds__`` maximum, if any.

    Returns:
        The occupancy; ``blocks == 0`` (limiter ``launch``) when the block cannot launch.

    Raises:
        ValueError: For a non-positive block size, negative resources or an unknown arch.
    """
    if threads <= 0 or registers < 0 or static_smem < 0 or dynamic_smem < 0 or barriers < 0:
        raise ValueError(
            f"threads must be positive and resources non-negative, got threads={threads}, "
            f"registers={registers}, static_smem={static_smem}, dynamic_smem={dynamic_smem}, barriers={barriers}"
        )
    limits = arch_limits(arch)
    warps = warps_per_block(threads, limits)
    too_big = threads > limits.max_threads_per_block or (max_threads is not None and threads > max_threads)
    by_factor = {
        "launch": 0 if too_big else 1 << 30,
        "registers": register_limit(threads, registers, limits),
        "shared_memory": shared_memory_limit(static_smem, dynamic_smem, limits),
        "blocks": limits.max_blocks_per_sm,
        "warps": limits.max_warps_per_sm // warps,
    }
    if limits.barrier_factor and barriers > 0:
        by_factor["barriers"] = limits.barrier_factor * limits.max_blocks_per_sm // barriers
    blocks = min(by_factor.values())
    limiter = next(f for f in FACTORS if by_factor.get(f) == blocks)
    if blocks == 0 and limiter != "launch":
        limiter = next(f for f in FACTORS if by_factor.get(f) == 0)
    active = blocks * warps
    if active == limits.max_warps_per_sm:
        limiter = "warps"  # full occupancy: nothing to blame
    shown = {k: v for k, v in by_factor.items() if k != "launch"}
    return Occupancy(
        blocks, active, active / limits.max_warps_per_sm, limiter, MappingProxyType(shown), registers,
        smem_per_block(static_smem, dynamic_smem, limits),
    )
