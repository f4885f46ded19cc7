"""The task model (schema 1): frozen dataclasses built from a validated task file.

See docs/task-format.md for the file format these classes mirror.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cudaperf_env.tasks.dtypes import C_HEADERS, DEFAULT_TOLERANCE, DTYPES, VECTOR_TYPES, DType
from cudaperf_env.tasks.expressions import evaluate

SCHEMA_VERSION = 1
KINDS = ("c2cuda", "torch2cuda")
ROLES = ("scalar", "in", "out", "inout")
LABEL_KINDS = ("shown", "hidden", "perf")
Config = Mapping[str, int]


@dataclass(frozen=True)
class Arg:
    """One argument of the entry function.

    Attributes:
        name: C parameter name.
        role: ``scalar``, ``in``, ``out`` or ``inout``.
        dtype: Element (or scalar) type.
        value: For scalars, an expression of the configuration's symbols.
        shape: For buffers, one expression per dimension.
        init: For ``in``/``inout`` buffers, how values are drawn (see docs); for scalars, a
            distribution drawn per episode instead of the fixed ``value``.
        ctype: Another spelling of the dtype's C type in the signature (``size_t`` for ``uint64``).
        check: How an output is compared: ``elementwise``, ``multiset`` or ``sorted`` (``checks.py``).
        length: For an output, the one-element output holding how many of its elements are defined.
        fields: For a buffer of structs (points, complex numbers), the field names, each of ``dtype``,
            interleaved in memory; ``ctype`` names the struct (a CUDA vector type such as ``float2``,
            or a name the harness declares).
    """

    name: str
    role: str
    dtype: DType
    value: str | int | float | None = None
    shape: tuple[str | int, ...] = ()
    init: Mapping[str, Any] = field(default_factory=dict)
    ctype: str = ""
    check: str = "elementwise"
    length: str = ""
    fields: tuple[str, ...] = ()

    @property
    def is_buffer(self) -> bool:
        return self.role != "scalar"

    @property
    def c_type(self) -> str:
        """The element's C type as the entry's signature spells it."""
        return self.ctype or self.dtype.c_type

    @property
    def c_param(self) -> str:
        """The parameter as it appears in the C signature."""
        if not self.is_buffer:
            return f"{self.c_type} {self.name}"
        const = "const " if self.role == "in" else ""
        return f"{const}{self.c_type}* {self.name}"

    @property
    def width(self) -> int:
        """Values per element: the number of fields of a struct, else 1."""
        return max(1, len(self.fields))

    def numel(self, config: Config) -> int:
        """Number of values of a buffer argument under ``config`` (elements x fields)."""
        count = self.width
        for dim in self.shape:
            count *= int(evaluate(dim, config))
        return count

    def scalar_value(self, config: Config) -> int | float:
        """The value of a scalar argument under ``config``, cast to its dtype's kind.

        A scalar drawn per episode (``init`` without ``value``) has its distribution's centre here
        (what structural analysis assumes); the episode's value comes with the inputs.
        """
        if self.value is not None:
            value = evaluate(self.value, config)
        else:
            p = {k: evaluate(v, config) for k, v in self.init.items() if k != "dist"}
            value = p.get("mean", 0.0) if self.init["dist"] == "normal" else (p.get("low", 0) + p.get("high", 1)) / 2
        return float(value) if self.dtype.is_float else int(value)


@dataclass(frozen=True)
class TimingLabel:
    """One GPU timing of an implementation on one configuration (``dataset/gpu_labels.py``).

    Attributes:
        card: GPU name; ``driver`` and ``date`` say when and under what driver.
        kind: Which configurations it comes from: ``shown``, ``hidden`` or ``perf``.
        config: The configuration.
        median_ms: Median time per call; ``lo_ms``/``hi_ms`` bound it (5-95% bootstrap).
        trials: Timed calls.
        mismatched: Output elements that differed from the baseline's on the device.
    """

    card: str
    driver: str
    date: str
    kind: str
    config: Config
    median_ms: float
    lo_ms: float
    hi_ms: float
    trials: int
    mismatched: int = 0


@dataclass(frozen=True)
class Implementation:
    """A known CUDA implementation of the task (a valid submission), with its GPU timings if measured."""

    name: str
    strategies: tuple[str, ...]
    source: str
    labels: tuple[TimingLabel, ...] = ()


@dataclass(frozen=True)
class Tolerance:
    """Elementwise tolerance: ``|got - want| <= atol + rtol * |want|``."""

    rtol: float
    atol: float


@dataclass(frozen=True)
class CFunction:
    """A trusted C function of the task: its checker (``backends/checker.py``) or input generator
    (``backends/generator.py``)."""

    entry: str
    source: str


@dataclass(frozen=True)
class Task:
    """One task: what to compute, the entry to define, inputs, references.

    Attributes:
        id: Unique id, ``<kind>/<name>``.
        kind: ``c2cuda`` or ``torch2cuda``.
        family: Computational pattern (for splits and statistics).
        description: What the entry must compute, for the agent.
        entry: Name of the C function a submission defines.
        args: Entry arguments in call order.
        configs: Configurations shown to the agent and run on every backend.
        hidden_configs: Configurations run but never shown.
        perf_configs: Large configurations, timed on the GPU only.
        tolerances: Per-dtype tolerance for output comparison.
        reference_language: ``c`` (or ``pytorch`` for torch2cuda).
        reference_source: Reference implementation source.
        baseline: Name of the implementation used as the speed baseline ("" when the task has none).
        implementations: Known CUDA implementations.
        path: File the task was loaded from ("" when built in code).
        checker: Judges the outputs instead of comparing them with the reference's (None: compare).
        generator: Fills the input buffers in place of their ``init`` (None: the distributions).
    """

    id: str
    kind: str
    family: str
    description: str
    entry: str
    args: tuple[Arg, ...]
    configs: tuple[Config, ...]
    reference_language: str
    reference_source: str
    baseline: str
    implementations: tuple[Implementation, ...]
    hidden_configs: tuple[Config, ...] = ()
    perf_configs: tuple[Config, ...] = ()
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    path: str = ""
    checker: CFunction | None = None
    generator: CFunction | None = None

    @property
    def signature(self) -> str:
        """The C declaration of the entry function."""
        params = ", ".join(a.c_param for a in self.args)
        return f"void {self.entry}({params})"

    def type_declarations(self, language: str) -> str:
        """The struct types the signature names, declared for ``language`` (CUDA knows its vector types)."""
        out = {}
        for arg in self.args:
            if not arg.fields or arg.c_type in out:
                continue
            vector = VECTOR_TYPES.get(arg.c_type)
            if vector and language != "c":
                continue
            aligned = f" __attribute__((aligned({vector[2]})))" if vector else ""
            members = " ".join(f"{arg.dtype.c_type} {f};" for f in arg.fields)
            out[arg.c_type] = f"typedef struct{aligned} {{ {members} }} {arg.c_type};\n"
        return "".join(out.values())

    def headers(self, language: str) -> tuple[str, ...]:
        """Headers the signature's types need in ``language`` (``c``: ``bool`` is ``stdbool.h``'s)."""
        found = {C_HEADERS[a.c_type] for a in self.args if a.c_type in C_HEADERS}
        if language != "c":
            found.discard("stdbool.h")
        return tuple(sorted(found))

    @property
    def correctness_configs(self) -> tuple[Config, ...]:
        """Every configuration checked for correctness: shown first, then hidden."""
        return self.configs + self.hidden_configs

    def tolerance(self, dtype: DType) -> Tolerance:
        """Tolerance for outputs of ``dtype`` (task override, else the default)."""
        if dtype.name in self.tolerances:
            return self.tolerances[dtype.name]
        rtol, atol = DEFAULT_TOLERANCE.get(dtype.name, (0.0, 0.0))
        return Tolerance(rtol, atol)

    def implementation(self, name: str) -> Implementation:
        """The implementation called ``name``."""
        for impl in self.implementations:
            if impl.name == name:
                return impl
        names = ", ".join(i.name for i in self.implementations)
        raise KeyError(f"task {self.id} has no implementation {name!r} (has: {names})")


def dtype_named(name: str) -> DType:
    """Look up a dtype by its task-file name."""
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; expected one of: {', '.join(DTYPES)}") from None
