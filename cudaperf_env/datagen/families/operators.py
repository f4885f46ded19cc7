"""Operator tables shared by the families: float epilogues and integer post-maps, spelled per dtype.

Expressions are written in float32 spelling (``tanhf``, ``1.0f``); :func:`to_double`
rewrites them for float64. ``$c`` stands for a positive constant drawn by the family.
"""

from __future__ import annotations

import re

from cudaperf_env.datagen.families.common import fill, lit

# Epilogues of a computed value v. None maps a whole range of inputs to one constant (no relu, no hard clamp), so
# outputs keep their spread, and each has a bounded derivative where inputs are O(10), so a kernel's rounding
# stays within tolerance.
FLOAT_EPILOGUES = (
    "v", "$c * v", "v + $c", "v > 0.0f ? v : $c * v", "tanhf(v)", "1.0f / (1.0f + expf(-v))",
    "v / (1.0f + fabsf(v))", "fabsf(v)", "v * tanhf(v)", "sqrtf(fabsf(v) + $c)", "$c * tanhf(v / $c)",
    "v * v", "atanf(v)", "logf(1.0f + fabsf(v))", "v / (1.0f + expf(-v))", "erff(v)",
)  # fmt: skip
# Post-maps of a pixel value v: float32 (about [0, 1]), or uint8 computed in int with sat()
# clamping to [0, 255].
FLOAT_POSTS = ("v", "1.0f - v", "v * v", "sqrtf(fabsf(v))", "fminf(v * $c, 1.0f)", "0.5f * v + 0.25f")
U8_POSTS = ("v", "255 - v", "sat(v + $k)", "sat((v * $m) >> 8)", "sat((v - 128) * 2 + 128)", "v > $k ? 255 : 0")
# Integer post-maps that cannot overflow for |v| < 2^24.
INT_EPILOGUES = ("v", "v + $k", "v ^ $m", "v & $m", "v % $k", "v >> 2", "v < 0 ? -v : v", "v > $k ? v : $k")

_FUNCTIONS = "sin|cos|tan|tanh|fabs|fmax|fmin|exp|log|sqrt|atan|erf|atan2|floor|ceil|pow|hypot|fmod|cbrt"
_DOUBLE_FN = re.compile(rf"\b({_FUNCTIONS})f\b")
_FLOAT_LIT = re.compile(r"\b(\d+(?:\.\d+)?(?:e-?\d+)?)f\b")


def to_double(expr: str) -> str:
    """A float32 expression rewritten for float64 (``sinf`` -> ``sin``, ``1.0f`` -> ``1.0``)."""
    return _FLOAT_LIT.sub(r"\1", _DOUBLE_FN.sub(r"\1", expr))


def spell(expr: str, dtype: str) -> str:
    """``expr`` (float32 spelling) as written for ``dtype``."""
    return to_double(expr) if dtype == "float64" else expr


def float_epilogue(index: int, dtype: str, c: float, var: str = "v") -> str:
    """Epilogue ``index`` of :data:`FLOAT_EPILOGUES` applied to ``var``, spelled for ``dtype``."""
    text = fill(FLOAT_EPILOGUES[index], c=lit(c, "float32"))
    if var != "v":
        text = re.sub(r"\bv\b", var, text)
    return spell(text, dtype)


def int_epilogue(index: int, k: int, m: int, var: str = "v") -> str:
    """Integer post-map ``index`` of :data:`INT_EPILOGUES` applied to ``var`` (``k`` > 1, ``m`` a mask)."""
    text = fill(INT_EPILOGUES[index], k=k, m=m)
    return re.sub(r"\bv\b", var, text) if var != "v" else text
