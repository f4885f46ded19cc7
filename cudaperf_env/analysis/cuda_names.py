"""CUDA names the kernel walk recognises: barriers, warp primitives, loads, FMAs, casts; function records."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cudaperf_env.analysis.syntax import child, text

BARRIERS = frozenset(
    {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or", "__barrier_sync"}
)
WARP_PRIMITIVES = re.compile(
    r"^(__shfl\w*|__ballot_sync|__any_sync|__all_sync|__match_\w+|__reduce_\w+_sync|shfl\w*|ballot|"
    r"match_any|match_all|reduce|inclusive_scan|exclusive_scan)$"
)
LOADS = frozenset({"__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"})
STORES = frozenset({"__stcg", "__stcs", "__stwb", "__stwt"})
FMAS = frozenset({"fma", "fmaf", "__fmaf_rn", "__fmaf_rz", "__fmaf_ru", "__fmaf_rd", "__fma_rn", "__hfma", "__hfma2"})
FP_MATH = re.compile(
    r"^(__)?(exp|exp2|exp10|log|log2|log10|sqrt|rsqrt|cbrt|tanh|sinh|cosh|erf|erfc|sin|cos|tan|pow|fabs|"
    r"fmax|fmin|fdivide|frcp_rn|fsqrt_rn|fdiv_rn|fmul_rn|fadd_rn|saturate|floor|ceil|round|trunc)f?(_rn)?$"
)
CASTS = frozenset({"reinterpret_cast", "static_cast", "const_cast"})
HALVING = re.compile(r"^(\w+)(>>=1|/=2|\*=2|<<=1|=\1(>>1|/2|\*2|<<1))$")


@dataclass(frozen=True)
class FunctionDef:
    """A function definition.

    Attributes:
        name: Simple name.
        node: The ``function_definition`` node.
        kind: ``kernel`` (``__global__``), ``device`` or ``host``.
        template_params: Names of non-type template parameters, in order.
        launch_bounds: The first ``__launch_bounds__`` argument, when constant.
        line: Line of the definition.
    """

    name: str
    node: Any
    kind: str
    template_params: tuple[str, ...] = ()
    launch_bounds: int | None = None
    line: int = 0


def callee(node: Any) -> str:
    """The called function's simple name (``"atomicAdd"``, ``"sync"`` for ``block.sync()``), "" if none."""
    function = child(node, "function")
    if function is None:
        return ""
    if function.type == "field_expression":
        return text(child(function, "field"))
    if function.type == "template_function":
        function = child(function, "name") or function
    return text(function).split("::")[-1].split("<")[0].strip()


def first_text(args: list[Any]) -> str:
    """Source text of the first argument node, "" when there is none."""
    return text(args[0]) if args else ""


def mentions_grid(node: Any, grid_vars: set[str]) -> bool:
    """Whether an expression uses ``gridDim`` directly or through a variable defined from it."""
    source = text(node)
    if "gridDim" in source:
        return True
    return bool(grid_vars) and any(name in grid_vars for name in re.findall(r"[A-Za-z_]\w*", source))
