"""Shared pieces of the family generators: C types, argument lists, templates, the task dict."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

import numpy as np

CTYPE = {"float32": "float", "float64": "double", "int32": "int", "uint8": "unsigned char", "uint32": "unsigned int"}
SUFFIX = {"float32": "_f32", "float64": "_f64", "int32": "_i32", "uint8": "_u8", "uint32": "_u32"}
# Elementwise tolerance of float outputs whose kernels use the same formula as the reference.
TOL_MAP = {"float32": {"rtol": 1.0e-4, "atol": 1.0e-5}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-11}}
# Sums of thousands of terms in a different order (tree vs sequential).
TOL_SUM = {"float32": {"rtol": 1.0e-3, "atol": 1.0e-3}, "float64": {"rtol": 1.0e-9, "atol": 1.0e-9}}


def fill(template: str, **values: object) -> str:
    """``template`` with ``$name`` placeholders replaced; a missing value raises KeyError."""
    return Template(template).substitute({k: str(v) for k, v in values.items()})


def lit(value: float, dtype: str) -> str:
    """A C literal of ``value`` in ``dtype`` (``1.5f`` for float32)."""
    if dtype == "int32":
        return str(int(value))
    text = repr(float(round(value, 4)))
    return text + "f" if dtype == "float32" else text


def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    """One element of ``options``, drawn with ``rng``."""
    return options[int(rng.integers(len(options)))]


def grid(*axes: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every combination of one option per axis, in ``itertools.product`` order."""
    return list(itertools.product(*axes))


def nth(variant: int, options: Sequence[Any]) -> Any:
    """Option ``variant`` of ``options`` in a fixed spread-out order.

    Variants ``0 .. len(options) - 1`` each get a different option, so a family that
    takes its structure from ``nth(variant, grid(...))`` yields as many distinct
    tasks as it has structures; the order strides through the options (by a step
    coprime with their count, near the golden ratio) so that the first few variants
    already differ in every axis. Later variants repeat the cycle.
    """
    n = len(options)
    step = next(s for s in itertools.count(max(1, round(0.618 * n))) if math.gcd(s, n) == 1)
    return options[(variant * step) % n]


def scalar(name: str, dtype: str, value: str | int | float) -> dict[str, Any]:
    """A scalar argument."""
    return {"name": name, "role": "scalar", "dtype": dtype, "value": value}


def buffer(name: str, role: str, dtype: str, shape: Sequence[str | int], init: Mapping[str, Any] | None = None
           ) -> dict[str, Any]:  # fmt: skip
    """A buffer argument (``in``, ``out`` or ``inout``)."""
    arg: dict[str, Any] = {"name": name, "role": role, "dtype": dtype, "shape": list(shape)}
    if init:
        arg["init"] = dict(init)
    return arg


def params(args: Sequence[Mapping[str, Any]]) -> str:
    """The C parameter list of ``args`` (``int n, const float* x, float* y``)."""
    out = []
    for a in args:
        ctype = CTYPE[a["dtype"]]
        if a["role"] == "scalar":
            out.append(f"{ctype} {a['name']}")
        else:
            out.append(f"{'const ' if a['role'] == 'in' else ''}{ctype}* {a['name']}")
    return ", ".join(out)


def names(args: Sequence[Mapping[str, Any]]) -> str:
    """The argument names of ``args`` as a call's argument list."""
    return ", ".join(a["name"] for a in args)


def impl(name: str, strategies: Sequence[str], source: str) -> dict[str, Any]:
    """One implementation entry, with an empty ``labels`` slot for GPU timings."""
    return {"name": name, "strategies": list(strategies), "source": source.strip() + "\n", "labels": []}


def task(
    *,
    name: str,
    family: str,
    description: str,
    entry: str,
    args: Sequence[Mapping[str, Any]],
    configs: Sequence[Mapping[str, int]],
    hidden: Sequence[Mapping[str, int]],
    perf: Sequence[Mapping[str, int]],
    reference: str,
    implementations: Sequence[Mapping[str, Any]],
    tolerance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A task as the mapping of docs/task-format.md; the first implementation is the baseline."""
    data: dict[str, Any] = {
        "schema": 1,
        "id": f"c2cuda/{name}",
        "kind": "c2cuda",
        "family": family,
        "description": " ".join(description.split()),
        "entry": entry,
        "args": [dict(a) for a in args],
        "configs": [dict(c) for c in configs],
        "hidden_configs": [dict(c) for c in hidden],
        "perf_configs": [dict(c) for c in perf],
        "reference": {"language": "c", "source": reference.strip() + "\n"},
        "baseline": implementations[0]["name"],
        "implementations": [dict(i) for i in implementations],
    }
    if tolerance:
        data["tolerance"] = dict(tolerance)
    return data
