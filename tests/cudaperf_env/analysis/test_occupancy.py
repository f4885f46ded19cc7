"""Theoretical occupancy, checked by hand against the CUDA occupancy calculator's rules.

sm_90: 65536 registers per SM in 4 sub-partitions, allocated per warp in units
of 256; 2048 threads (64 warps) and 32 blocks per SM; 228 KiB shared memory
per SM, 48 KiB per block (227 KiB opted in), 1 KiB reserved per block,
allocated in 128-byte units.
"""

from __future__ import annotations

import pytest

from cudaperf_env.analysis.occupancy import ARCHS, arch_limits, occupancy

KIB = 1024


@pytest.mark.parametrize(
    ("threads", "registers", "blocks", "percent", "limiter"),
    [
        (256, 32, 8, 100.0, "warps"),  # 1024 regs/warp: 16 warps per sub-partition, 64 per SM
        (256, 64, 4, 50.0, "registers"),  # 2048/warp: 8 per sub-partition -> 32 warps -> 4 blocks
        (256, 96, 2, 25.0, "registers"),  # 3072/warp: 5 per sub-partition -> 20 warps -> 2 blocks of 8
        (128, 40, 12, 75.0, "registers"),  # 1280/warp: 12 per sub-partition -> 48 warps
        (128, 33, 12, 75.0, "registers"),  # 33 * 32 = 1056 rounds up to 1280, like 40
        (32, 80, 24, 37.5, "registers"),  # 2560/warp: 6 per sub-partition (not 65536/2560 = 25)
        (1024, 64, 1, 50.0, "registers"),  # exactly the 64K per-block register file
        (1024, 32, 2, 100.0, "warps"),
        (96, 16, 21, 98.4375, "warps"),  # 3 warps per block: 64 // 3 = 21 blocks
        (32, 16, 32, 50.0, "blocks"),  # 32 resident blocks of one warp
    ],
)
def test_register_warp_and_block_limits_on_sm90(threads, registers, blocks, percent, limiter):
    occ = occupancy(threads, registers, arch="sm_90")
    assert (occ.blocks, occ.limiter) == (blocks, limiter)
    assert occ.occupancy * 100 == pytest.approx(percent)
    assert occ.warps == blocks * -(-threads // 32)


def test_a_block_over_the_register_file_cannot_launch():
    occ = occupancy(1024, 65, arch="sm_90")  # 65 * 32 -> 2304 per warp, x 32 warps > 65536
    assert (occ.blocks, occ.occupancy, occ.limiter) == (0, 0.0, "registers")


@pytest.mark.parametrize(
    ("threads", "static", "dynamic", "blocks", "limiter"),
    [
        (256, 48 * KIB, 0, 4, "shared_memory"),  # (48 + 1) KiB per block: 228 // 49 = 4
        (32, 7 * KIB, 0, 28, "shared_memory"),  # 8 KiB with the reserve: 28 blocks, not 32
        (128, 0, 100 * KIB, 2, "shared_memory"),  # dynamic, opted in past 48 KiB
        (128, 0, 227 * KIB, 1, "shared_memory"),  # the opt-in maximum: 227 + 1 = 228 KiB
        (128, 0, 227 * KIB + 1, 0, "shared_memory"),  # one byte more does not launch
        (128, 1, 0, 16, "warps"),  # 1 byte -> 1152 bytes allocated: not limiting
    ],
)
def test_shared_memory_limit_includes_the_reserved_kilobyte(threads, static, dynamic, blocks, limiter):
    occ = occupancy(threads, 16, static, dynamic, arch="sm_90")
    assert (occ.blocks, occ.limiter) == (blocks, limiter)


def test_shared_memory_is_allocated_in_128_byte_units():
    assert occupancy(64, 16, 1000).smem_per_block == 2048  # 1000 + 1024 -> 2048
    assert occupancy(64, 16, 1025).smem_per_block == 2176


def test_barriers_launch_bounds_and_block_size_limits():
    barriers = occupancy(128, 16, barriers=8, arch="sm_90")  # 2 * 32 / 8 = 8 blocks
    assert (barriers.blocks, barriers.limiter) == (8, "barriers")
    assert occupancy(128, 16, barriers=1).blocks == 16  # not limiting with one barrier
    assert occupancy(512, 16, max_threads=256).blocks == 0
    assert occupancy(512, 16, max_threads=256).limiter == "launch"
    assert occupancy(1025, 16).blocks == 0


def test_other_architectures():
    # sm_80: 164 KiB per SM
    assert occupancy(128, 16, 0, 100 * KIB, arch="sm_80").blocks == 1
    assert occupancy(128, 16, 0, 163 * KIB, arch="sm_80").blocks == 1
    assert occupancy(128, 16, 0, 164 * KIB, arch="sm_80").blocks == 0
    # sm_86 / sm_89: 1536 threads (48 warps) per SM; 16 and 24 resident blocks
    assert occupancy(256, 32, arch="sm_86").blocks == 6 and occupancy(256, 32, arch="sm_86").occupancy == 1.0
    assert occupancy(32, 16, arch="sm_86").blocks == 16
    assert occupancy(32, 16, arch="sm_89").blocks == 24 and occupancy(32, 16, arch="sm_89").occupancy == 0.5
    assert arch_limits("sm_90a") is ARCHS["sm_90"] and arch_limits("90") is ARCHS["sm_90"]


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="no occupancy table for 'sm_75'"):
        occupancy(128, 16, arch="sm_75")
    with pytest.raises(ValueError, match="threads must be positive"):
        occupancy(0, 16)
