"""Code that runs when a library is loaded: found in the compiled object of the submission's unit.

A global constructor (``__attribute__((constructor))``, ``static int x = f();`` at namespace
scope, a global object with a constructor, an ``.init_array`` or ``.ctors`` entry made by a
``section`` attribute or by assembly) runs when the worker loads the library, before the harness
calls the entry. The screen refuses the spellings it knows; this check reads what the compiler
made (a relocatable ELF64 object, every offset bounds-checked: it came from untrusted source):

- no ``.init``, ``.fini``, ``.preinit_array``, ``.ctors``, ``.dtors`` or ``.fini_array`` section
  (by name or by type): the compiler makes none for C++ code;
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
MESSAGE = "global constructors run before the harness; initialise inside the entry function"
_SHT_SYMTAB, _SHT_RELA, _SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY = 2, 4, 14, 15, 16
_FORBIDDEN = [name.split(".")[:2] for name in FORBIDDEN_SECTIONS]  # ".ctors" and ".ctors.65535", not ".init_array"
_STB_LOCAL, _STT_FILE = 0, 4
_STT_FUNC, _STT_SECTION, _SHF_WRITE, _SHF_EXECINSTR = 2, 3, 0x1, 0x4
_PC_RELATIVE = (2, 4)  # R_X86_64_PC32, R_X86_64_PLT32: the addend is the target less the 4-byte field's end
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


def check(obj: Path, device_variables: Iterable[str] = ()) -> str:
    """Why the compiled unit ``obj`` may not be loaded ("" when it runs no submitted code at load time)."""
    try:
        found = load_time_code(obj.read_bytes(), device_variables)
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


def load_time_code(data: bytes, device_variables: Iterable[str] = ()) -> list[str]:
    """What in the relocatable object ``data`` runs submitted code at load time (pure; empty if nothing).

    Raises:
        UnreadableLibrary: Not a little-endian ELF64 relocatable file, or an offset points outside it.
    """
    try:
        sections, symbols = _read(data)
        return _findings(data, sections, symbols, frozenset(device_variables))
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise UnreadableLibrary(f"truncated or malformed ELF: {exc}") from None


def _findings(data: bytes, sections: list[_Section], symbols: list[_Symbol], variables: frozenset[str]) -> list[str]:
    found = [f"a `{s.name}` section" for s in sections
             if s.kind in (_SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY) or s.name.split(".")[:2] in _FORBIDDEN]  # fmt: skip
    initialisers: list[_Symbol] = []
    for index, section in enumerate(sections):
        if section.kind != _SHT_INIT_ARRAY and not section.name.startswith(".init_array"):
            continue
        relocations = _relocations(data, sections, index)
        if section.size != 8 * len(relocations) or section.kind != _SHT_INIT_ARRAY:
            found.append(f"a `{section.name}` section the compiler did not make")
        for _, symbol_index, addend, _ in relocations:
            target = _function_at(symbols, symbols[symbol_index], addend)
            if target is None or not target.name.startswith(INIT_FUNCTION_PREFIX):
                what = f"the constructor `{target.name if target else symbols[symbol_index].name}`"
                found.extend([what] if what not in found else [])
            elif target not in initialisers:
                initialisers.append(target)
    # The compiler puts code run only at load time in the initialisers' section (``.text.startup``),
    # calls within it need no relocation: all of it is read, and any function there is load-time code.
    homes = {function.section for function in initialisers}
    found.extend(f"`{s.name}`" for s in symbols if s.section in homes and s.kind == _STT_FUNC
                 and not s.name.startswith(INIT_FUNCTION_PREFIX))  # fmt: skip
    for function in initialisers:  # grows by the initialisers' cold parts (``.cold``, in ``.text.unlikely``)
        whole = function.section in homes
        for offset, symbol_index, addend, kind in _relocations_of(data, sections, function.section):
            if not whole and not function.value <= offset < function.value + function.size:
                continue
            symbol = symbols[symbol_index]
            code = _code_at(sections, symbols, symbol, addend + 4 if kind in _PC_RELATIVE else addend)
            if code is not None and code.name.startswith(INIT_FUNCTION_PREFIX):
                initialisers.extend([code] if code not in initialisers else [])
                continue
            name = code.name if code is not None else _referenced(sections, symbol)
            if name and not _allowed(sections, symbol, name, variables) and f"`{name}`" not in found:
                found.append(f"`{name}`")
    return found


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
