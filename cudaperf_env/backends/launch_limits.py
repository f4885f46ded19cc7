"""Launch limits of the target GPU, and the kernel resources file that hands ptxas's numbers to the CPU runtime.

A GPU refuses a launch whose block needs more registers than the SM has
(``cudaErrorLaunchOutOfResources``) or more than 48 KiB of dynamic shared memory
without ``cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, n)``
(``cudaErrorInvalidValue``). The CPU runtime enforces the same rules: before a
run, the evaluator writes :data:`RESOURCES_FILE` into the worker's directory (its
current directory) with the target's limits and each kernel's registers and
static shared memory as ptxas reported them in the compile check; the runtime
reads it when the library is configured (``include/cudaperf/launch_limits.h``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cudaperf_env.toolchain.compile_check import KernelResources

RESOURCES_FILE = "cudaperf_kernels.txt"


@dataclass(frozen=True)
class ArchLimits:
    """Per-block limits of one architecture (CUDA programming guide, compute capabilities table).

    Attributes:
        shared_optin: Largest static + dynamic shared memory per block with the opt-in (bytes).
        registers_per_block: 32-bit registers one block may use.
    """

    shared_optin: int
    registers_per_block: int = 65536


ARCH_LIMITS: dict[str, ArchLimits] = {
    "sm_70": ArchLimits(98304),
    "sm_75": ArchLimits(65536),
    "sm_80": ArchLimits(166912),
    "sm_86": ArchLimits(101376),
    "sm_87": ArchLimits(166912),
    "sm_89": ArchLimits(101376),
    "sm_90": ArchLimits(232448),
    "sm_100": ArchLimits(232448),
    "sm_120": ArchLimits(101376),
}


def arch_limits(arch: str) -> ArchLimits:
    """Limits of ``arch`` (``sm_90``, ``sm_90a``, ``compute_90``); Hopper's where the arch is unknown."""
    match = re.search(r"(\d+)", arch)
    key = f"sm_{match.group(1)}" if match else arch
    return ARCH_LIMITS.get(key, ARCH_LIMITS["sm_90"])


def base_name(demangled: str) -> str:
    """``void ns::k<float, 256>(float*, int)`` -> ``k``: how the runtime keys kernels."""
    depth, out = 0, list[str]()
    for ch in demangled.strip():
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            if ch == "(" and out:
                break
            out.append(ch)
    name = "".join(out).split()[-1] if "".join(out).split() else ""
    return name.rsplit("::", 1)[-1]


def resources_text(kernels: Sequence[KernelResources], arch: str, schedule: int = 0, racecheck: bool = False) -> str:
    """The resources file's contents: the arch line, the schedule seed, then ``<registers> <static_shared> <name>``.

    Args:
        kernels: What ptxas reported.
        arch: The target architecture.
        schedule: Seed of the block and thread order (0: CUDA's natural order).
        racecheck: Turn on the race detector of a race-check build (one worker thread).
    """
    limits = arch_limits(arch)
    lines = [f"arch {arch} {limits.shared_optin} {limits.registers_per_block}"]
    if schedule:
        lines.append(f"schedule {int(schedule)}")
    if racecheck:
        lines.append("racecheck 1")
    for k in kernels:
        name = base_name(k.name)
        if name and "\n" not in name:
            lines.append(f"{int(k.registers)} {int(k.shared_bytes)} {name}")
    return "\n".join(lines) + "\n"


def write_resources(
    workdir: Path, kernels: Sequence[KernelResources], arch: str, schedule: int = 0, racecheck: bool = False
) -> Path:
    """Write :data:`RESOURCES_FILE` into ``workdir`` (readable by the worker's user) and return its path."""
    path = Path(workdir) / RESOURCES_FILE
    path.write_text(resources_text(kernels, arch, schedule, racecheck), encoding="utf-8")
    path.chmod(0o644)
    return path
