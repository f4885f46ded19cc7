"""Element types a task may use, and their C and numpy spellings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """One element type.

    Attributes:
        name: The task-file spelling, e.g. ``float32``.
        c_type: The C spelling used in entry signatures, e.g. ``float``.
        numpy: The numpy dtype.
    """

    name: str
    c_type: str
    numpy: np.dtype

    @property
    def is_float(self) -> bool:
        return self.numpy.kind == "f"

    @property
    def is_bool(self) -> bool:
        return self.name == "bool"

    @property
    def itemsize(self) -> int:
        return int(self.numpy.itemsize)


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        # C/C++ bool, one byte holding 0 or 1; compared as bytes, so an unwritten (poisoned) element fails.
        DType("bool", "bool", np.dtype(np.uint8)),
        DType("int8", "signed char", np.dtype(np.int8)),
        DType("int16", "short", np.dtype(np.int16)),
        DType("int32", "int", np.dtype(np.int32)),
        DType("int64", "long long", np.dtype(np.int64)),
        DType("uint8", "unsigned char", np.dtype(np.uint8)),
        DType("uint16", "unsigned short", np.dtype(np.uint16)),
        DType("uint32", "unsigned int", np.dtype(np.uint32)),
        DType("uint64", "unsigned long long", np.dtype(np.uint64)),
        DType("float32", "float", np.dtype(np.float32)),
        DType("float64", "double", np.dtype(np.float64)),
    )
}

# Other spellings an argument may give its C type (``ctype:``): each the same type under the ABI,
# so the worker passes it unchanged; the header that declares it is included before the entry.
C_TYPE_SPELLINGS: dict[str, tuple[str, ...]] = {
    "uint64": ("size_t", "uint64_t", "unsigned long"),
    "int64": ("int64_t", "ptrdiff_t", "long"),
    "uint32": ("uint32_t",), "int32": ("int32_t",), "uint16": ("uint16_t",), "int16": ("int16_t",),
    "uint8": ("uint8_t",), "int8": ("int8_t", "char"),
}  # fmt: skip
C_HEADERS: dict[str, str] = {"size_t": "stddef.h", "ptrdiff_t": "stddef.h", "bool": "stdbool.h"} | {
    t: "stdint.h" for spellings in C_TYPE_SPELLINGS.values() for t in spellings if t.endswith("_t") and "int" in t
}

# Default comparison tolerances per dtype: (rtol, atol). Integers are exact.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-5),
    "float64": (1e-10, 1e-12),
}

# CUDA's vector types, usable as a struct argument's ``ctype``: (dtype, fields, alignment in bytes).
# CUDA declares them; for the C reference the same layout is declared before the entry.
VECTOR_TYPES: dict[str, tuple[str, tuple[str, ...], int]] = {
    "float2": ("float32", ("x", "y"), 8), "float3": ("float32", ("x", "y", "z"), 4),
    "float4": ("float32", ("x", "y", "z", "w"), 16), "double2": ("float64", ("x", "y"), 16),
    "int2": ("int32", ("x", "y"), 8), "int4": ("int32", ("x", "y", "z", "w"), 16),
}  # fmt: skip
