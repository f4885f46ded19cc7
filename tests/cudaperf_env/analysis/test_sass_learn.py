"""The table learner's pieces against the real nvdisasm (the whole run takes a minute: not here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaperf_env.analysis import compiler
from cudaperf_env.analysis.cubin import read_cubin
from cudaperf_env.analysis.sass_learn import ArchTable, _learn_field, corpus_words, raw_mnemonics, render
from cudaperf_env.toolchain.compile_check import compile_check

VEC4 = """
__global__ void scale4(int n4, const float4* __restrict__ x, float4* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) { float4 v = x[i]; v.x *= 2; v.y *= 2; v.z *= 2; v.w *= 2; y[i] = v; }
}
"""
ILLEGAL = 1 << 0  # opcode 0x001, every operand bit clear: nvdisasm names its address
ILLEGAL_UNNAMED = 0xFEA00038000000000000000000000  # nvdisasm rejects it without an address


def nvdisasm() -> str:
    tool = compiler.find_tool("nvdisasm")
    assert tool is not None, "nvdisasm ships with the project (nvidia-cuda-nvdisasm)"
    return tool


@pytest.fixture(scope="module")
def cubin() -> Path:
    report = compile_check(VEC4)
    assert report.ok and report.cubin, report.log
    return Path(report.cubin)


@pytest.fixture(scope="module")
def load(cubin: Path) -> int:
    """The word of the kernel's 128-bit global load."""
    return next(w for w, n in corpus_words(nvdisasm(), cubin) if n.startswith("LDG"))


def test_corpus_words_pair_each_instruction_word_with_its_mnemonic(cubin):
    words = corpus_words(nvdisasm(), cubin)
    code = b"".join(read_cubin(cubin.read_bytes()).functions.values())  # type: ignore[union-attr]
    assert [w for w, _ in words] == [int.from_bytes(code[i : i + 16], "little") for i in range(0, len(code), 16)]
    assert {"LDG.E.128.CONSTANT", "STG.E.128", "EXIT"} <= {n for _, n in words}


def test_raw_disassembly_skips_illegal_words_named_or_not(load):
    names = raw_mnemonics(nvdisasm(), "sm_90", [load, ILLEGAL, load, ILLEGAL_UNNAMED, load])
    assert names == ["LDG.E.128.CONSTANT", None, "LDG.E.128.CONSTANT", None, "LDG.E.128.CONSTANT"]


def test_the_width_of_global_loads_is_learnt_as_a_field(load):
    table = ArchTable()
    _learn_field(nvdisasm(), "sm_90", load & 0xFFF, [load], [68, 72, 73, 74, 75, 84], table)
    bits, names = table.fields[load & 0xFFF]
    assert bits == (72, 73, 74, 75)  # the .E flag and the 3-bit size; .LTC64B (68) and .EF (84) do not count
    assert names[0b1101] == "LDG.128" and names.count("LDG.128") == 1 and set(names) == {"LDG", "LDG.128"}
    source = render({"sm_90": table}, "nvdisasm (test)")
    namespace: dict[str, object] = {}
    exec(compile(source, "sass_opcodes.py", "exec"), namespace)  # the rendered module is valid Python
    assert namespace["FIELDS"] == {"sm_90": {load & 0xFFF: (bits, names)}}
