"""Tests for finding function definitions, macros and launches in a translation unit."""

from __future__ import annotations

import time

from cudaperf_env.source.launches import find_launches
from cudaperf_env.source.unit import parse


def names(source: str) -> list[tuple[str, bool, int]]:
    return [(f.name, f.is_kernel, f.line) for f in parse(source).functions]


def test_functions_at_namespace_class_and_extern_c_scope() -> None:
    source = """#include <cuda_runtime.h>
namespace outer { namespace inner {
template <typename T, int N = (4 > 2)>
__global__ void __launch_bounds__(256, 2) kern(const T* __restrict__ x) { if (x) { return; } }
} }
struct Functor {
    Functor(int a) : a_(a), b_{a} { init(); }
    __device__ float operator()(float v) const { return v * a_; }
    bool operator<(const Functor& o) const { return a_ < o.a_; }
  private:
    void init() {}
    int a_; int b_;
};
[[nodiscard]] static inline int helper(int v) { return v; }
auto lambda = [](int v) { return v; };
int table[] = {1, 2, 3};
template <> __device__ float twice<float>(float v) { return 2 * v; }
extern "C" {
void entry(int n) { for (int i = 0; i < n; ++i) {} }
}
"""
    assert names(source) == [
        ("kern", True, 4), ("Functor", False, 7), ("operator()", False, 8),
        ("operator<", False, 9), ("init", False, 11), ("helper", False, 14),
        ("twice", False, 17), ("entry", False, 19),
    ]


def test_specifiers_through_object_like_macros() -> None:
    unit = parse("#define DEV __device__ __forceinline__\n#define KERNEL __global__\n"
                 "DEV float f(float x) { return x; }\nKERNEL void k() {}\n")
    assert [sorted(f.specifiers) for f in unit.functions] == [
        ["__device__", "__forceinline__"], ["__global__"]
    ]
    assert unit.functions[0].on_device and not unit.functions[0].is_kernel


def test_enclosing_function_of_a_token() -> None:
    unit = parse("int a;\nvoid f() { int b; }\nvoid g() { int c; }\n")
    by_text = {t.text: k for k, t in enumerate(unit.code)}
    assert unit.enclosing(by_text["a"]) is None
    enclosing_b = unit.enclosing(by_text["b"])
    enclosing_c = unit.enclosing(by_text["c"])
    assert enclosing_b is not None and enclosing_b.name == "f"
    assert enclosing_c is not None and enclosing_c.name == "g"


def test_macros_function_like_and_object_like() -> None:
    unit = parse("#define N 256\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define F (x)\n")
    assert unit.macros["N"].params is None
    assert unit.macros["MAX"].params == ("a", "b")
    assert unit.macros["F"].params is None  # a space before "(" makes it object-like
    assert [t.text for t in unit.macros["N"].body] == ["256"]


def test_launch_details() -> None:
    unit = parse("void h() {\n  ns::k<float, 4><<<g,\n b, 0>>>(x, y);\n  k<<<1, 1>>>();\n}\n")
    launches, errors = find_launches(unit.code, unit.partner)
    assert errors == ()
    first, second = launches
    assert (first.kernel, first.name, first.line, first.parts, first.has_args) == (
        "ns::k<float, 4>", "k", 2, 3, True
    )
    assert unit.source[first.chevrons : first.closer] == "g,\n b, 0"
    assert unit.source[first.args : first.end] == "x, y)"
    assert (second.name, second.parts, second.has_args) == ("k", 2, False)


def test_launch_errors() -> None:
    unit = parse("void h() { <<<1, 1>>>(x); k<<<1, 1>>>; k<<<1, 2, 3, 4, 5>>>(x); }")
    _, errors = find_launches(unit.code, unit.partner)
    assert [e.reason for e in errors] == [
        "no kernel name before <<<",
        "no >>>( after the launch configuration",
        "expected 2 to 4 launch parameters (grid, block[, shared[, stream]]), got 5",
    ]


def test_deep_nesting_does_not_recurse() -> None:
    def seconds(source: str) -> float:
        started = time.perf_counter()
        assert [f.name for f in parse(source).functions] == ["f"]
        return time.perf_counter() - started

    flat = seconds("namespace a {}" * 5000 + "void f() {}")  # as long, not nested: the same run's baseline
    deep = seconds("namespace a {" * 5000 + "void f() {}" + "}" * 5000)
    assert deep < 10 * flat + 0.5  # linear in the depth (0.03 s each here), whatever the machine's load
