"""Tests for the CPU backend's source pre-pass: launches, shared memory, fibers, rejections."""

from __future__ import annotations

import pytest

from cudaperf_env.backends.cpu.prepass import PrepassResult, Rejection, prepass

KERNELS = """__global__ void k(float* x) { x[0] = 1; }
template <typename T, int N> __global__ void k2(T* x) { x[N] = 0; }
template <typename T> __global__ void k3(T* x) { __syncthreads(); }
namespace ns { __global__ void k4(float* x) { x[0] = 0; } }
"""
FIRST = KERNELS.count("\n") + 2  # user line of the first statement in host()


def lam(kernel: str) -> str:
    return f"[&](auto... cudaperf_a) {{ {kernel}(cudaperf_a...); }}"


def rewritten(statement: str) -> str:
    """The output lines that hold ``statement``, put inside a host function after KERNELS."""
    source = KERNELS + "void host(float* x, int n, cudaStream_t s) {\n" + statement + "\n}\n"
    result = prepass(source)
    assert result.rejections == ()
    lines = result.source.split("\n")
    assert len(lines) == len(source.split("\n")) + 1
    return "\n".join(lines[FIRST : FIRST + statement.count("\n") + 1])


L = f"::cudaperf::launch<false>(\"k\", {FIRST}, "


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("k<<<grid, block>>>(x, n);", f"{L}grid, block, 0, 0, {lam('k')}, x, n);"),
        (
            "k2<float, (N>>1)><<<(n + 255) / 256, 256>>>(x);",
            f'::cudaperf::launch<false>("k2<float, (N>>1)>", {FIRST}, (n + 255) / 256, 256, 0, 0, '
            f"{lam('k2<float, (N>>1)>')}, x);",
        ),
        ("k<<<n >> 8, 256>>>(x);", f"{L}n >> 8, 256, 0, 0, {lam('k')}, x);"),
        (
            "k3<A<int>><<<1, 1>>>(x);",
            f'::cudaperf::launch<true>("k3<A<int>>", {FIRST}, 1, 1, 0, 0, '
            f"{lam('k3<A<int>>')}, x);",
        ),
        ("k<<<g, b, bytes<V<int>>>>>(x);", f"{L}g, b, bytes<V<int>>, 0, {lam('k')}, x);"),
        ("k<<<g, b, sizeof(P<int>)>>>(x);", f"{L}g, b, sizeof(P<int>), 0, {lam('k')}, x);"),
        (
            "k<<<dim3(gx, gy), dim3(16, 16), smem, s>>>(x);",
            f"{L}dim3(gx, gy), dim3(16, 16), smem, s, {lam('k')}, x);",
        ),
        ("k<<<{gx, gy, 1}, {16, 16}>>>(x);", (
            f"{L}{{gx, gy, 1}}, {{16, 16}}, 0, 0, {lam('k')}, x);"
        )),
        (
            "ns::k4<<<1, 1>>>(x);",
            f"::cudaperf::launch<false>(\"ns::k4\", {FIRST}, 1, 1, 0, 0, {lam('ns::k4')}, x);",
        ),
        ("k<<<1, 1>>>();", f"{L}1, 1, 0, 0, {lam('k')});"),
        ("k <<< 1 , 32 >>> ( x );", f"{L} 1 , 32 , 0, 0, {lam('k')},  x );"),
        (
            "table[i]<<<1, 1>>>(x);",
            f"::cudaperf::launch<true>(\"table[i]\", {FIRST}, 1, 1, 0, 0, {lam('table[i]')}, x);",
        ),
        (
            "(use_a ? k : k)<<<1, 1>>>(x);",
            f'::cudaperf::launch<true>("(use_a ? k : k)", {FIRST}, 1, 1, 0, 0, '
            f"{lam('(use_a ? k : k)')}, x);",
        ),
        ("if (n) k<<<1, 1>>>(x);", f"if (n) {L}1, 1, 0, 0, {lam('k')}, x);"),
        (
            "for (int i = 0; i < 3; ++i) k<<<1, 32>>>(x + i);",
            f"for (int i = 0; i < 3; ++i) {L}1, 32, 0, 0, {lam('k')}, x + i);",
        ),
        (
            "auto go = [&](int m) { k<<<m, 1>>>(x); };",
            f"auto go = [&](int m) {{ {L}m, 1, 0, 0, {lam('k')}, x); }};",
        ),
    ],
)
def test_launch_rewrites(statement: str, expected: str) -> None:
    assert rewritten(statement) == expected


def test_multi_line_launch_keeps_every_piece_on_its_line() -> None:
    statement = "k3<float><<<\n    grid,\n    block>>>(x,\n             n);"
    assert rewritten(statement).split("\n") == [
        f'::cudaperf::launch<true>("k3<float>", {FIRST}, ',
        "    grid,",
        f"    block, 0, 0, {lam('k3<float>')}, x,",
        "             n);",
    ]


def test_newlines_and_comments_around_the_chevrons_are_put_back() -> None:
    assert rewritten("k /* the kernel */\n    <<<1, 32>>>(x);").split("\n") == [
        L, f"1, 32, 0, 0, {lam('k')}, x);"
    ]
    assert rewritten("k<<<1, // blocks\n 32>>>\n(x);").split("\n") == [
        f"{L}1, // blocks", f" 32, 0, 0, {lam('k')}, ", "x);"
    ]


def test_launches_inside_macros_keep_continuations() -> None:
    source = (
        "__global__ void k(float* x) { x[0] = 1; }\n"
        "#define LAUNCH(kern, n, ...) \\\n"
        "    kern<<<((n) + 255) / 256, \\\n"
        "           256>>>(__VA_ARGS__)\n"
        "#define RUN_K(p) k<<<1, 1>>>(p)\n"
    )
    lines = prepass(source).source.split("\n")
    assert lines[1:] == [
        "__global__ void k(float* x) { x[0] = 1; }",
        "#define LAUNCH(kern, n, ...) \\",
        "    ::cudaperf::launch<true>(#kern, 3, ((n) + 255) / 256, \\",
        f"           256, 0, 0, {lam('kern')}, __VA_ARGS__)",
        f'#define RUN_K(p) ::cudaperf::launch<false>("k", 5, 1, 1, 0, 0, {lam("k")}, p)',
        "",
    ]


def test_nothing_is_rewritten_in_comments_strings_or_if_zero() -> None:
    source = (
        "// k<<<1, 1>>>(x); extern __shared__ float a[];\n"
        "/* k<<<1, 1>>>(x);\n   extern __shared__ float b[]; */\n"
        'const char* s = "k<<<1, 1>>>(x)";\n'
        'const char* r = R"(k<<<1, 1>>>(x); asm("trap");)";\n'
        "#if 0\nk<<<1, 1>>>(x); asm(\"trap\");\n#endif\n"
    )
    result = prepass(source)
    assert result.source == '#line 1 "submission.cu"\n' + source
    assert result.rejections == ()


def test_output_starts_with_a_line_directive_for_the_file() -> None:
    assert prepass("int a;\n", filename='dir/my "file".cu').source == (
        '#line 1 "dir/my \\"file\\".cu"\nint a;\n'
    )


@pytest.mark.parametrize(
    ("declaration", "expected"),
    [
        (
            "extern __shared__ float smem[];",
            "float* smem = reinterpret_cast<float*>(::cudaperf::dynamic_shared());",
        ),
        (
            "extern __shared__ __align__(16) unsigned char raw[];",
            "unsigned char* raw = reinterpret_cast<unsigned char*>(::cudaperf::dynamic_shared());",
        ),
        (
            "alignas(16) extern __shared__ volatile int s[];",
            "volatile int* s = reinterpret_cast<volatile int*>(::cudaperf::dynamic_shared());",
        ),
        (
            "extern __shared__ Pair<float, int> pairs[];",
            "Pair<float, int>* pairs = "
            "reinterpret_cast<Pair<float, int>*>(::cudaperf::dynamic_shared());",
        ),
        (
            "extern __shared__ float tile[][33];",
            "float (*tile)[33] = reinterpret_cast<float (*)[33]>(::cudaperf::dynamic_shared());",
        ),
        (
            "__shared__ extern T buf[];",
            "T* buf = reinterpret_cast<T*>(::cudaperf::dynamic_shared());",
        ),
    ],
)
def test_dynamic_shared_memory_rewrites(declaration: str, expected: str) -> None:
    source = f"template <class T> __global__ void k(T* x) {{\n    {declaration}\n    x[0] = 0;\n}}"
    result = prepass(source)
    assert result.source.split("\n")[2] == f"    {expected}"
    assert result.rejections == ()


def test_multi_line_shared_declaration_keeps_the_line_count() -> None:
    source = "__global__ void k() {\n    extern __shared__\n        float s[];\n    s[0] = 1;\n}\n"
    lines = prepass(source).source.split("\n")
    assert lines[2] == "    float* s = reinterpret_cast<float*>(::cudaperf::dynamic_shared());"
    assert lines[3:5] == ["", "    s[0] = 1;"]


def kernels_of(source: str) -> dict[str, bool]:
    return dict(prepass(source).kernels)


def test_fibers_follow_device_calls_that_synchronize() -> None:
    source = """
__device__ float leaf(float v) { __syncthreads(); return v; }
__device__ float middle(float v) { return leaf(v) + 1.0f; }
__device__ float pure(float v) { return sqrtf(v) * __expf(v); }
template <typename T> __device__ T wsum(T v) { return v + __shfl_down_sync(0xffffffff, v, 1); }
__global__ void deep(float* x) { x[0] = middle(x[0]); }
__global__ void plain(float* x, int n) { int i = n;
    if (i < n) x[i] = pure(x[i]) + max(1, i); }
__global__ void templ(float* x) { x[0] = wsum<float>(x[0]); }
__global__ void atomics(int* c) { atomicAdd(c, 1); printf("%d", *c); }
"""
    assert kernels_of(source) == {"deep": True, "plain": False, "templ": True, "atomics": False}


def test_fibers_for_cooperative_groups_and_collectives() -> None:
    source = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void block_sync(float* x) { auto b = cg::this_thread_block(); b.sync(); }
__global__ void tile(float* x) {
    auto t = tiled_partition<32>(this_thread_block()); x[0] = t.shfl(x[0], 0); }
__global__ void warp(float* x) { __syncwarp(); }
__global__ void mask(unsigned* x) { x[0] = __activemask(); }
__global__ void vote(int* x) { x[0] = __ballot_sync(0xffffffffu, x[0] > 0); }
__global__ void count(int* x) { x[0] = __syncthreads_count(x[0]); }
"""
    assert all(kernels_of(source).values())
    assert len(kernels_of(source)) == 6


def test_fibers_when_the_callee_is_unknown() -> None:
    source = """
__device__ float (*global_fn)(float) = nullptr;
struct Op { __device__ float operator()(float v) const { return v; } };
__global__ void functor_param(float* x, Op op) { x[0] = op(x[0]); }
template <class F> __global__ void template_functor(float* x, F f) { x[0] = f(x[0]); }
__global__ void fn_pointer(float* x) { x[0] = global_fn(x[0]); }
__global__ void pointer_param(float* x, float (*g)(float)) { x[0] = (*g)(x[0]); }
__global__ void unknown_method(float* x, Thing t) { x[0] = t.compute(); }
__global__ void casts_only(float* x) {
    x[0] = (float)(x[1]) + float(x[2]) + static_cast<float>(x[3]); }
"""
    assert kernels_of(source) == {
        "functor_param": True, "template_functor": True, "fn_pointer": True,
        "pointer_param": True, "unknown_method": True, "casts_only": False,
    }


def test_a_parameter_named_like_a_library_function_stays_local() -> None:
    source = """
__global__ void shadow(float* x, float (*max)(float, float)) { x[0] = max(x[0], x[1]); }
__global__ void library(float* x) { x[0] = max(x[0], x[1]); }
"""
    assert kernels_of(source) == {"shadow": True, "library": False}


def test_fibers_through_lambdas_macros_methods_and_recursion() -> None:
    source = """
#define BARRIER() __syncthreads()
#define SQUARE(v) ((v) * (v))
struct Acc { float s; __device__ void add(float v) { s += v; } };
struct Syncer { __device__ void wait() { __syncthreads(); } };
__device__ int even(int n);
__device__ int odd(int n) { return n == 0 ? 0 : even(n - 1); }
__device__ int even(int n) { return n == 0 ? 1 : odd(n - 1); }
__device__ int ping(int n) { return n == 0 ? 0 : pong(n - 1); }
__device__ int pong(int n) { __syncwarp(); return ping(n); }
__global__ void via_macro(float* x) { BARRIER(); }
__global__ void plain_macro(float* x) { x[0] = SQUARE(x[0]); }
__global__ void method(float* x) { Acc a{0}; a.add(x[0]); x[0] = a.s; }
__global__ void sync_method(float* x) { Syncer s; s.wait(); }
__global__ void lambda_plain(float* x) { auto f = [&](int i) { return x[i] * 2; }; x[0] = f(1); }
__global__ void lambda_sync(float* x) { auto f = [&]() { __syncthreads(); }; f(); }
__global__ void cycle(int* x) { x[0] = odd(x[0]); }
__global__ void cycle_sync(int* x) { x[0] = ping(x[0]); }
__global__ void mentions(float* x) { /* __syncthreads(); */ const char* s = "__syncwarp()"; }
"""
    assert kernels_of(source) == {
        "via_macro": True, "plain_macro": False, "method": False, "sync_method": True,
        "lambda_plain": False, "lambda_sync": True, "cycle": False, "cycle_sync": True,
        "mentions": False,
    }


def test_launch_uses_the_kernels_fiber_decision() -> None:
    source = (
        "__global__ void a(float* x) { x[0] = 0; }\n"
        "__global__ void b(float* x) { __syncthreads(); }\n"
        "void host(float* x) { a<<<1, 1>>>(x); b<<<1, 1>>>(x); undeclared<<<1, 1>>>(x); }\n"
    )
    line = prepass(source).source.split("\n")[3]
    assert '::cudaperf::launch<false>("a"' in line
    assert '::cudaperf::launch<true>("b"' in line
    assert '::cudaperf::launch<true>("undeclared"' in line


def reject(source: str) -> tuple[Rejection, ...]:
    return prepass(source).rejections


def test_rejection_messages_are_pinned() -> None:
    source = (
        "extern __shared__ float smem[];\n"
        "__global__ void child(float* x) { x[0] = 0; }\n"
        "__global__ void parent(float* x) {\n"
        "    asm volatile(\"membar.gl;\");\n"
        "    float v = __shfl_down(x[0], 16);\n"
        "    child<<<1, 32>>>(x);\n"
        "}\n"
        "void host(float* x) { child<<<1>>>(x); }\n"
    )
    assert reject(source) == (
        Rejection(1, "file_scope_shared", (
            "line 1: `extern __shared__` at file scope is not supported on the CPU backend; "
            "declare it inside the kernel that uses it, e.g. `extern __shared__ float smem[];`")),
        Rejection(4, "asm", (
            "line 4: inline PTX `asm` cannot run on the CPU backend; use CUDA C++ intrinsics "
            "instead (__shfl_down_sync, __ldg, atomicAdd, __fmaf_rn, ...)")),
        Rejection(5, "legacy_warp", (
            "line 5: `__shfl_down` without `_sync` was removed in CUDA 9; use "
            "__shfl_down_sync(0xffffffff, ...)")),
        Rejection(6, "dynamic_parallelism", (
            "line 6: launching `child` from device code (dynamic parallelism) is not supported on "
            "the CPU backend; launch every kernel from the host function")),
        Rejection(8, "launch", (
            "line 8: cannot parse this launch (expected 2 to 4 launch parameters (grid, block[, "
            "shared[, stream]]), got 1); write it as kernel<<<grid, block[, shared_bytes[, "
            "stream]]>>>(args...)")),
    )


@pytest.mark.parametrize(
    ("statement", "construct"),
    [
        ("float v = tex1Dfetch<float>(tex, i);", "texture"),
        ("float v = tex2D<float>(tex, 0.5f, 0.5f);", "texture"),
        ("cudaTextureObject_t t = 0;", "texture"),
        ("surf2Dwrite(v, surf, 0, 0);", "texture"),
        ("texture<float, 1> tref;", "texture_reference"),
        ("cg::grid_group g = cg::this_grid(); g.sync();", "grid_sync"),
        ("cudaLaunchCooperativeKernel((void*)k, 1, 1, nullptr);", "grid_sync"),
        ("auto c = cg::this_cluster();", "cluster"),
        ("wgmma_fence();", "cluster"),
        ("nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half> a;", "wmma"),
        ("__pipeline_memcpy_async(dst, src, 16);", "async_copy"),
        ("cudaGraphLaunch(exec, 0);", "cuda_graph"),
        ("unsigned b = __ballot(1);", "legacy_warp"),
        ("int a = __any(1) + __all(1);", "legacy_warp"),
        ("k<<<1, 2;", "launch"),
    ],
)
def test_unsupported_constructs(statement: str, construct: str) -> None:
    found = reject(f"__global__ void k(float* x) {{ x[0] = 0; }}\nvoid h() {{\n    {statement}\n}}")
    assert found and {r.construct for r in found} == {construct}
    assert all(r.line == 3 and r.message.startswith("line 3: ") for r in found)


def test_cluster_dims_attribute_and_a_device_side_launch_in_a_device_function() -> None:
    source = (
        "__global__ void __cluster_dims__(2, 1, 1) k(float* x) { x[0] = 0; }\n"
        "__device__ void spawn(float* x) { k<<<1, 1>>>(x); }\n"
    )
    assert [(r.line, r.construct) for r in reject(source)] == [
        (1, "cluster"), (2, "dynamic_parallelism")
    ]


def test_result_types_are_immutable() -> None:
    result = prepass("__global__ void k() {}\n")
    assert isinstance(result, PrepassResult)
    with pytest.raises(TypeError):
        result.kernels["k"] = True  # type: ignore[index]


def test_device_variables_become_references_to_device_storage_and_keep_their_lines() -> None:
    source = (
        "typedef float T;\nconstexpr int K = 5;\n__constant__ T cw[K];\n__device__ float scale;\n"
        "__device__ int table[4] = {1, 2,\n 3, 4};\nstatic __device__ volatile int flag = 0;\n"
        "namespace ns { __device__ double z[2][3]; }\n"
    )
    out = prepass(source).source.split("\n", 1)[1]
    assert out.count("\n") == source.count("\n")
    assert "__constant__ T (&cw)[K] = ::cudaperf::device_variable<T[K]>();" in out
    assert "__device__ float & scale = ::cudaperf::device_variable<float>();" in out
    assert "__device__ int (&table)[4] = ::cudaperf::device_variable<int[4]>({1, 2, 3, 4});\n\n" in out
    assert "static __device__ volatile int & flag = ::cudaperf::device_variable<volatile int>(0);" in out
    assert "double (&z)[2][3] = ::cudaperf::device_variable<double[2][3]>();" in out


def test_file_scope_host_arrays_get_storage_in_the_host_arena() -> None:
    source = (
        "static float table[4] = {1.0f,\n 2.0f};\nunsigned char lut[256];\n"
        'extern "C" { int counts[3]; }\nnamespace ns { double grid[2][3]; }\n'
        'extern "C" void f(int n) { float local[4]; for (int i = 0; i < n; ++i) local[i % 4] = 0; }\n'
        "static const float coeffs[3] = {0.25f, 0.5f, 0.25f};\n"
    )
    result = prepass(source)
    out = result.source.split("\n", 1)[1]
    assert out.count("\n") == source.count("\n")
    assert "static float (&table)[4] = ::cudaperf::host_variable<float[4]>({1.0f, 2.0f});\n\n" in out
    assert "unsigned char (&lut)[256] = ::cudaperf::host_variable<unsigned char[256]>();" in out
    assert "int (&counts)[3] = ::cudaperf::host_variable<int[3]>();" in out
    assert "double (&grid)[2][3] = ::cudaperf::host_variable<double[2][3]>();" in out
    assert "float local[4];" in out  # a function's body is not file scope
    assert "static const float (&coeffs)[3] = ::cudaperf::host_variable<const float[3]>({0.25f, 0.5f, 0.25f});" in out
    assert result.device_variables == ("table", "lut", "counts", "grid", "coeffs")  # their initialisers run at load


@pytest.mark.parametrize("declaration", [
    "const int c[2] = {1, 2};",  # integral constants: usable in constant expressions
    "static const unsigned char lut[2] = {1, 2};",
    "constexpr int k[2] = {1, 2};",
    "int scalar = 3;",  # not an array
    "thread_local int t[4];",  # per thread
    "int a[2], b[3];",  # several declarators
    "alignas(64) float v[16];",  # attributes
    "int u[] = {1, 2};",  # an unsized array
    "extern int e[4];",
    "struct S { int m[4]; };",
    "using A = int[4];",
])  # fmt: skip
def test_host_declarations_it_cannot_rewrite_faithfully_are_left_alone(declaration: str) -> None:
    assert "host_variable" not in prepass(declaration).source


@pytest.mark.parametrize("declaration", [
    "__device__ const int N = 16;",  # a constant: usable in constant expressions, left alone
    "__device__ int a, b;",  # several declarators
    "__device__ float f(float x);",  # a function
    "__device__ __align__(16) float v[4];",  # attributes
    "__device__ int u[] = {1, 2};",  # an unsized array
    "extern __device__ int e;",
    "struct S { __device__ float g(); };",
    "__global__ void k() { __device__ int local; }",
])  # fmt: skip
def test_device_declarations_it_cannot_rewrite_faithfully_are_left_alone(declaration: str) -> None:
    assert "device_variable" not in prepass(declaration).source
