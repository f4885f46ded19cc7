"""Bundling many implementations into one nvcc build (real nvcc; no GPU needed)."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudaperf_env.backends.cuda.backend import nvcc_flags
from cudaperf_env.backends.harness import CALL_SYMBOL, wrap
from cudaperf_env.datagen.bundle import (
    build_bundle,
    build_bundles,
    bundle_blockers,
    bundle_source,
    failing_units,
    plan_bundles,
)
from cudaperf_env.dataset.load import load_dataset
from cudaperf_env.tasks import load_tasks
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.native import build_library

ARCH = "sm_90"


@pytest.fixture(scope="module")
def saxpy():
    return load_tasks()["c2cuda/saxpy_f32"]


def saxpy_source(body: str = "y[i] = a * x[i] + y[i];", prelude: str = "", kernel: str = "k") -> str:
    return (
        f"{prelude}__global__ void {kernel}(int n, float a, const float* x, float* y) {{\n"
        f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {{ {body} }}\n}}\n"
        f'extern "C" void saxpy(int n, float a, const float* x, float* y) {{ {kernel}<<<(n + 255) / 256, 256>>>'
        f"(n, a, x, y); }}\n"
    )


def exported(library) -> set[str]:
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) not found")
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines()}


def kernels_sass(library) -> dict[str, list[str]]:
    """Each kernel's SASS instructions by demangled name, with the bundle's namespace removed."""
    cuobjdump = Path(tools.nvcc()).parent / "cuobjdump"
    if not cuobjdump.exists() or not shutil.which("c++filt"):
        pytest.skip("cuobjdump or c++filt not found")
    out = subprocess.run([str(cuobjdump), "-sass", str(library)], capture_output=True, text=True, check=True).stdout
    kernels: dict[str, list[str]] = {}
    for line in out.splitlines():
        if m := re.match(r"\s*Function : (\S+)", line):
            code = kernels.setdefault(m.group(1), [])
        elif m := re.match(r"\s*/\*[0-9a-f]{4}\*/\s+(.*?);", line):
            code.append(m.group(1))
    names = subprocess.run(["c++filt"], input="\n".join(kernels), capture_output=True, text=True, check=True)
    return {re.sub(r"cudaperf_unit\d+_::", "", name): code
            for name, code in zip(names.stdout.splitlines(), kernels.values(), strict=True)}  # fmt: skip


# --- the source transformation (pure) ---------------------------------------------------------------------------


def test_unit_keeps_its_lines_and_only_code_mentions_of_the_entry_are_renamed(saxpy):
    source = (
        "#include <math.h>\n"
        "// saxpy in a comment stays\n"
        + saxpy_source('const char* s = "saxpy"; y[i] = a * x[i] + y[i] + s[0];')
        + "#define CALL_ENTRY saxpy\n"
    )
    bundle = bundle_source([(saxpy, source), (saxpy, saxpy_source())])
    assert bundle.symbols == ("cudaperf_call_0", "cudaperf_call_1")
    assert bundle.source.count("#include <math.h>") == 1  # hoisted once, above every namespace
    assert bundle.source.index("#include <math.h>") < bundle.source.index("namespace cudaperf_unit0_")
    unit = bundle.source.split('#line 1 "unit0.cu"\n')[-1].split("#line")[0]  # the first one heads the include
    expected = (
        source.replace("#include <math.h>", "")
        .replace('extern "C" void saxpy(', 'extern "C" void saxpy_cudaperf_unit0_(')
        .replace("#define CALL_ENTRY saxpy", "#define CALL_ENTRY saxpy_cudaperf_unit0_")
    )
    assert unit == expected  # same lines; the comment and the string keep `saxpy`
    assert 'extern "C" int cudaperf_call_1(void** argv, char* err, int err_len)' in bundle.source
    assert "saxpy_cudaperf_unit1_(*(int*)argv[0], *(float*)argv[1], (const float*)argv[2], (float*)argv[3]);" in (
        bundle.source
    )


def test_every_macro_a_unit_defines_or_undefines_is_restored_after_it(saxpy):
    source = "#define TILE 32\n#undef M_PI\n#define M_PI 3\n" + saxpy_source()
    text = bundle_source([(saxpy, source)]).source
    for name in ("TILE", "M_PI"):
        push, pop = text.index(f'#pragma push_macro("{name}")'), text.index(f'#pragma pop_macro("{name}")')
        assert push < text.index("#define TILE 32") < text.index(f"#undef {name}\n#pragma pop_macro") < pop + 1


def test_plan_groups_units_by_include_set_in_even_chunks(saxpy):
    plain, with_math = (saxpy, saxpy_source()), (saxpy, "#include <math.h>\n" + saxpy_source())
    units = [plain, with_math] * 5 + [plain]
    assert plan_bundles(units, size=4) == [[0, 2, 4], [6, 8, 10], [1, 3], [5, 7, 9]]


def test_the_log_names_the_failing_units_by_file_or_mangled_namespace():
    log = "\n".join([
        'unit3.cu(12): error: identifier "q" is undefined',
        'unit4.cu(2): warning #177-D: variable "error" was declared but never referenced',  # a warning: innocent
        'unit7.cu(5): error #20: identifier "q" is undefined',
        "/usr/include/x.h(10): error: no instance of overloaded function",
        '          detected during instantiation of "f<T>" at line 7 of unit5_harness.cu',
        "unit6.cu:9:3: error: 'g' was not declared in this scope",
        "ptxas error   : Entry function '_ZN16cudaperf_unit11_1kEv' uses too much shared data",
        "ptxas error   : File uses too much global constant data (0x13880 bytes, 0x10000 max)",
    ])  # fmt: skip
    assert failing_units(log) == {3, 5, 6, 7, 11}


BLOCKED = {
    'extern "C" { void helper(int n) {} }\n': 'an `extern "C" { ... }` block',
    'extern "C" int other(int v) { return v; }\n': '`extern "C"` declares `other`',
    "namespace std { template <> struct hash<float4>; }\n": "reopens `namespace std`",
    "template <> struct std::hash<float4> {};\n": "specializes a library template",
    "#pragma pack(push, 1)\n": "`#pragma pack` may change state",
    "#define _USE_MATH_DEFINES\n#include <math.h>\n": "an `#include` after a `#define`",
    "#ifdef X\n#include <cstdio>\n#endif\n": "inside `#if` cannot be hoisted",
    "__device__ float max(float a, float b) { return a > b ? a : b; }\n": "defines `max` at file scope",
    "static float* workspace = make_workspace();\n": "a global with a dynamic initializer",
    'asm(".globl marker");\n': "file-scope `asm`",
    "__device__ float two(float v) { return ::two2(v); }\n__device__ float two2(float v) { return v; }\n": (
        "`::two2` names the global scope"
    ),
    "struct S { int saxpy; };\n__device__ int get(S s) { return s.saxpy; }\n": "`saxpy` also names a member",
}


@pytest.mark.parametrize("prelude", BLOCKED)
def test_constructs_that_change_meaning_in_a_namespace_block_bundling(saxpy, prelude):
    source = saxpy_source(prelude=prelude)
    (reason,) = bundle_blockers(saxpy, source)
    assert BLOCKED[prelude] in reason
    with pytest.raises(ValueError, match=r"unit 0 \(c2cuda/saxpy_f32\) cannot be bundled: .*; build it alone"):
        bundle_source([(saxpy, source)])


WORKS_IN_A_NAMESPACE = [
    "using namespace std;\n",
    "namespace { __device__ float twice(float v) { return 2 * v; } }\n",
    "static const int BLOCK = 256;\nconstexpr float SCALE = 2.0f;\ntypedef float real;\n",
    "template <typename T> __device__ T sq(T v) { return v * v; }\ntemplate <> __device__ int sq(int) { return 1; }\n",
    "__constant__ float coef[4];\nvoid upload(const float* c) { cudaMemcpyToSymbol(coef, c, sizeof coef); }\n",
    "struct Acc { __device__ float max(float a, float b) const { return fmaxf(a, b); } };\n",
    "struct Counter { int calls; Counter() : calls(0) {} };\nstatic Counter counter;\n",
    "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\nextern __shared__ float smem[];\n",
    "#define M(x) ((x) * 2)\n#undef M\n",
]


@pytest.mark.parametrize("prelude", WORKS_IN_A_NAMESPACE)
def test_constructs_that_work_in_a_namespace_do_not_block(saxpy, prelude):
    assert bundle_blockers(saxpy, saxpy_source(prelude=prelude)) == ()


# --- real builds --------------------------------------------------------------------------------------------------


def test_all_starter_and_a_dataset_sample_bundle_and_export_every_call_symbol():
    starters = [(t, impl.source) for t in load_tasks().values() for impl in t.implementations]
    tasks = sorted(load_dataset().values(), key=lambda t: t.id)
    sample = [(t, t.implementations[0].source) for t in tasks[::20]]
    units = starters + sample
    results = build_bundles(units, ARCH, size=48, workers=2)
    assert all(r.ok for r in results), [r.log for r in results if not r.ok][:1]
    groups = plan_bundles(units, size=48)
    assert {k for k, r in enumerate(results) if not r.bundled} == {g[0] for g in groups if len(g) == 1}
    assert len({r.library for r in results if r.bundled}) == sum(len(g) > 1 for g in groups)
    for library in {r.library for r in results}:
        assert {r.symbol for r in results if r.library == library} <= exported(library)


def test_constructs_that_work_in_a_namespace_compile_together(saxpy):
    results = build_bundle([(saxpy, saxpy_source(prelude=p)) for p in WORKS_IN_A_NAMESPACE], ARCH)
    assert all(r.bundled for r in results), [r.log for r in results if not r.bundled]


def test_units_with_the_same_names_and_macros_are_isolated(saxpy):
    first = saxpy_source(
        prelude="#define SCALE 2\n#undef M_PI\n#define M_PI 3\n__constant__ float coef[4];\n",
        body='static_assert(SCALE == 2, "own macro"); y[i] = coef[0] * x[i];',
    )
    second = saxpy_source(
        prelude='#ifdef SCALE\n#error "SCALE leaked"\n#endif\n#define SCALE 3\n__constant__ double coef[8];\n',
        body='static_assert(SCALE == 3, "own macro"); y[i] = (float)coef[7] * x[i];',
        kernel="k",
    )
    third = saxpy_source(
        prelude="#include <math.h>\n",  # M_PI is the header's again, not the first unit's
        body='static_assert(M_PI > 3.14 && M_PI < 3.15, "M_PI restored"); y[i] = a * x[i];',
    )
    results = build_bundle([(saxpy, first), (saxpy, second), (saxpy, third)], ARCH)
    assert [r.bundled for r in results] == [True, True, True], [r.log for r in results]
    symbols = exported(results[0].library)
    assert {"cudaperf_call_0", "cudaperf_call_1", "cudaperf_call_2"} <= symbols
    assert {f"saxpy_cudaperf_unit{k}_" for k in range(3)} <= symbols and "saxpy" not in symbols


def test_a_unit_that_does_not_compile_loses_no_other_unit(saxpy):
    bad = saxpy_source(body="y[i] = a * x[i] + undefined_name;")  # line 3
    blocked = saxpy_source(prelude='extern "C" int other(int v) { return v; }\n')
    units = [(saxpy, saxpy_source()), (saxpy, bad), (saxpy, saxpy_source(kernel="k2")), (saxpy, blocked)]
    good, failed, good2, alone = build_bundle(units, ARCH)
    assert good.bundled and good2.bundled and good.library == good2.library
    assert (good.symbol, good2.symbol) == ("cudaperf_call_0", "cudaperf_call_2")
    assert not failed.ok and not failed.bundled and failed.note == "named in the errors of its bundle"
    assert re.search(r'submission\.cu\(3\): error: identifier "undefined_name" is undefined', failed.log)
    assert alone.ok and not alone.bundled and alone.symbol == CALL_SYMBOL and "`other`" in alone.note


def test_units_that_fail_only_together_are_bisected_apart(saxpy):
    big = saxpy_source(prelude="__constant__ float table[10000];\n", body="y[i] = table[i % 10000] * x[i];")
    units = [(saxpy, big), (saxpy, big.replace("table", "table2"))]  # 40 kB each; a module holds 64 kB
    results = build_bundle(units, ARCH)
    assert all(r.ok and not r.bundled for r in results)
    assert results[0].note == "bisected out of a bundle that failed without naming a unit"


def test_bundled_kernels_compile_to_the_same_sass_as_alone():
    """Templates and a ``__constant__`` filter uploaded with cudaMemcpyToSymbol: same machine code, same timing."""
    gather, conv = load_tasks()["c2cuda/gather_rows_f32"], load_dataset()["c2cuda/conv1d_0000"]
    units = [(gather, gather.implementation("warp_per_row_vec4").source),
             (conv, conv.implementation("const_filter").source)]  # fmt: skip
    built = build_bundle(units, ARCH)
    bundled = kernels_sass(built[0].library)
    alone = {}
    for task, source in units:
        single = build_library(tools.nvcc(), nvcc_flags(ARCH), wrap(task, source), ".cu")
        alone.update(kernels_sass(single.library))
    assert len(alone) >= 3 and bundled == alone


CALL = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
call = getattr(lib, sys.argv[2])
call.restype, call.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int]
n, a = ctypes.c_int(0), ctypes.c_float(2.0)
argv = (ctypes.c_void_p * 4)(ctypes.addressof(n), ctypes.addressof(a), None, None)
err = ctypes.create_string_buffer(256)
print(json.dumps({"rc": call(argv, err, 256), "err": err.value.decode()}))
"""


def test_a_bundled_symbol_is_called_like_cudaperf_call(saxpy):
    """``int (void** argv, char* err, int err_len)``: here (no driver) it returns the CUDA error and names it."""
    second = build_bundle([(saxpy, saxpy_source(prelude=p)) for p in WORKS_IN_A_NAMESPACE], ARCH)[1]  # cached
    out = subprocess.run([sys.executable, "-c", CALL, str(second.library), second.symbol],
                         capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    reply = json.loads(out.stdout)
    assert (reply["rc"] == 0) == (reply["err"] == ""), reply  # a grid of 0 blocks may or may not be an error
    assert reply["rc"] == 0 or reply["err"].startswith("cuda"), reply
