"""The load-time code check on objects g++ makes: plain C++ units, assembly, malformed files."""

import contextlib
import random
import subprocess
from pathlib import Path

import pytest

from cudaperf_env.backends.cpu.compiler import BASE_FLAGS, include_flags
from cudaperf_env.backends.cpu.imports import TRIVIAL
from cudaperf_env.backends.cpu.prepass import prepass
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.initcode import MESSAGE, check, load_time_code
from cudaperf_env.toolchain.symbols import UnreadableLibrary


def compile_unit(tmp_path: Path, code: str, runtime: bool = False) -> Path:
    """``code`` compiled with the CPU build's flags (``runtime``: the runtime's header force-included)."""
    source, obj = tmp_path / "source.cpp", tmp_path / "source.o"
    source.write_text(code)
    extra = [*include_flags(), "-include", "cudaperf/cuda_cpu.h"] if runtime else []
    cmd = [tools.host_compiler("g++"), *BASE_FLAGS, "-fdata-sections", *extra, "-c", str(source), "-o", str(obj)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return obj


@pytest.fixture(scope="module")
def runtime_units(tmp_path_factory):
    """The runtime's own load-time code: an empty submission's unit, and one with ``__device__`` variables."""
    folder = tmp_path_factory.mktemp("units")
    empty = prepass(TRIVIAL)
    variables = prepass("__device__ float tab[4] = {1, 2, 3, 4};\n__device__ int cnt;\n"
                        "__constant__ double c2[2] = {0.5, 2.0};\n" + TRIVIAL)  # fmt: skip
    out = {}
    for name, passed in (("empty", empty), ("variables", variables)):
        (folder / name).mkdir()
        out[name] = (compile_unit(folder / name, "#include <cstdio>\n" + passed.source, runtime=True), passed)
    return out


def test_the_runtime_units_have_load_time_code_and_pass(runtime_units):
    for obj, passed in runtime_units.values():
        assert check(obj, passed.device_variables) == ""
    obj, passed = runtime_units["variables"]
    assert passed.device_variables == ("tab", "cnt", "c2")
    # the pre-pass's references are the only submission names allowed; without them they are refused
    assert "`tab`" in check(obj) and "`cnt`" in check(obj)


@pytest.mark.parametrize(
    "code,found",
    [
        ("__attribute__((constructor)) void early() {}\n", "the constructor `_Z5earlyv`"),
        ('extern "C" void early() {}\nasm(".section .init_array,\\"aw\\"\\n.quad early\\n.text\\n");\n',
         "the constructor `early`"),
        ('extern "C" void early() {}\nasm(".section .ctors,\\"aw\\"\\n.quad early\\n.text\\n");\n', "`.ctors` section"),
        ('asm(".section .init,\\"ax\\"\\nnop\\n.text\\n");\n', "`.init` section"),
        ('extern "C" void early() {}\nasm(".section .mine,\\"aw\\",@init_array\\n.quad early\\n.text\\n");\n',
         "the constructor `early`"),
        ('asm(".section .init_array,\\"aw\\",@init_array\\n.quad 0x401000\\n.text\\n");\n',
         "`.init_array` section the compiler did not make"),
        ("extern int f();\nint x = f();\n", "`_Z1fv`"),
        ('extern "C" int puts(const char*);\nstruct G { G() { puts("x"); } } obj;\n', "`puts`"),
        ("static volatile int g;\nstruct G { G() { g = 1; } } obj;\n", "`_ZL1g`"),
        ("volatile int v = 3;\nstatic __attribute__((noinline)) int f() { return v; }\nint x = f();\n", "`_ZL1fv`"),
        ('extern "C" int puts(const char*);\nstatic __attribute__((noinline)) void f() { puts("x"); }\n'
         "static bool b = (f(), true);\n", "`puts`"),
    ],
)
def test_load_time_code_is_found(tmp_path, code, found):
    obj = compile_unit(tmp_path, code)
    names = load_time_code(obj.read_bytes())
    assert any(found in item for item in names), names
    assert check(obj).startswith(MESSAGE)


def test_the_message_names_functions_as_written(tmp_path):
    message = check(compile_unit(tmp_path, "__attribute__((constructor)) void early(int) {}\n"))
    assert message == f"{MESSAGE} (found the constructor `early(int)`)"


def test_constants_are_not_load_time_code(tmp_path):
    code = ("#include <cmath>\nconst float kScale = sqrtf(2.0f);\nconstexpr int kN = 4;\n"
            'int table[kN] = {1, 2, 3, 4};\nconst char* kName = "x";\n'
            "int f() { return table[0] + kN + (int)kScale + kName[0]; }\n")
    assert check(compile_unit(tmp_path, code)) == ""


def test_malformed_objects_are_refused_not_raised(tmp_path, runtime_units):
    data = runtime_units["empty"][0].read_bytes()
    with pytest.raises(UnreadableLibrary):
        load_time_code(b"\x7fELF" + bytes(60))
    with pytest.raises(UnreadableLibrary):
        load_time_code(data[: len(data) // 3])
    rng = random.Random(5)
    for _ in range(200):  # random corruption: an answer or UnreadableLibrary, nothing else
        mutated = bytearray(data)
        for _ in range(8):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        with contextlib.suppress(UnreadableLibrary):
            load_time_code(bytes(mutated))
    bad = tmp_path / "bad.o"
    bad.write_bytes(b"not an object")
    assert check(bad).startswith("the compiled unit cannot be checked")
    assert check(tmp_path / "missing.o").startswith("the compiled unit cannot be checked")
