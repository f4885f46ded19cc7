"""Opcode histograms read straight from a cubin's instruction words, without starting a disassembler.

``nvdisasm`` spends about 0.22 s of CPU on every run setting up its tables for
the architecture, after it has read its input and whatever the flags or the
input's size, which alone is over the analysis budget (0.2 s). But the SASS
features only read each instruction's opcode, plus one modifier for two of
them (see :func:`cudaperf_env.analysis.compiler.opcode_class`). From Volta on
an instruction is one 128-bit word whose low 12 bits are its opcode, so a
table learnt from nvdisasm itself (:mod:`cudaperf_env.analysis.sass_learn`,
stored in :mod:`cudaperf_env.analysis.sass_opcodes`) names every instruction:

- the opcode alone, or, where a modifier the features read varies,
- the opcode and a bit field (the access width of ``LDG``/``STG``).

A word whose opcode or field value the table does not hold makes
:func:`decode_histogram` give up (None): the caller then disassembles for real,
so an unknown instruction costs time, never a wrong count.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cudaperf_env.analysis.sass_opcodes import FIELDS, OPCODES

EM_CUDA = 190
_HEADER = struct.Struct("<4sBBBBB7xHHIQQQIHHHHHH")  # ELF64 header
_SECTION = struct.Struct("<IIQQQQIIQQ")  # ELF64 section header
_PROGBITS, _EXECINSTR = 1, 0x4
WORD_BYTES = 16


@dataclass(frozen=True)
class Cubin:
    """What the decode needs from a cubin.

    Attributes:
        arch: Target architecture from the ELF flags, e.g. ``sm_90``.
        functions: Code of each ``.text.<function>`` section, by function name.
    """

    arch: str
    functions: Mapping[str, bytes]


def read_cubin(data: bytes) -> Cubin | None:
    """The architecture and function code of a CUDA ELF image; None if ``data`` is not one."""
    try:
        magic, cls, order, _, _, _, _, machine, _, _, _, shoff, flags, _, _, _, shentsize, shnum, shstrndx = (
            _HEADER.unpack_from(data)
        )
        if magic != b"\x7fELF" or cls != 2 or order != 1 or machine != EM_CUDA or shentsize != _SECTION.size:
            return None
        sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
        names_at = sections[shstrndx][4]
        functions: dict[str, bytes] = {}
        for name_offset, kind, section_flags, _, offset, size, *_ in sections:
            end = data.index(b"\0", names_at + name_offset)
            name = data[names_at + name_offset : end].decode("ascii", "replace")
            if kind == _PROGBITS and section_flags & _EXECINSTR and name.startswith(".text."):
                code = data[offset : offset + size]
                if len(code) != size or size % WORD_BYTES:
                    return None
                functions[name[len(".text.") :]] = code
    except (struct.error, ValueError, IndexError):  # truncated or not an ELF image
        return None
    return Cubin(f"sm_{(flags >> 8) & 0xFF}", functions)


def decode_histogram(data: bytes) -> dict[str, dict[str, int]] | None:
    """Opcode classes per function of a cubin (as :func:`~cudaperf_env.analysis.compiler.opcode_class`
    names them), read from the instruction words; None when the image, its architecture or one of
    its instructions is not in the tables (then disassemble it)."""
    cubin = read_cubin(data)
    if cubin is None or cubin.arch not in OPCODES:
        return None
    histogram: dict[str, dict[str, int]] = {}
    for function, code in cubin.functions.items():
        counts = _decode(code, OPCODES[cubin.arch], FIELDS.get(cubin.arch, {}))
        if counts is None:
            return None
        histogram[function] = counts
    return histogram


def _decode(
    code: bytes, opcodes: Mapping[int, str], fields: Mapping[int, tuple[tuple[int, ...], tuple[str | None, ...]]]
) -> dict[str, int] | None:
    words = np.frombuffer(code, dtype="<u8").reshape(-1, 2)  # (N, 2): bits 0-63, bits 64-127
    ops = words[:, 0] & 0xFFF
    counts: dict[str, int] = {}
    for op, n in zip(*np.unique(ops, return_counts=True), strict=True):
        op = int(op)
        if op in opcodes:
            counts[opcodes[op]] = counts.get(opcodes[op], 0) + int(n)
        elif op in fields:
            bits, names = fields[op]
            chosen = words[ops == op]
            value = np.zeros(len(chosen), dtype=np.uint64)
            for i, bit in enumerate(bits):
                value |= ((chosen[:, bit // 64] >> np.uint64(bit % 64)) & np.uint64(1)) << np.uint64(i)
            for v, m in zip(*np.unique(value, return_counts=True), strict=True):
                name = names[int(v)]
                if name is None:
                    return None
                counts[name] = counts.get(name, 0) + int(m)
        else:
            return None
    return counts
