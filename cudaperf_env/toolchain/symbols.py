"""What a submission's compiled code imports: the symbol check behind the screen.

The screen reads tokens, so a name it does not list, or one it cannot see, passes
it. The linker cannot be fooled that way: asked for a cross-reference table
(:data:`LINK_FLAGS`), it names every symbol each object file uses and the library
that defines it. :func:`imports` reads that table for the submission's own object
(the runtime's object and the C runtime's start files excluded), and :func:`refused`
says which of those imports are not on the allowlist: math, memory and string
functions, formatted output, the C++ runtime's allocation, exception and guard
support. Whatever the spelling in the source (macros, splices, digraphs,
``(open)(...)``, a function pointer), a call into libc that is not allowed is found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

MAP_NAME = "link.map"


def link_flags(folder: Path) -> list[str]:
    """Flags that make the linker write its map, with the cross-reference table, into ``folder``."""
    return ["-Wl,--cref", f"-Wl,-Map={folder / MAP_NAME}"]


# Imports from shared libraries that a kernel submission may have.
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
        # the C++ runtime: allocation, exceptions, statics, RTTI
        "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort", "__cxa_begin_catch",
        "__cxa_end_catch", "__cxa_rethrow", "__cxa_throw", "__cxa_allocate_exception",
        "__cxa_free_exception", "__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_bad_cast",
        "__cxa_bad_typeid", "__cxa_get_exception_ptr", "__cxa_call_terminate", "__gxx_personality_v0",
        "_Unwind_Resume", "__tls_get_addr", "__dso_handle", "_ZSt9terminatev",
    }
)  # fmt: skip
# Mangled C++ names allowed by prefix: operator new/delete and the standard library (strings,
# streams to stdout, containers, exceptions); the process-level parts are refused by name below.
ALLOWED_PREFIXES = ("_Znw", "_Zna", "_Zdl", "_Zda", "_ZNSt", "_ZNKSt", "_ZSt", "_ZNSo", "_ZNKSo", "_ZNSi",
                    "_ZTV", "_ZTI", "_ZTS", "_ZNSs", "_ZNKSs", "_ZNSa", "_ZNSaIcE", "_ZNSt7__cxx11")  # fmt: skip
# Standard-library parts that reach the system: threads, files, the filesystem library.
REFUSED_PATTERN = re.compile(r"thread|filesystem|fstream|basic_filebuf|system_error|random_device|_ZNSt6chrono")
# Libraries whose every symbol is allowed (the math library).
ALLOWED_LIBRARIES = ("libm.so", "libmvec.so")
_OBJECT = re.compile(r"\.(o|obj)$")


def imports(map_text: str, own: Path) -> dict[str, str]:
    """``{symbol: library}`` for every symbol an object file under ``own`` uses that a shared library defines (pure).

    Args:
        map_text: The linker map written with :func:`link_flags`.
        own: The folder holding the submission's object (the compiler's temporary
            files go there: ``TMPDIR`` is the build folder); objects elsewhere (the
            runtime object, start files) are not the submission's.
    """
    at = map_text.find("Cross Reference Table")
    if at < 0:
        return {}
    prefix = str(own).rstrip("/") + "/"
    found: dict[str, str] = {}
    symbol, definer = "", ""
    for line in map_text[at:].splitlines()[3:]:
        if not line.strip():
            continue
        if not line[0].isspace():
            parts = line.split()
            symbol, definer = parts[0], (parts[1] if len(parts) > 1 else "")
            continue
        user = line.strip()
        if user.startswith(prefix) and _OBJECT.search(user) and ".so" in Path(definer).name:
            found.setdefault(symbol.split("@")[0], definer)
    return found


def refused(found: Mapping[str, str], extra: Iterable[str] = ()) -> list[str]:
    """The imports not on the allowlist (``extra``: further allowed names), sorted (pure)."""
    allowed = ALLOWED | frozenset(extra)
    bad = []
    for name, library in found.items():
        if any(lib in Path(library).name for lib in ALLOWED_LIBRARIES):
            continue
        if name in allowed:
            continue
        if name.startswith(ALLOWED_PREFIXES) and not REFUSED_PATTERN.search(name):
            continue
        bad.append(name)
    return sorted(bad)


def check_build(folder: Path, extra: Iterable[str] = ()) -> str:
    """Why the build in ``folder`` imports what it may not ("" when it is clean, or no map was written)."""
    path = folder / MAP_NAME
    if not path.is_file() or path.is_symlink():
        return ""
    bad = refused(imports(path.read_text(errors="replace"), folder), extra)
    if not bad:
        return ""
    shown = ", ".join(f"`{name}`" for name in bad[:6]) + (" ..." if len(bad) > 6 else "")
    return (f"the compiled code calls {shown} from the system libraries, which a submission may not use "
            "(processes, files, signals, threads, the environment): compute only with your kernels and the "
            "C/C++ math, memory and printing functions")  # fmt: skip
