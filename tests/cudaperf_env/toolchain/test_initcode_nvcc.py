"""The load-time code check on host objects nvcc makes (``nvcc=True``): its registration admitted, nothing else.

Runs without a GPU: nvcc compiles host objects for ``sm_90`` with the GPU backend's flags.
"""

import contextlib
import random
import subprocess
from pathlib import Path

import pytest

from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.initcode import MESSAGE, NVCC_INITIALISERS, check, load_time_code
from cudaperf_env.toolchain.symbols import UnreadableLibrary

KERNEL = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"
ENTRY = 'extern "C" void entry(float* y) { k<<<1, 32>>>(y); }\n'
HONEST = {
    "one kernel": KERNEL + ENTRY,
    "device, constant and managed variables": (
        "__device__ float table[4] = {1, 2, 3, 4};\n__constant__ double coeff[2];\n__managed__ int count;\n"
        "static __device__ int hidden;\n"
        "__global__ void k(float* y) { y[threadIdx.x] = table[threadIdx.x % 4] + coeff[0] + count + hidden; }\n"
        + ENTRY + 'extern "C" void set() { count = 3; }\n'),
    "templates, namespaces, extern C and static kernels": (
        "template <int N> __global__ void t(float* y) { y[0] = N; }\n"
        "namespace ns { __global__ void k2(float* y) { y[0] = 1; } }\n"
        'extern "C" __global__ void kc(float* y) { y[0] = 2; }\n'
        "namespace { __global__ void anon(float* y) { y[0] = 3; } }\n"
        "static __global__ void sk(float* y) { y[0] = 4; }\n"
        'extern "C" void entry(float* y) { t<4><<<1, 1>>>(y); t<8><<<1, 1>>>(y); ns::k2<<<1, 1>>>(y);\n'
        "  kc<<<1, 1>>>(y); anon<<<1, 1>>>(y); sk<<<1, 1>>>(y); }\n"),
    "the standard streams and constants": (
        "#include <iostream>\n#include <cmath>\nconst float kScale = sqrtf(2.0f);\nconstexpr int kBlock = 256;\n"
        "__global__ void k(float* y) { y[threadIdx.x] = kBlock; }\n" + ENTRY
        + 'extern "C" float scaled(float v) { std::cout << v; return v * kScale; }\n'),
    "forty kernels": "".join(f"__global__ void k{i}(float* y) {{ y[{i}] = {i}; }}\n" for i in range(40))
    + 'extern "C" void entry(float* y) {' + "".join(f" k{i}<<<1, 1>>>(y);" for i in range(40)) + " }\n",
    "thrust, cub and cooperative groups": (
        "#include <thrust/device_ptr.h>\n#include <thrust/sort.h>\n#include <cub/cub.cuh>\n"
        "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
        "__global__ void k(float* y) { cg::this_thread_block().sync(); y[threadIdx.x] = 1.0f; }\n"
        'extern "C" void entry(float* y, int n) { thrust::device_ptr<float> p(y); thrust::sort(p, p + n);\n'
        "  k<<<1, 32>>>(y); }\n"),
}
ATTACKS = {
    "constructor attribute": (
        '#include <cstdio>\n__attribute__((constructor)) static void early() { puts("early"); }\n', "`early()`"),
    "destructor attribute": ('#include <cstdio>\n__attribute__((destructor)) void late() { puts("late"); }\n',
                             "`.fini_array` section"),
    "global object with a constructor": ('#include <cstdio>\nstruct G { G() { puts("early"); } };\nG g;\n', "`puts`"),
    "namespace-scope initialiser": (
        "__attribute__((noinline)) int f() { return 7; }\nint x = f();\n", "`f()`"),
    "init_array by section attribute": (
        '#include <cstdio>\nstatic void early() { puts("early"); }\n'
        '__attribute__((section(".init_array"), used)) static void (*hook)() = early;\n', "early"),
    "init_array by assembly": (
        '#include <cstdio>\nextern "C" void early() { puts("early"); }\n'
        'asm(".pushsection .init_array,\\"aw\\",@init_array\\n.quad early\\n.popsection\\n");\n',
        "the constructor `early`"),
    # nvcc's registration calls atexit: a submission's own atexit runs at load time
    "atexit defined by the submission": (
        '#include <cstdio>\nextern "C" int atexit(void (*f)(void)) noexcept { puts("early"); return 0; }\n',
        "`atexit`"),
    "atexit defined, calls through the GOT": (
        '#pragma GCC optimize ("no-plt")\n#include <cstdio>\n'
        'extern "C" int atexit(void (*f)(void)) noexcept { puts("early"); return 0; }\n', "`atexit`"),
    "indirect function": (
        '#include <cstdio>\nextern "C" void impl() {}\n'
        'extern "C" void* pick() { puts("early"); return (void*)impl; }\n'
        'extern "C" void chosen() __attribute__((ifunc("pick")));\n', "the indirect function `chosen`"),
    "code in the initialisers' section": (
        '#include <cstdio>\n__attribute__((section(".text.startup"), noinline)) void early() { puts("early"); }\n'
        'extern "C" void call_early() { early(); }\n', "`early()`"),
}


def nvcc_object(folder: Path, code: str) -> Path:
    """``code`` compiled by nvcc into its host object, with the GPU backend's flags."""
    source, obj = folder / "source.cu", folder / "source.o"
    source.write_text(code)
    subprocess.run([tools.nvcc(), *nvcc_flags("sm_90"), "-c", str(source), "-o", str(obj)], check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    return obj


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    out = {}
    for name, code in HONEST.items():
        folder = tmp_path_factory.mktemp("honest")
        out[name] = nvcc_object(folder, code)
    return out


@pytest.mark.parametrize("name", sorted(HONEST))
def test_nvcc_registration_is_admitted(honest, name):
    assert check(honest[name], nvcc=True) == ""


def test_the_registration_is_load_time_code_to_the_gpp_rules(honest):
    """What admits nvcc's objects is the nvcc rule: without it its initialiser is a constructor like any other."""
    message = check(honest["one kernel"])
    assert message.startswith(MESSAGE) and "__sti____cudaRegisterAll" in message, message
    names = {name for item in load_time_code(honest["one kernel"].read_bytes()) for name in NVCC_INITIALISERS
             if name in item}  # fmt: skip
    assert names == {NVCC_INITIALISERS[0]}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_load_time_code_in_nvcc_objects_is_found(tmp_path, name):
    code, found = ATTACKS[name]
    obj = nvcc_object(tmp_path, code + KERNEL + ENTRY)
    message = check(obj, nvcc=True)
    assert message.startswith(MESSAGE) and found in message, message


def test_malformed_nvcc_objects_are_refused_not_raised(honest):
    data = honest["device, constant and managed variables"].read_bytes()
    with pytest.raises(UnreadableLibrary):
        load_time_code(data[: len(data) // 2], nvcc=True)
    rng = random.Random(7)
    for _ in range(200):  # random corruption: an answer or UnreadableLibrary, nothing else
        mutated = bytearray(data)
        for _ in range(8):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        with contextlib.suppress(UnreadableLibrary):
            load_time_code(bytes(mutated), nvcc=True)
