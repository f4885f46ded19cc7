"""Shared pieces of the family generators: structure enumeration, boundary reads, operator spellings."""

import re

import pytest

from cudaperf_env.datagen.families.boundary import read_body
from cudaperf_env.datagen.families.common import grid, nth
from cudaperf_env.datagen.families.operators import FLOAT_EPILOGUES, float_epilogue, int_epilogue, to_double


@pytest.mark.parametrize("count", [1, 2, 7, 48, 96, 384])
def test_nth_takes_every_option_once_in_the_first_variants_then_repeats(count):
    options = list(range(count))
    first = [nth(v, options) for v in range(count)]
    assert sorted(first) == options
    assert [nth(v + count, options) for v in range(count)] == first


def test_nth_spreads_the_first_variants_over_every_axis():
    structures = grid(("float32", "float64"), ("a", "b", "c"), range(16))
    first = [nth(v, structures) for v in range(8)]
    assert {s[0] for s in first} == {"float32", "float64"} and {s[1] for s in first} == {"a", "b", "c"}


def test_grid_is_the_product_in_order():
    assert grid((1, 2), "xy") == [(1, "x"), (1, "y"), (2, "x"), (2, "y")]


def test_read_body_spells_each_boundary_rule():
    assert read_body("zero", "float", ["n"], ["i"]) == "return (i < 0 || i >= n) ? (float)(0) : x[i];"
    assert read_body("valid", "float", ["n"], ["i"]) == "return (i >= n) ? (float)(0) : x[i];"
    assert read_body("constant", "double", ["h", "w"], ["r", "c"], array="u", outside="0.5") == (
        "return (r < 0 || r >= h || c < 0 || c >= w) ? (double)(0.5) : u[(long)r * w + c];"
    )
    assert read_body("clamp", "int", ["n"], ["i"]) == "return x[(i < 0 ? 0 : (i >= n ? n - 1 : i))];"
    assert read_body("periodic", "int", ["d", "h", "w"], ["z", "r", "c"]) == (
        "return x[(long)(((z) % d + d) % d) * h * w + (long)(((r) % h + h) % h) * w + (((c) % w + w) % w)];"
    )
    with pytest.raises(ValueError, match="unknown boundary rule 'mirror'; expected one of zero, clamp"):
        read_body("mirror", "float", ["n"], ["i"])


def test_epilogues_are_spelled_per_dtype_around_any_operand():
    assert float_epilogue(0, "float32", 1.5) == "v"
    assert float_epilogue(4, "float64", 1.5, var="(2.0 * acc)") == "tanh((2.0 * acc))"
    assert float_epilogue(1, "float32", 1.5, var="acc") == "1.5f * acc"
    doubles = " ".join(float_epilogue(i, "float64", 1.0) for i in range(len(FLOAT_EPILOGUES)))
    assert not re.search(r"\b(tanhf|expf|fabsf|sqrtf|atanf|logf|erff)\(|\d\.\d+f\b", doubles)
    assert int_epilogue(2, 3, 77, var="s") == "s ^ 77"
    assert to_double("fmodf(cbrtf(x), 2.0f) + 1e-3f") == "fmod(cbrt(x), 2.0) + 1e-3"
