"""Learns the opcode tables of :mod:`cudaperf_env.analysis.sass_opcodes` from nvdisasm itself.

Run ``python -m cudaperf_env.analysis.sass_learn CUBIN...`` (the compile
check's cache is a good corpus: ``~/.cache/cudaperf/compile_check/*.cubin``)
after a CUDA upgrade or a change to
:func:`~cudaperf_env.analysis.compiler.opcode_class`; it rewrites
``sass_opcodes.py`` for the architectures of the cubins given. Per architecture:

1. every instruction of the cubins is disassembled (``nvdisasm -hex``): the
   opcodes (low 12 bits) met, and real words of each to start from (seeds);
2. every opcode not met is tried on the seeds of its family (the same bits 0-8: the
   other operand formats) and on one seed of every family; legal words become seeds;
3. every other bit of each seed is flipped in turn (raw disassembly,
   ``nvdisasm -b SM90``); an opcode whose class never changes is stored as its class;
4. where a flip changes the class, every combination of the bits that change the
   mnemonic at all is disassembled, and the bits the class depends on become the
   opcode's field (left out when they do not determine it);
5. every instruction of the corpus is decoded with the tables and compared with
   its disassembly; an opcode with a mismatch is left out.

An opcode left out, or never met, is not an error at run time: the analysis then
runs the disassembler. Words nvdisasm calls illegal are skipped throughout.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cudaperf_env.analysis import compiler
from cudaperf_env.analysis.cubin import read_cubin

SEEDS_PER_OPCODE = 3
MAX_FIELD_BITS = 16  # mnemonic bits enumerated for an opcode whose class varies
_HEX_LINE = re.compile(r"/\* 0x([0-9a-f]{16}) \*/\s*$")  # a word's low half ends its line, the high half the next
_ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")
_BAD_ADDRESS = re.compile(r"at address 0x([0-9a-f]+)")
OUTPUT = Path(__file__).with_name("sass_opcodes.py")

Field = tuple[tuple[int, ...], tuple[str | None, ...]]


@dataclass
class ArchTable:
    """What was learnt for one architecture.

    Attributes:
        opcodes: Class of each opcode whose class no other bit changes.
        fields: ``(bits, classes)`` of each opcode whose class depends on those bits.
        left_out: Why each opcode met was left out (the disassembler reads those).
    """

    opcodes: dict[int, str] = field(default_factory=dict)
    fields: dict[int, Field] = field(default_factory=dict)
    left_out: dict[int, str] = field(default_factory=dict)


def corpus_words(nvdisasm: str, cubin: Path) -> list[tuple[int, str]]:
    """``(word, mnemonic)`` of every instruction of a cubin (``nvdisasm -c -ndf -hex``)."""
    out = subprocess.run([nvdisasm, "-c", "-ndf", "-hex", str(cubin)], capture_output=True, text=True, check=True)
    found: list[tuple[int, str]] = []
    pending: tuple[str, str] | None = None  # (mnemonic, low half) of the instruction on the previous line
    for line in out.stdout.splitlines():
        half = _HEX_LINE.search(line)
        name = compiler.instruction_mnemonic(line)
        if half and name is not None:
            pending = (name, half.group(1))
        elif half and pending:
            found.append((int(half.group(1) + pending[1], 16), pending[0]))
            pending = None
    return found


def raw_mnemonics(nvdisasm: str, arch: str, words: Sequence[int]) -> list[str | None]:
    """The mnemonic of each 128-bit word disassembled alone for ``arch`` (None: illegal).

    nvdisasm prints nothing when a word is illegal, but names the address of (nearly) every
    illegal word: those are dropped and the rest disassembled again; a failure naming none
    is narrowed down by halves.
    """
    result: list[str | None] = [None] * len(words)
    live = list(range(len(words)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "words.bin"
        while live:
            path.write_bytes(b"".join(words[i].to_bytes(16, "little") for i in live))
            out = subprocess.run([nvdisasm, "-b", arch.upper().replace("_", ""), str(path)],
                                 capture_output=True, text=True, check=False)
            if out.returncode == 0:
                for line in out.stdout.splitlines():
                    name, address = compiler.instruction_mnemonic(line), _ADDRESS.search(line)
                    if name is not None and address:
                        result[live[int(address.group(1), 16) // 16]] = name
                return result
            bad = {int(a, 16) // 16 for a in _BAD_ADDRESS.findall(out.stderr)} & set(range(len(live)))
            if not bad and len(live) == 1:
                return result
            if not bad:
                half = len(live) // 2
                for part in (live[:half], live[half:]):
                    for i, name in zip(part, raw_mnemonics(nvdisasm, arch, [words[i] for i in part]), strict=True):
                        result[i] = name
                return result
            live = [i for j, i in enumerate(live) if j not in bad]
    return result


def _set_bits(word: int, bits: Sequence[int], value: int) -> int:
    for i, bit in enumerate(bits):
        word = (word & ~(1 << bit)) | (((value >> i) & 1) << bit)
    return word


def learn(nvdisasm: str, arch: str, corpus: Sequence[tuple[int, str]]) -> ArchTable:
    """The table of one architecture from its corpus of ``(word, mnemonic)``."""
    seeds = _seeds(nvdisasm, arch, corpus)
    flips = [(op, seed_name, word, bit) for op in sorted(seeds) for seed_name, word in seeds[op].items()
             for bit in range(12, 128)]
    flipped = raw_mnemonics(nvdisasm, arch, [word ^ (1 << bit) for _, _, word, bit in flips])
    mnemonic_bits: dict[int, set[int]] = defaultdict(set)  # bits whose flip changes the mnemonic
    classes: dict[int, set[str]] = defaultdict(set)
    for (op, seed_name, _, bit), name in zip(flips, flipped, strict=True):
        classes[op].add(compiler.opcode_class(seed_name))
        if name is not None and name != seed_name:
            mnemonic_bits[op].add(bit)
            classes[op].add(compiler.opcode_class(name))
    table = ArchTable()
    for op in sorted(seeds):
        if len(classes[op]) == 1:
            table.opcodes[op] = classes[op].pop()
        else:
            _learn_field(nvdisasm, arch, op, list(seeds[op].values()), sorted(mnemonic_bits[op]), table)
    _check(corpus, table)
    return table


def _seeds(nvdisasm: str, arch: str, corpus: Sequence[tuple[int, str]]) -> dict[int, dict[str, int]]:
    """Up to ``SEEDS_PER_OPCODE`` words (first of each mnemonic) per opcode: met in the corpus, or
    the words of its family (bits 0-8) and one of every family, with the opcode put in and legal."""
    seeds: dict[int, dict[str, int]] = defaultdict(dict)
    for word, name in corpus:
        if len(seeds[word & 0xFFF]) < SEEDS_PER_OPCODE:
            seeds[word & 0xFFF].setdefault(name, word)
    family = {op & 0x1FF: list(named.values()) for op, named in seeds.items()}
    anyone = [words[0] for words in family.values()]
    tries = [(op, (word & ~0xFFF) | op) for op in range(0x1000) if op not in seeds
             for word in family.get(op & 0x1FF, []) + anyone]
    for (op, word), found in zip(tries, raw_mnemonics(nvdisasm, arch, [w for _, w in tries]), strict=True):
        if found is not None and len(seeds[op]) < SEEDS_PER_OPCODE:
            seeds[op].setdefault(found, word)
    return {op: named for op, named in seeds.items() if named}


def _learn_field(nvdisasm: str, arch: str, op: int, seeds: list[int], bits: list[int], table: ArchTable) -> None:
    """Disassembles every value of ``bits`` in each seed; the bits whose flip changes the class
    (both words legal) make the field, if the class is a function of them."""
    if len(bits) > MAX_FIELD_BITS:
        table.left_out[op] = f"its class depends on {len(bits)} mnemonic bits"
        return
    words = [_set_bits(seed, bits, v) for seed in seeds for v in range(1 << len(bits))]
    names = [compiler.opcode_class(n) if n else None for n in raw_mnemonics(nvdisasm, arch, words)]
    per_seed = [names[i << len(bits) : (i + 1) << len(bits)] for i in range(len(seeds))]
    relevant = [
        i for i in range(len(bits))
        if any(a and b and a != b for s in per_seed for a, b in ((s[v], s[v ^ (1 << i)]) for v in range(len(s))))
    ]
    values: list[set[str]] = [set() for _ in range(1 << len(relevant))]
    for s in per_seed:
        for v, name in enumerate(s):
            if name:
                values[sum(((v >> r) & 1) << j for j, r in enumerate(relevant))].add(name)
    if any(len(v) > 1 for v in values):
        table.left_out[op] = "its class is not a function of its mnemonic bits"
        return
    table.fields[op] = (tuple(bits[r] for r in relevant), tuple(v.pop() if v else None for v in values))


def _check(corpus: Iterable[tuple[int, str]], table: ArchTable) -> None:
    """Leaves out every opcode the table decodes differently from the corpus's disassembly."""
    for word, name in corpus:
        op = word & 0xFFF
        if op in table.opcodes:
            got: str | None = table.opcodes[op]
        elif op in table.fields:
            bits, names = table.fields[op]
            got = names[sum(((word >> b) & 1) << i for i, b in enumerate(bits))]
        else:
            continue
        if got != compiler.opcode_class(name):
            table.opcodes.pop(op, None)
            table.fields.pop(op, None)
            table.left_out[op] = f"decoded {got} where nvdisasm printed {name}"


def render(tables: dict[str, ArchTable], version: str, corpora: Sequence[str] = ()) -> str:
    """The source of ``sass_opcodes.py`` (``corpora``: a line on what each table was learnt from)."""
    lines = [
        f'"""SASS opcode classes by architecture, learnt from {version}.',
        "",
        *(f"- {line}" for line in corpora),
        *([""] if corpora else []),
        "Generated by ``python -m cudaperf_env.analysis.sass_learn``; do not edit. ``OPCODES[arch][op]``",
        "is the class (:func:`cudaperf_env.analysis.compiler.opcode_class`) of every instruction whose",
        "low 12 bits are ``op``; ``FIELDS[arch][op] = (bits, classes)``: the class is",
        "``classes[value of those bits, first = least significant]`` (None: never legal, disassemble).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "OPCODES: dict[str, dict[int, str]] = {",
    ]
    for arch, table in sorted(tables.items()):
        lines.append(f'    "{arch}": {{')
        items = sorted(table.opcodes.items())
        for i in range(0, len(items), 5):
            lines.append("        " + " ".join(f'0x{op:03x}: "{name}",' for op, name in items[i : i + 5]))
        lines.append("    },")
    lines += ["}", "FIELDS: dict[str, dict[int, tuple[tuple[int, ...], tuple[str | None, ...]]]] = {"]
    for arch, table in sorted(tables.items()):
        lines.append(f'    "{arch}": {{')
        for op, (bits, names) in sorted(table.fields.items()):
            lines.append(f"        0x{op:03x}: ({bits!r}, (")
            for i in range(0, len(names), 8):
                lines.append("            " + " ".join(f"{name!r}," for name in names[i : i + 8]).replace("'", '"'))
            lines.append("        )),")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cubins", nargs="+", type=Path, help="compiled cubins (any architectures)")
    parser.add_argument("--jobs", type=int, default=2, help="nvdisasm runs in parallel over the corpus")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    nvdisasm = compiler.find_tool("nvdisasm")
    if nvdisasm is None:
        sys.exit("nvdisasm not found: install the nvidia-cuda-nvdisasm wheel or set CUDAPERF_NVDISASM.")
    by_arch: dict[str, list[Path]] = defaultdict(list)
    for path in args.cubins:
        cubin = read_cubin(path.read_bytes())
        if cubin is not None:
            by_arch[cubin.arch].append(path)
    version = subprocess.run([nvdisasm, "--version"], capture_output=True, text=True, check=True).stdout
    tables: dict[str, ArchTable] = {}
    corpora: list[str] = []
    for arch, paths in sorted(by_arch.items()):
        with ThreadPoolExecutor(args.jobs) as pool:
            corpus = [pair for words in pool.map(lambda p: corpus_words(nvdisasm, p), paths) for pair in words]
        table = tables[arch] = learn(nvdisasm, arch, corpus)
        corpora.append(f"{arch}: {len(paths)} cubins, {len(corpus)} instructions; {len(table.opcodes)} opcodes, "
                       f"{len(table.fields)} with a field, {len(table.left_out)} left out")
        print(corpora[-1], table.left_out)
    release = next((line for line in version.splitlines() if "release" in line), version.strip())
    args.output.write_text(render(tables, f"nvdisasm ({release.strip()})", corpora))


if __name__ == "__main__":
    main()
