"""What a built library imports from the system: the symbol check behind the screen.

The screen reads tokens, so a name it does not list, or one it cannot see, passes it.
The dynamic linker cannot be fooled that way: every function a library calls in libc
is an undefined symbol in its dynamic symbol table (:func:`undefined_symbols`, read
here in pure Python, every offset bounds-checked: the file came from untrusted
source). :func:`refused` names those that are neither on the allowlist (math, memory
and string functions, formatted output, the C++ runtime's allocation, exception and
guard support) nor imported by the backend's own runtime (``baseline``: what the same
build of a trivial submission imports). Whatever the spelling in the source (macros,
splices, digraphs, ``(open)(...)``, a function pointer, a name the screen does not
list), a call into the system that is not allowed is found.
"""

from __future__ import annotations

import glob
import re
import struct
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

ALLOWED = frozenset(
    {
        # memory and strings
        "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
        "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp",
        "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strtol", "strtoul",
        "strtoll", "strtoull", "strtof", "strtod", "atoi", "atol", "atof", "qsort", "bsearch", "abs",
        "labs", "llabs", "div", "ldiv", "rand", "srand", "rand_r",
        # formatted output to the worker's own stdout/stderr
        "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf",
        "puts", "putchar", "fputs", "fputc", "putc", "fwrite", "fflush", "stdout", "stderr", "sscanf",
        "__isoc99_sscanf", "__isoc23_sscanf", "__isoc23_strtol", "__isoc23_strtoul", "__isoc23_strtoll",
        "__isoc23_strtoull", "perror", "strerror",
        # fortified variants the compiler substitutes
        "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vfprintf_chk",
        "__vsnprintf_chk", "__vsprintf_chk", "__memcpy_chk", "__memmove_chk", "__memset_chk",
        "__strcpy_chk", "__strncpy_chk", "__strcat_chk", "__stack_chk_fail", "__assert_fail",
        "__errno_location", "__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc",
        # time (read only)
        "clock", "clock_gettime", "gettimeofday", "time",
        # the C++ runtime: allocation, exceptions, statics, RTTI; start files
        "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_begin_catch",
        "__cxa_end_catch", "__cxa_rethrow", "__cxa_throw", "__cxa_allocate_exception",
        "__cxa_free_exception", "__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_bad_cast",
        "__cxa_bad_typeid", "__cxa_get_exception_ptr", "__cxa_call_terminate", "__gxx_personality_v0",
        "_Unwind_Resume", "__tls_get_addr", "__dso_handle", "_ZSt9terminatev", "__cxa_finalize",
        "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__", "__dynamic_cast",
        # the linker's own table, which a position-independent unit names to reach its globals (seen on
        # the H200's host compiler for a file-scope host array whose address is taken, 2026-12-02)
        "_GLOBAL_OFFSET_TABLE_",
    }
)  # fmt: skip
# Mangled C++ names allowed by prefix: operator new/delete and the standard library (strings,
# streams to stdout, containers, exceptions), except the parts that reach the system.
ALLOWED_PREFIXES = ("_Znw", "_Zna", "_Zdl", "_Zda", "_ZNSt", "_ZNKSt", "_ZSt", "_ZNSo", "_ZNKSo", "_ZNSi",
                    "_ZTV", "_ZTI", "_ZTS", "_ZNSs", "_ZNKSs", "_ZNSa", "__atomic_", "__sync_")  # fmt: skip
REFUSED_PATTERN = re.compile(r"thread|filesystem|fstream|basic_filebuf|random_device|_ZNSt6chrono|system")
_SHT_DYNSYM = 11


class UnreadableLibrary(ValueError):
    """The library's ELF structure is not what a linker writes."""


def undefined_symbols(library: Path) -> frozenset[str]:
    """Names of the undefined symbols in ``library``'s dynamic symbol table (its imports).

    Raises:
        UnreadableLibrary: Not a little-endian ELF64 file, or an offset points outside it.
    """
    return frozenset(name for name, defined in _dynamic_symbols(library.read_bytes()) if not defined)


def defined_symbols(library: Path) -> frozenset[str]:
    """Names ``library`` defines (exports) in its dynamic symbol table."""
    return frozenset(name for name, defined in _dynamic_symbols(library.read_bytes()) if defined)


def _dynamic_symbols(data: bytes) -> list[tuple[str, bool]]:
    """``(name, defined)`` of every named dynamic symbol (pure; bounds-checked)."""
    try:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise UnreadableLibrary("not a little-endian ELF64 file")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        if shentsize < 64 or shnum > 4096:
            raise UnreadableLibrary("implausible section table")
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
        out: list[tuple[str, bool]] = []
        for _, kind, _, _, offset, size, link, _, _, entsize in sections:
            if kind != _SHT_DYNSYM or not entsize or link >= len(sections):
                continue
            str_offset, str_size = sections[link][4], sections[link][5]
            strings = data[str_offset : str_offset + str_size]
            for at in range(offset, offset + size - entsize + 1, entsize):
                name_at, _, _, shndx = struct.unpack_from("<IBBH", data, at)
                end = strings.find(b"\0", name_at)
                if name_at and end > name_at:
                    out.append((strings[name_at:end].decode("ascii", "replace"), shndx != 0))
        return out
    except (struct.error, IndexError) as exc:
        raise UnreadableLibrary(f"truncated or malformed ELF: {exc}") from None


# Libraries whose every export is allowed: the math library and the compiler's own runtime
# (libgcc's integer and float helpers such as __popcountdi2, libatomic's wide atomics).
ALLOWED_LIBRARIES = ("libm.so.6", "libgcc_s.so.1", "libatomic.so.1")


@lru_cache(maxsize=1)
def math_library_exports() -> frozenset[str]:
    """Every function the math library and the compiler runtime libraries export (all allowed)."""
    names: set[str] = set()
    for library in ALLOWED_LIBRARIES:
        for folder in ("/lib/*", "/usr/lib/*", "/lib64", "/usr/lib64", "/usr/lib/gcc/*/*"):
            for path in glob.glob(f"{folder}/{library}"):
                try:
                    names |= defined_symbols(Path(path))
                except (OSError, UnreadableLibrary):
                    continue
    return frozenset(names)


def refused(undefined: Iterable[str], baseline: Iterable[str] = ()) -> list[str]:
    """The imports a submission may not have (pure but for the math library's export list), sorted.

    Args:
        undefined: The library's undefined dynamic symbols.
        baseline: What the backend's own runtime imports (the same build of a trivial submission).
    """
    allowed = ALLOWED | frozenset(baseline) | math_library_exports()
    return sorted(
        name for name in set(undefined)
        if name not in allowed and not (name.startswith(ALLOWED_PREFIXES) and not REFUSED_PATTERN.search(name))
    )  # fmt: skip


def explain(bad: list[str]) -> str:
    """The message for a refused build ("" when nothing is refused)."""
    if not bad:
        return ""
    shown = ", ".join(f"`{name}`" for name in bad[:6]) + (" ..." if len(bad) > 6 else "")
    return (f"the compiled code calls {shown} from the system libraries, which a submission may not use "
            "(processes, files, signals, threads, the environment): compute only with your kernels and the "
            "C/C++ math, memory and printing functions")  # fmt: skip
