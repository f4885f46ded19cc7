"""The seccomp policy of confined processes: one description for both launchers.

Standard library only: ``confine_exec.py`` (the Python launcher, run as ``python -I -S``)
loads this file by path, and ``confine.py`` compiles its list into the C launcher
(``confine.c``, macro ``CUDAPERF_SECCOMP_DENIED``). ``tests/cudaperf_env/toolchain/
test_sandbox_confine.py`` checks that the C launcher's filter is byte for byte
:func:`program` and that the numbers are the kernel headers'.

The filter: another ABI's calls (a foreign architecture) end the process; x32 calls
(x86-64) and the calls in :data:`DENIED` answer EPERM; ``clone3`` answers ENOSYS (its
flags sit in memory the filter cannot read, so the C library falls back to ``clone``);
``clone`` with a namespace flag answers EPERM; everything else is allowed.
"""

from __future__ import annotations

import struct

# System calls no compiler, CPU runtime or CUDA driver makes, that reach past the sandbox or into
# little-hardened kernel code.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "unshare", "setns", "mount", "umount2", "pivot_root",
    "chroot", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at", "quotactl", "acct",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "vhangup", "fsopen", "fsmount",
    "move_mount", "open_tree", "iopl", "ioperm",
)  # fmt: skip
# (x86-64, arm64) numbers, from <asm/unistd_64.h> and <asm-generic/unistd.h>; None: no such call there.
NUMBERS: dict[str, tuple[int, int | None]] = {
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "unshare": (272, 97),
    "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106), "kexec_load": (246, 104),
    "kexec_file_load": (320, 294), "reboot": (169, 142), "swapon": (167, 224), "swapoff": (168, 225),
    "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264),
    "quotactl": (179, 60), "acct": (163, 89), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "clock_adjtime": (305, 266), "adjtimex": (159, 171), "syslog": (103, 116), "vhangup": (153, 58),
    "fsopen": (430, 430), "fsmount": (432, 432), "move_mount": (429, 429), "open_tree": (428, 428),
    "iopl": (172, None), "ioperm": (173, None), "clone": (56, 220), "clone3": (435, 435),
}  # fmt: skip
MACHINES = {"x86_64": 0, "aarch64": 1}  # platform.machine() -> column of NUMBERS
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
NS_FLAGS = 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000 | 0x02000000
X32_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
EPERM, ENOSYS = 1, 38
# BPF opcodes and the offsets of struct seccomp_data's fields
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16


def denied(machine: str) -> list[tuple[str, int]]:
    """``(name, number)`` of the :data:`DENIED` calls that exist on ``machine``, in order."""
    column = MACHINES[machine]
    return [(name, n) for name in DENIED if (n := NUMBERS[name][column]) is not None]


def c_macro(machine: str) -> str:
    """The C launcher's ``CUDAPERF_SECCOMP_DENIED``: ``DENY(__NR_name), ...`` of the calls on ``machine``."""
    return ", ".join(f"DENY(__NR_{name})" for name, _ in denied(machine))


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions (``struct sock_filter``) for ``machine``."""
    column = MACHINES[machine]
    out = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 1, 0, AUDIT_ARCH[machine]), (_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
           (_LD_W_ABS, 0, 0, _NR)]  # fmt: skip
    if machine == "x86_64":
        out += [(_JGE_K, 0, 1, X32_BIT), (_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)]
    clone3, clone = NUMBERS["clone3"][column], NUMBERS["clone"][column]
    assert clone3 is not None and clone is not None
    out += [(_JEQ_K, 0, 1, clone3), (_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
            (_JEQ_K, 0, 4, clone), (_LD_W_ABS, 0, 0, _ARG0), (_JSET_K, 0, 1, NS_FLAGS),
            (_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM), (_RET_K, 0, 0, SECCOMP_RET_ALLOW)]  # fmt: skip
    for _, number in denied(machine):
        out += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)]
    return [*out, (_RET_K, 0, 0, SECCOMP_RET_ALLOW)]


def program_bytes(machine: str) -> bytes:
    """:func:`program` as the kernel reads it (native byte order)."""
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program(machine))
