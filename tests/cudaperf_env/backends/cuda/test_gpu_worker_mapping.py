"""The GPU worker maps the read-only timing input sets without copying them (``gpu_worker.ReadOnlyMapping``).

A private writable mapping of them, as the worker made before, copies every page when it is
populated (and again when page-locked): 0.2 -> 0.79 s of a saxpy timing's upload on an H100
(driver 580.159.04, 2026-12-07).
Measured here through ``/proc/self/smaps``: a mapping's anonymous memory is its copied pages.
"""

import ctypes
import mmap
import os
import sys
from pathlib import Path

import pytest

from cudaperf_env.backends.cuda import gpu_worker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
SIZE = 8 << 20


def copied_kib(address: int) -> int:
    """Anonymous (copied) KiB of the mapping that starts at ``address``."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split("-")[0] == f"{address:x}")
    return next(int(line.split()[1]) for line in lines[start + 1 :] if line.startswith("Anonymous:"))


@pytest.fixture
def input_set(tmp_path):
    data = os.urandom(1 << 20) * (SIZE >> 20)
    path = tmp_path / "set.bin"
    path.write_bytes(data)
    path.chmod(0o444)  # as the worker is shown the timing input sets
    return path, data


def test_a_read_only_input_set_is_read_through_a_shared_mapping_that_copies_nothing(input_set):
    path, data = input_set
    mapped = gpu_worker.ReadOnlyMapping(str(path), SIZE)
    assert ctypes.string_at(mapped.address, SIZE) == data
    assert copied_kib(mapped.address) == 0


def test_the_probe_sees_the_copies_of_a_private_writable_mapping(input_set):
    path, _ = input_set  # the worker's mapping before: every page copied once populated
    fd = os.open(path, os.O_RDONLY)
    private = mmap.mmap(fd, SIZE, mmap.MAP_PRIVATE | mmap.MAP_POPULATE, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    address = ctypes.addressof(ctypes.c_char.from_buffer(private))
    assert copied_kib(address) >= SIZE >> 10
    del address
    private.close()
