"""How an expression varies across the threads of a warp: the abstract values of the static analysis.

The analysis asks one question of every index expression: when ``threadIdx.x``
grows by one (the next lane of a warp), how does the value change? The answer
is a :class:`Value`:

- ``uniform``: the same in every lane of a warp (constants, parameters,
  ``blockIdx``, ``threadIdx.y`` and ``.z``: see below);
- ``linear``: changes by ``stride`` per lane, an integer or a symbolic
  expression such as ``"n"`` (``i * n`` with ``i`` linear);
- ``indirect``: read from memory with a per-lane index (``x[idx[i]]``);
- ``unknown``: anything else (products of two lane-varying values, division
  by a small number, calls of unknown functions).

Division of a unit-stride lane index by a run-time value (``e / width``)
counts as warp-uniform: such divisors are row lengths, assumed to be at least
``UNIFORM_DIVISOR``.

``threadIdx.y`` and ``.z`` count as warp-uniform, which holds when
``blockDim.x`` is a multiple of 32; ``per_thread`` still records that such a
value differs between the threads of a block, which is what matters for
barriers. Every function here is pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

UNIFORM = "uniform"
LINEAR = "linear"
INDIRECT = "indirect"
UNKNOWN = "unknown"
KINDS = (UNIFORM, LINEAR, INDIRECT, UNKNOWN)

# Divisors at least this large turn a unit-stride lane index into (nearly)
# warp-uniform values: `threadIdx.x / 32` takes one value per warp, `/ 16` two.
UNIFORM_DIVISOR = 16


@dataclass(frozen=True)
class Value:
    """An abstract value.

    Attributes:
        kind: ``uniform``, ``linear``, ``indirect`` or ``unknown``.
        stride: Change per lane (``linear`` only): an int, or a short symbolic text.
        const: The compile-time integer value, when known (``uniform`` only).
        per_thread: Differs between threads of one block (depends on ``threadIdx``
            or on data such threads loaded).
        fp: Floating-point typed (for counting floating-point operations).
        text: Short source text of a uniform value, used in symbolic strides.
    """

    kind: str = UNIFORM
    stride: int | str = 0
    const: int | None = None
    per_thread: bool = False
    fp: bool = False
    text: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def uniform(self) -> bool:
        """Whether every lane of a warp holds the same value."""
        return self.kind == UNIFORM


def constant(value: int, fp: bool = False) -> Value:
    """A known integer constant."""
    return Value(UNIFORM, 0, value, False, fp, str(value))


def symbol(text: str, per_thread: bool = False, fp: bool = False) -> Value:
    """A warp-uniform value known only by name (a parameter, ``blockIdx.x``)."""
    return Value(UNIFORM, 0, None, per_thread, fp, text)


def lane(stride: int = 1) -> Value:
    """``threadIdx.x`` (times ``stride``)."""
    return Value(LINEAR, stride, None, True, False, "")


def opaque(per_thread: bool = True, fp: bool = False) -> Value:
    """A value the analysis cannot describe."""
    return Value(UNKNOWN, 0, None, per_thread, fp, "")


def _worst(a: Value, b: Value) -> str | None:
    if UNKNOWN in (a.kind, b.kind):
        return UNKNOWN
    if INDIRECT in (a.kind, b.kind):
        return INDIRECT
    return None


def _mix(kind: str, a: Value, b: Value) -> Value:
    return Value(kind, 0, None, a.per_thread or b.per_thread, a.fp or b.fp, "")


def _sym(text: str) -> str:
    return text if text.replace("_", "").replace(".", "").isalnum() else f"({text})"


def _add_strides(a: int | str, b: int | str, sign: int) -> int | str:
    if isinstance(a, int) and isinstance(b, int):
        return a + sign * b
    if b == 0:
        return a
    if a == 0:
        return b if sign > 0 else (-b if isinstance(b, int) else f"-{_sym(b)}")
    return f"{a}{'+' if sign > 0 else '-'}{_sym(str(b))}"


def add(a: Value, b: Value, sign: int = 1) -> Value:
    """``a + b`` (``sign=1``) or ``a - b`` (``sign=-1``)."""
    worst = _worst(a, b)
    if worst:
        return _mix(worst, a, b)
    per_thread, fp = a.per_thread or b.per_thread, a.fp or b.fp
    if a.uniform and b.uniform:
        const = a.const + sign * b.const if a.const is not None and b.const is not None else None
        op = "+" if sign > 0 else "-"
        return Value(UNIFORM, 0, const, per_thread, fp, str(const) if const is not None else f"{a.text}{op}{b.text}")
    stride = _add_strides(a.stride, b.stride, sign)
    if stride == 0:
        return Value(UNIFORM, 0, None, per_thread, fp, "")
    return Value(LINEAR, stride, None, per_thread, fp, "")


def _scale(stride: int | str, factor: Value) -> int | str:
    if factor.const is not None:
        if isinstance(stride, int):
            return stride * factor.const
        return f"{factor.const}*{_sym(stride)}"
    name = factor.text or "?"
    return name if stride == 1 else f"{_sym(str(stride))}*{_sym(name)}"


def mul(a: Value, b: Value) -> Value:
    """``a * b``."""
    worst = _worst(a, b)
    if worst:
        return _mix(worst, a, b)
    per_thread, fp = a.per_thread or b.per_thread, a.fp or b.fp
    if a.uniform and b.uniform:
        const = a.const * b.const if a.const is not None and b.const is not None else None
        text = str(const) if const is not None else f"{_sym(a.text)}*{_sym(b.text)}"
        return Value(UNIFORM, 0, const, per_thread, fp, text)
    if not a.uniform and not b.uniform:
        return _mix(UNKNOWN, a, b)
    factor, varying = (a, b) if a.uniform else (b, a)
    if factor.const == 0:
        return Value(UNIFORM, 0, 0, False, fp, "0")
    return Value(LINEAR, _scale(varying.stride, factor), None, per_thread, fp, "")


def div(a: Value, b: Value) -> Value:
    """``a / b`` (C integer division for integers)."""
    worst = _worst(a, b)
    if worst:
        return _mix(worst, a, b)
    per_thread, fp = a.per_thread or b.per_thread, a.fp or b.fp
    if a.uniform and b.uniform:
        const = None
        if a.const is not None and b.const:
            const = int(a.const / b.const)  # C truncates towards zero
        text = str(const) if const is not None else f"{_sym(a.text)}/{_sym(b.text)}"
        return Value(UNIFORM, 0, const, per_thread, fp, text)
    if fp or not b.uniform or b.const == 0 or not isinstance(a.stride, int):
        return _mix(UNKNOWN, a, b)
    if b.const is None:  # a run-time divisor: assumed to be a row length of UNIFORM_DIVISOR or more
        return Value(UNIFORM, 0, None, per_thread, fp, "") if abs(a.stride) == 1 else _mix(UNKNOWN, a, b)
    divisor = abs(b.const)
    if a.stride % divisor == 0:
        return Value(LINEAR, a.stride // b.const, None, per_thread, fp, "")
    if divisor >= UNIFORM_DIVISOR * abs(a.stride):
        return Value(UNIFORM, 0, None, per_thread, fp, "")
    return _mix(UNKNOWN, a, b)


def mod(a: Value, b: Value) -> Value:
    """``a % b``: a lane index modulo a large number keeps its stride (it wraps rarely)."""
    worst = _worst(a, b)
    if worst:
        return _mix(worst, a, b)
    per_thread = a.per_thread or b.per_thread
    if a.uniform and b.uniform:
        const = None
        if a.const is not None and b.const:
            const = int(math.fmod(a.const, b.const))
        return Value(UNIFORM, 0, const, per_thread, False, str(const) if const is not None else "")
    if not b.uniform:
        return _mix(UNKNOWN, a, b)
    if b.const is None or (isinstance(a.stride, int) and abs(b.const) >= UNIFORM_DIVISOR * abs(a.stride)):
        return replace(a, per_thread=per_thread)
    return _mix(UNKNOWN, a, b)


def shift(a: Value, b: Value, left: bool) -> Value:
    """``a << b`` or ``a >> b``: multiplication or division by a power of two."""
    if b.uniform and b.const is not None and 0 <= b.const < 31:
        return (mul if left else div)(a, constant(1 << b.const))
    worst = _worst(a, b)
    if a.uniform and b.uniform and not worst:
        return Value(UNIFORM, 0, None, a.per_thread or b.per_thread, False, "")
    return _mix(worst or UNKNOWN, a, b)


def bitand(a: Value, b: Value) -> Value:
    """``a & b``: a mask ``2**k - 1`` is ``% 2**k``."""
    for x, mask in ((a, b), (b, a)):
        if mask.uniform and mask.const is not None and mask.const > 0 and (mask.const + 1) & mask.const == 0:
            return mod(x, constant(mask.const + 1))
    return bitwise(a, b)


def bitxor(a: Value, b: Value) -> Value:
    """``a ^ b``: xor with a small constant permutes lanes within a group (same addresses overall)."""
    for x, c in ((a, b), (b, a)):
        if c.uniform and c.const is not None and 0 <= c.const < 32 and x.kind == LINEAR:
            return x
    return bitwise(a, b)


def bitwise(a: Value, b: Value) -> Value:
    """Any other bitwise or logical operator."""
    worst = _worst(a, b)
    if a.uniform and b.uniform and not worst:
        return Value(UNIFORM, 0, None, a.per_thread or b.per_thread, False, "")
    return _mix(worst or UNKNOWN, a, b)


def compare(a: Value, b: Value) -> Value:
    """A comparison: a per-lane boolean unless both sides are uniform."""
    per_thread = a.per_thread or b.per_thread
    if a.uniform and b.uniform:
        return Value(UNIFORM, 0, None, per_thread, False, "")
    return Value(UNKNOWN, 0, None, per_thread, False, "")


def join(a: Value, b: Value) -> Value:
    """A value that may be ``a`` or ``b`` (branches, loop iterations)."""
    per_thread, fp = a.per_thread or b.per_thread, a.fp or b.fp
    worst = _worst(a, b)
    if worst:
        return _mix(worst, a, b)
    if a.uniform and b.uniform:
        const = a.const if a.const == b.const else None
        text = a.text if a.text == b.text else ""
        return Value(UNIFORM, 0, const, per_thread, fp, text)
    if a.uniform or b.uniform:
        linear = b if a.uniform else a
        return replace(linear, per_thread=per_thread, fp=fp)
    if a.stride == b.stride:
        return replace(a, per_thread=per_thread, fp=fp)
    return _mix(UNKNOWN, a, b)


def loaded(index: Value, fp: bool) -> Value:
    """The data read at ``index``: per-lane data for a per-lane index, a broadcast otherwise."""
    if index.uniform:
        return Value(UNIFORM, 0, None, index.per_thread, fp, "")
    return Value(INDIRECT, 0, None, True, fp, "")


def call_result(args: list[Value], fp: bool = False) -> Value:
    """The result of a function the analysis does not model: uniform iff every argument is."""
    if all(a.uniform and not a.per_thread for a in args):
        return Value(UNIFORM, 0, None, False, fp, "")
    return Value(UNKNOWN, 0, None, True, fp, "")
