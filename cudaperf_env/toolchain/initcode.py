"""Code that runs when a library is loaded: found in the compiled object of the submission's unit.

A global constructor (``__attribute__((constructor))``, ``static int x = f();`` at namespace
scope, a global object with a constructor, an ``.init_array`` or ``.ctors`` entry made by a
``section`` attribute or by assembly) runs when the worker loads the library, before the harness
calls the entry. The screen refuses the spellings it knows; this check reads what the compiler
made (a relocatable ELF64 object, every offset bounds-checked: it came from untrusted source):

- no ``.init``, ``.fini``, ``.preinit_array``, ``.ctors``, ``.dtors`` or ``.fini_array`` section
  (by name or by type): the compiler makes none for C++ code;
- no indirect function (``__attribute__((ifunc))``, ``target_clones``): its resolver runs while the
  dynamic linker relocates the library;
- every ``.init_array`` entry is a relocation to the compiler's own initialiser of the unit
  (``_GLOBAL__sub_I_<file>``, a name no identifier can spell);
- that initialiser (with all the code in its section and its cold part) references only what
  the runtime's headers make it reference (the standard streams' initialiser, the runtime's
  names, read-only constants) and the ``__device__``
  variables the CPU pre-pass turned into references initialised at load time. Any other
  symbol (a submission's own variable or function, a system call) means submitted code runs
  at load time.

The rules were measured on the units an empty submission and one with ``__device__`` variables
make (``tests/cudaperf_env/toolchain/test_initcode.py``).

nvcc's host object (``nvcc=True``, the GPU backend) has one more initialiser, nvcc's own
``__sti____cudaRegisterAll`` (and the registration callback it may call), which registers the
fatbinary, kernels and ``__device__`` variables with the CUDA runtime. It is admitted when it calls
only the registration functions (:data:`NVCC_CALLS`), imported, not defined by the unit (a
submission's own ``atexit`` or ``__cudaRegisterFunction`` would run at load time), and otherwise
only takes addresses (the kernels' host functions, the unit's variables, nvcc's unregistering
function): an instruction that calls or jumps to code of the unit is load-time code.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cudaperf_env.toolchain.compile_check import demangle
from cudaperf_env.toolchain.symbols import UnreadableLibrary

INIT_FUNCTION_PREFIX = "_GLOBAL__sub_I_"
# Sections that run code at load or unload time; the C++ compiler makes only .init_array.
FORBIDDEN_SECTIONS = (".init", ".fini", ".preinit_array", ".ctors", ".dtors", ".fini_array")
# What the runtime headers' own initialisers reference: the standard streams (<iostream>), the
# at-exit registration of their destructor, and names in the runtime's namespace.
RUNTIME_NAMES = frozenset({"_ZStL8__ioinit", "_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__dso_handle",
                           "__cxa_atexit", "_GLOBAL_OFFSET_TABLE_"})  # fmt: skip
RUNTIME_PREFIXES = ("_ZN8cudaperf", "_ZGVN8cudaperf", "_ZZN8cudaperf", "_ZNK8cudaperf")
# nvcc's initialiser of a unit (static, in the global namespace: a second definition does not compile) and
# its registration callback; what they call (all imported from the statically linked CUDA runtime or libc).
NVCC_INITIALISERS = ("_ZL24__sti____cudaRegisterAllv", "_ZL31__nv_cudaEntityRegisterCallbackPPv")
NVCC_UNREGISTER = "_ZL26__cudaUnregisterBinaryUtilv"  # its address goes to atexit: runs at exit, after the harness
NVCC_CALLS = frozenset({"__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaRegisterFunction",
                        "__cudaRegisterVar", "__cudaRegisterManagedVar", "__cudaRegisterTexture",
                        "__cudaRegisterSurface", "__cudaRegisterLinkedBinary", "__cudaInitModule",
                        "atexit"})  # fmt: skip
MESSAGE = "global constructors run before the harness; initialise inside the entry function"
_SHT_SYMTAB, _SHT_RELA, _SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY = 2, 4, 14, 15, 16
_FORBIDDEN = [name.split(".")[:2] for name in FORBIDDEN_SECTIONS]  # ".ctors" and ".ctors.65535", not ".init_array"
_STB_LOCAL, _STT_FILE = 0, 4
_STT_FUNC, _STT_SECTION, _STT_GNU_IFUNC, _SHF_WRITE, _SHF_EXECINSTR = 2, 3, 10, 0x1, 0x4
_PC_RELATIVE = (2, 4, 9, 41, 42)  # PC32, PLT32, GOTPCREL, GOTPCRELX, REX_GOTPCRELX: addend = target - field end
_DATA_PREFIXES = (".bss.", ".data.rel.ro.local.", ".data.rel.ro.", ".data.rel.local.", ".data.rel.", ".data.",
                  ".tbss.", ".tdata.")  # fmt: skip


@dataclass(frozen=True)
class _Section:
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


@dataclass(frozen=True)
class _Symbol:
    name: str
    kind: int
    section: int
    value: int
    size: int
    bind: int = 1


def check(obj: Path, device_variables: Iterable[str] = (), nvcc: bool = False) -> str:
    """Why the compiled unit ``obj`` may not be loaded ("" when it runs no submitted code at load time);
    ``nvcc``: a host object nvcc made (its registration initialiser admitted)."""
    try:
        found = load_time_code(obj.read_bytes(), device_variables, nvcc)
    except OSError as exc:
        return f"the compiled unit cannot be checked ({exc.strerror or exc})"
    except UnreadableLibrary as exc:
        return f"the compiled unit cannot be checked ({exc})"
    if not found:
        return ""
    mangled = sorted({name for item in found[:4] for name in re.findall(r"`(_Z\w+)`", item)})
    shown = ", ".join(found[:4]) + (" ..." if len(found) > 4 else "")
    for name, plain in zip(mangled, demangle(mangled), strict=True):
        shown = shown.replace(f"`{name}`", f"`{plain}`")
    return f"{MESSAGE} (found {shown})"


def object_symbols(data: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """``(undefined, defined)`` global names of the relocatable object ``data`` (pure).

    Raises:
        UnreadableLibrary: As :func:`load_time_code`.
    """
    try:
        _, symbols = _read(data)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise UnreadableLibrary(f"truncated or malformed ELF: {exc}") from None
    named = [s for s in symbols if s.name and s.kind not in (_STT_SECTION, _STT_FILE) and s.bind != _STB_LOCAL]
    return frozenset(s.name for s in named if s.section == 0), frozenset(s.name for s in named if s.section != 0)


def load_time_code(data: bytes, device_variables: Iterable[str] = (), nvcc: bool = False) -> list[str]:
    """What in the relocatable object ``data`` runs submitted code at load time (pure; empty if nothing).

    Args:
        nvcc: ``data`` is nvcc's host object: its registration initialiser is admitted (module docstring).

    Raises:
        UnreadableLibrary: Not a little-endian ELF64 relocatable file, or an offset points outside it.
    """
    try:
        sections, symbols = _read(data)
        return _findings(data, sections, symbols, frozenset(device_variables), nvcc)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise UnreadableLibrary(f"truncated or malformed ELF: {exc}") from None


def _findings(data: bytes, sections: list[_Section], symbols: list[_Symbol], variables: frozenset[str],
              nvcc: bool = False) -> list[str]:  # fmt: skip
    found = [f"a `{s.name}` section" for s in sections
             if s.kind in (_SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY) or s.name.split(".")[:2] in _FORBIDDEN]  # fmt: skip
    # an indirect function's resolver runs while the dynamic linker relocates the library, before any constructor
    found.extend(f"the indirect function `{s.name}`" for s in symbols if s.kind == _STT_GNU_IFUNC)
    initialisers: list[_Symbol] = []
    for index, section in enumerate(sections):
        if section.kind != _SHT_INIT_ARRAY and not section.name.startswith(".init_array"):
            continue
        relocations = _relocations(data, sections, index)
        if section.size != 8 * len(relocations) or section.kind != _SHT_INIT_ARRAY:
            found.append(f"a `{section.name}` section the compiler did not make")
        for _, symbol_index, addend, _ in relocations:
            target = _function_at(symbols, symbols[symbol_index], addend)
            if target is None or not _initialiser(target, nvcc):
                what = f"the constructor `{target.name if target else symbols[symbol_index].name}`"
                found.extend([what] if what not in found else [])
            elif target not in initialisers:
                initialisers.append(target)
    # The compiler puts code run only at load time in the initialisers' section (``.text.startup``),
    # calls within it need no relocation: all of it is read, and any function there is load-time code.
    homes = {function.section for function in initialisers}
    found.extend(f"`{s.name}`" for s in symbols if s.section in homes and s.kind == _STT_FUNC
                 and not _initialiser(s, nvcc))  # fmt: skip
    if nvcc:  # the names nvcc's initialisers call, defined by the unit itself: its own code at load time
        found.extend(f"`{s.name}`" for s in symbols if s.name in NVCC_CALLS and s.section != 0)
    # Several initialisers may share a section (g++'s and nvcc's): each relocation is judged by the rules of
    # the one it lies in; the rest of an initialisers' section by g++'s (the stricter).
    owners = [s for s in symbols if s.section in homes and s.kind == _STT_FUNC and _initialiser(s, nvcc)]
    initialisers.extend(s for s in owners if s not in initialisers)
    for function in initialisers:  # grows by the initialisers' cold parts (``.cold``, in ``.text.unlikely``)
        whole = function.section in homes
        registrar = function.name in NVCC_INITIALISERS
        for offset, symbol_index, addend, kind in _relocations_of(data, sections, function.section):
            inside = function.value <= offset < function.value + function.size
            if not inside and (not whole or registrar or any(_within(o, function.section, offset) for o in owners)):
                continue
            symbol = symbols[symbol_index]
            code = _code_at(sections, symbols, symbol, addend + 4 if kind in _PC_RELATIVE else addend)
            if code is not None and _initialiser(code, nvcc):
                initialisers.extend([code] if code not in initialisers else [])
                continue
            name = code.name if code is not None else _referenced(sections, symbol)
            if registrar:
                allowed = _registers(data, sections[function.section], offset, symbol, code, name)
            else:
                allowed = not name or _allowed(sections, symbol, name, variables)
            if not allowed and f"`{name}`" not in found:
                found.append(f"`{name}`")
    return found


def _within(function: _Symbol, section: int, offset: int) -> bool:
    return function.section == section and function.value <= offset < function.value + function.size


def _initialiser(function: _Symbol, nvcc: bool) -> bool:
    """Whether ``function`` is a compiler's initialiser of the unit (g++'s; with ``nvcc``, nvcc's too)."""
    return function.name.startswith(INIT_FUNCTION_PREFIX) or (nvcc and function.name in NVCC_INITIALISERS)


def _registers(data: bytes, home: _Section, offset: int, symbol: _Symbol, code: _Symbol | None, name: str) -> bool:
    """Whether a relocation at ``offset`` of nvcc's initialiser only registers: a call of an imported
    registration function, or the address of the unit's data or code (a kernel's host function)."""
    if symbol.section == 0:  # imported: only the registration functions
        return name in NVCC_CALLS
    if code is None or code.name == NVCC_UNREGISTER:
        return True  # the unit's data (the fatbinary, its handle, the host shadows of __device__ variables)
    return not _calls(data, home, offset)  # code of the unit: its address only, never a call or jump


def _calls(data: bytes, home: _Section, offset: int) -> bool:
    """Whether the 4-byte field at ``offset`` of section ``home`` is a call's or jump's target (``e8``/``e9``
    rel32, ``ff 15``/``ff 25`` through the GOT) rather than an address taken (``lea``, ``mov``)."""
    if not 2 <= offset <= home.size - 4:
        return True
    before = data[home.offset + offset - 2 : home.offset + offset]
    return before[1] in (0xE8, 0xE9) or before in (b"\xff\x15", b"\xff\x25")


def _code_at(sections: list[_Section], symbols: list[_Symbol], symbol: _Symbol, target: int) -> _Symbol | None:
    """The function of this unit a relocation to code of this unit points into (None: not such a relocation)."""
    if not 0 < symbol.section < len(sections) or not sections[symbol.section].flags & _SHF_EXECINSTR:
        return None
    if symbol.kind != _STT_SECTION:
        return symbol
    for candidate in symbols:
        inside = candidate.value <= target < candidate.value + max(candidate.size, 1)
        if candidate.section == symbol.section and candidate.kind == _STT_FUNC and inside:
            return candidate
    return _Symbol(sections[symbol.section].name, _STT_SECTION, symbol.section, target, 0)


def _allowed(sections: list[_Section], symbol: _Symbol, name: str, variables: frozenset[str]) -> bool:
    if 0 < symbol.section < len(sections):
        flags = sections[symbol.section].flags
        if not flags & (_SHF_WRITE | _SHF_EXECINSTR):
            return True  # read-only constants (an initialiser's values)
    if name in RUNTIME_NAMES or name.startswith(RUNTIME_PREFIXES):
        return True
    return name in variables or any(name.endswith((f"{len(v)}{v}", f"{len(v)}{v}E")) for v in variables)


def _referenced(sections: list[_Section], symbol: _Symbol) -> str:
    """The name a relocation's symbol stands for: a section's symbol names the variable of its section."""
    if symbol.kind != _STT_SECTION:
        return symbol.name
    name = sections[symbol.section].name if 0 < symbol.section < len(sections) else ""
    for prefix in _DATA_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _function_at(symbols: list[_Symbol], symbol: _Symbol, addend: int) -> _Symbol | None:
    """The function an ``.init_array`` relocation points to (a section's symbol plus an offset, or a name)."""
    if symbol.kind != _STT_SECTION:
        return symbol if addend == 0 else None
    for candidate in symbols:
        if candidate.section == symbol.section and candidate.kind == _STT_FUNC and candidate.value == addend:
            return candidate
    return None


def _relocations_of(data: bytes, sections: list[_Section], target: int) -> list[tuple[int, int, int, int]]:
    out: list[tuple[int, int, int, int]] = []
    for index, section in enumerate(sections):
        if section.kind == _SHT_RELA and section.info == target:
            out.extend(_relocations(data, sections, index, rela=True))
    return out


def _relocations(data: bytes, sections: list[_Section], index: int,
                 rela: bool = False) -> list[tuple[int, int, int, int]]:  # fmt: skip
    """``(offset, symbol index, addend, type)`` of the relocations of section ``index`` (``rela``: of that
    RELA section itself)."""
    if not rela:
        return _relocations_of(data, sections, index)
    section = sections[index]
    if section.entsize != 24 or section.offset + section.size > len(data):
        raise UnreadableLibrary(f"implausible relocation section {section.name}")
    out = []
    for at in range(section.offset, section.offset + section.size - 23, 24):
        offset, info, addend = struct.unpack_from("<QQq", data, at)
        out.append((offset, info >> 32, addend, info & 0xFFFFFFFF))
    return out


def _read(data: bytes) -> tuple[list[_Section], list[_Symbol]]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1 or struct.unpack_from("<H", data, 16)[0] != 1:
        raise UnreadableLibrary("not a little-endian ELF64 relocatable file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize < 64 or shnum > 65280 or shstrndx >= shnum:
        raise UnreadableLibrary("implausible section table")
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
    names = _strings(data, raw[shstrndx][4], raw[shstrndx][5])
    sections = [_Section(_name(names, r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[9]) for r in raw]
    symbols: list[_Symbol] = []
    for section in sections:
        if section.kind != _SHT_SYMTAB:
            continue
        if section.entsize != 24 or section.link >= len(sections) or section.offset + section.size > len(data):
            raise UnreadableLibrary("implausible symbol table")
        strings = _strings(data, sections[section.link].offset, sections[section.link].size)
        for at in range(section.offset, section.offset + section.size - 23, 24):
            name_at, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data, at)
            symbols.append(_Symbol(_name(strings, name_at), info & 0xF, shndx, value, size, info >> 4))
    return sections, symbols


def _strings(data: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(data):
        raise UnreadableLibrary("a string table lies outside the file")
    return data[offset : offset + size]


def _name(strings: bytes, at: int) -> str:
    end = strings.find(b"\0", at)
    return strings[at:end].decode("ascii", "replace") if at < len(strings) and end >= at else ""
