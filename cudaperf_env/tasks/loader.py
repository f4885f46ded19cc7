"""Load and validate task files; errors name the file and the field."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from cudaperf_env.errors import TaskFormatError
from cudaperf_env.tasks.distributions import DISTRIBUTIONS
from cudaperf_env.tasks.dtypes import C_TYPE_SPELLINGS, DTYPES, VECTOR_TYPES
from cudaperf_env.tasks.inputs import resolve
from cudaperf_env.tasks.schema import (
    KINDS,
    LABEL_KINDS,
    ROLES,
    SCHEMA_VERSION,
    Arg,
    CFunction,
    Config,
    Implementation,
    Task,
    TimingLabel,
    Tolerance,
    dtype_named,
)

_ID = re.compile(r"^[a-z0-9]+/[a-z0-9_]+$")
_LABEL_NUMBERS = ("median_ms", "lo_ms", "hi_ms", "trials", "mismatched")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SCALAR_DISTRIBUTIONS = ("normal", "uniform", "randint")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_task(path: str | Path) -> Task:
    """Read and validate one task file.

    Raises:
        TaskFormatError: naming the file and the offending field.
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFormatError(str(path), "<file>", f"cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise TaskFormatError(str(path), "<file>", f"invalid YAML: {exc}") from None
    return parse_task(data, str(path))


def parse_task(data: Any, path: str = "<memory>") -> Task:
    """Validate a task given as a mapping (the parsed file) and build a :class:`Task`."""
    v = _Validator(path)
    m = v.mapping(data, "<root>")
    if m.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
        v.fail("schema", f"expected {SCHEMA_VERSION}, got {m.get('schema')!r}")
    task_id = v.text(m, "id")
    if not _ID.match(task_id):
        v.fail("id", f"expected '<kind>/<name>' in lowercase letters, digits and _, got {task_id!r}")
    kind = v.text(m, "kind") if "kind" in m else task_id.split("/")[0]
    if kind not in KINDS:
        v.fail("kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    entry = v.text(m, "entry")
    if not _IDENT.match(entry):
        v.fail("entry", f"expected a C identifier, got {entry!r}")
    configs = v.configs(m, "configs", required=True)
    hidden = v.configs(m, "hidden_configs")
    perf = v.configs(m, "perf_configs")
    args = v.args(m.get("args"), configs + hidden + perf)
    reference = v.mapping(m.get("reference"), "reference")
    # A user's task may be a C function alone: no implementations, no baseline (speed is then
    # measured against the C reference where it is measured at all), no family.
    implementations = v.implementations(m["implementations"]) if "implementations" in m else ()
    baseline = v.text(m, "baseline") if "baseline" in m else (implementations[0].name if implementations else "")
    if baseline and baseline not in {i.name for i in implementations}:
        v.fail("baseline", f"{baseline!r} is not the name of an implementation")
    task = Task(
        id=task_id,
        kind=kind,
        family=v.text(m, "family") if "family" in m else "custom",
        description=v.text(m, "description") if "description" in m else f"Port `{entry}` to CUDA.",
        entry=entry,
        args=args,
        configs=configs,
        hidden_configs=hidden,
        perf_configs=perf,
        tolerances=v.tolerances(m.get("tolerance"), args),
        reference_language=v.text(reference, "language", "reference.language") if "language" in reference else "c",
        reference_source=v.text(reference, "source", "reference.source"),
        baseline=baseline,
        implementations=implementations,
        path=path,
        checker=v.c_function(m["checker"], "checker") if "checker" in m else None,
        generator=v.c_function(m["generator"], "generator") if "generator" in m else None,
    )
    if "signature" in m and _normalize(str(m["signature"])) != _normalize(task.signature):
        v.fail("signature", f"does not match args: args imply '{task.signature}'")
    return task


def load_task_dir(directory: str | Path) -> dict[str, Task]:
    """Load every ``*.yaml``/``*.yml`` file under ``directory`` (recursively), by id."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TaskFormatError(str(directory), "<dir>", "not a directory of task files")
    tasks: dict[str, Task] = {}
    for path in sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")]):
        task = load_task(path)
        if task.id in tasks:
            raise TaskFormatError(str(path), "id", f"duplicate id {task.id!r} (also in {tasks[task.id].path})")
        tasks[task.id] = task
    if not tasks:
        raise TaskFormatError(str(directory), "<dir>", "no task files (*.yaml) found")
    return tasks


def _normalize(signature: str) -> str:
    signature = re.sub(r"\s+", " ", signature.replace(";", "")).strip()
    return re.sub(r"\s*([(),*])\s*", r"\1", signature)


class _Validator:
    """Field checks that raise :class:`TaskFormatError` naming ``path`` and the field."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._structs: dict[str, tuple[str, tuple[str, ...]]] = {}  # struct ctype -> (dtype, fields)

    def fail(self, field: str, problem: str) -> NoReturn:
        raise TaskFormatError(self.path, field, problem)

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(field, f"expected a mapping, got {type(value).__name__}")
        return value

    def sequence(self, value: Any, field: str) -> Sequence[Any]:
        if not isinstance(value, list) or not value:
            self.fail(field, "expected a non-empty list")
        return value

    def text(self, m: Mapping[str, Any], key: str, field: str | None = None) -> str:
        value = m.get(key)
        if not isinstance(value, str) or not value.strip():
            self.fail(field or key, f"expected a non-empty string, got {value!r}")
        return str(value)

    def configs(self, m: Mapping[str, Any], key: str, required: bool = False) -> tuple[Config, ...]:
        if key not in m and not required:
            return ()
        out = []
        for i, cfg in enumerate(self.sequence(m.get(key), key)):
            cfg = self.mapping(cfg, f"{key}[{i}]")
            for name, value in cfg.items():
                if not _IDENT.match(str(name)) or not isinstance(value, int) or isinstance(value, bool):
                    self.fail(f"{key}[{i}].{name}", f"expected SYMBOL: integer, got {name}: {value!r}")
            out.append(dict(cfg))
        return tuple(out)

    def args(self, value: Any, configs: tuple[Config, ...]) -> tuple[Arg, ...]:
        args, seen = [], set()
        for i, raw in enumerate(self.sequence(value, "args")):
            field = f"args[{i}]"
            raw = self.mapping(raw, field)
            name = self.text(raw, "name", f"{field}.name")
            if not _IDENT.match(name) or name in seen:
                self.fail(f"{field}.name", f"expected a unique C identifier, got {name!r}")
            seen.add(name)
            role = raw.get("role")
            if role not in ROLES:
                self.fail(f"{field}.role", f"expected one of {', '.join(ROLES)}, got {role!r}")
            try:
                dtype = dtype_named(str(raw.get("dtype")))
            except ValueError as exc:
                self.fail(f"{field}.dtype", str(exc))
            shape = tuple(raw.get("shape", ()))
            init = dict(self.mapping(raw.get("init", {}), f"{field}.init"))
            if role == "scalar" and "value" not in raw and not init:
                self.fail(f"{field}.value", "a scalar needs a value (a number or an expression) or an init "
                                            "(a distribution drawn per episode)")  # fmt: skip
            if role != "scalar" and not shape:
                self.fail(f"{field}.shape", "a buffer needs a shape: a list of expressions")
            self.init(init, f"{field}.init")
            if role == "scalar" and init.get("dist", "uniform") not in SCALAR_DISTRIBUTIONS:
                self.fail(f"{field}.init.dist", f"a scalar is drawn from one of {', '.join(SCALAR_DISTRIBUTIONS)}")
            if dtype.is_bool and (role == "scalar" or init.get("dist", "bernoulli") != "bernoulli"):
                self.fail(f"{field}.dtype", "bool is for buffers drawn from {dist: bernoulli, p: P} (the default); "
                                            "a flag scalar is an int32 0 or 1")  # fmt: skip
            ctype = str(raw.get("ctype", ""))
            fields = self.fields(raw, dtype, ctype, role, init, field)
            if ctype and not fields and ctype not in C_TYPE_SPELLINGS.get(dtype.name, ()):
                allowed = ", ".join(C_TYPE_SPELLINGS.get(dtype.name, ())) or "none"
                self.fail(f"{field}.ctype", f"{dtype.name} may be spelled {allowed} (got {ctype!r})")
            check, length = str(raw.get("check", "elementwise")), str(raw.get("length", ""))
            if check not in ("elementwise", "multiset", "sorted"):
                self.fail(f"{field}.check", f"expected elementwise, multiset or sorted, got {check!r}")
            if (check != "elementwise" or length) and role not in ("out", "inout"):
                self.fail(f"{field}.check", "check and length apply to outputs (role out or inout)")
            if fields and check != "elementwise":
                self.fail(f"{field}.check", "a buffer of structs is compared element by element")
            arg = Arg(name, role, dtype, raw.get("value"), shape, init, ctype, check, length, fields)
            self.evaluates(arg, configs, field)
            args.append(arg)
        self.groups(tuple(args))
        self.lengths(tuple(args), configs)
        return tuple(args)

    def fields(self, raw: Mapping[str, Any], dtype: Any, ctype: str, role: str, init: Mapping[str, Any],
               field: str) -> tuple[str, ...]:  # fmt: skip
        """A struct buffer's field names (empty for plain buffers), checked against its ``ctype``."""
        if "fields" not in raw:
            return ()
        names = tuple(str(f) for f in self.sequence(raw["fields"], f"{field}.fields"))
        if len(names) < 2 or len(set(names)) != len(names) or not all(_IDENT.match(n) for n in names):
            self.fail(f"{field}.fields", f"expected two or more distinct C identifiers, got {list(names)}")
        if role == "scalar":
            self.fail(f"{field}.fields", "structs are for buffers; pass a struct's fields as separate scalars")
        if not _IDENT.match(ctype):
            self.fail(f"{field}.ctype", "a buffer of structs names its C type (e.g. float2, or point2 to declare)")
        vector = VECTOR_TYPES.get(ctype)
        if vector and (vector[0], vector[1]) != (dtype.name, names):
            self.fail(f"{field}.fields", f"CUDA's {ctype} is {vector[0]} fields {list(vector[1])}")
        if init and init["dist"] not in ("normal", "uniform", "randint"):
            self.fail(f"{field}.init", "a buffer of structs is drawn value by value (normal, uniform, randint)")
        declared = self._structs.setdefault(ctype, (dtype.name, names))
        if declared != (dtype.name, names):
            self.fail(f"{field}.fields", f"{ctype} is declared as {declared[0]} {list(declared[1])} by another arg")
        return names

    def c_function(self, value: Any, key: str) -> CFunction:
        raw = self.mapping(value, key)
        entry = self.text(raw, "entry", f"{key}.entry")
        if not _IDENT.match(entry):
            self.fail(f"{key}.entry", f"expected a C identifier, got {entry!r}")
        return CFunction(entry, self.text(raw, "source", f"{key}.source"))

    def lengths(self, args: tuple[Arg, ...], configs: tuple[Config, ...]) -> None:
        """An output's ``length`` names another output: one integer element, the count of defined elements."""
        by_name = {a.name: a for a in args}
        for arg in args:
            count = by_name.get(arg.length)
            if not arg.length:
                continue
            if count is None or count.role not in ("out", "inout") or count.dtype.is_float or count.length:
                self.fail(f"args.{arg.name}.length", f"expected the name of an integer output holding the count, "
                                                     f"got {arg.length!r}")  # fmt: skip
            if any(count.numel(c) != 1 for c in configs):
                self.fail(f"args.{arg.name}.length", f"the count `{count.name}` must have exactly one element")

    def init(self, init: Mapping[str, Any], field: str) -> None:
        if not init:
            return
        dist = init.get("dist")
        if dist not in DISTRIBUTIONS:
            self.fail(f"{field}.dist", f"expected one of {', '.join(DISTRIBUTIONS)}, got {dist!r}")
        spec = DISTRIBUTIONS[dist]
        extra = set(init) - {"dist"} - spec.keys - ({"group", "part"} if spec.structured else set())
        if extra:
            self.fail(field, f"unknown keys for dist {dist}: {', '.join(sorted(extra))}")
        missing = spec.needs - set(init)
        if missing:
            self.fail(field, f"dist {dist} needs {', '.join(sorted(missing))}")
        if spec.structured and (not isinstance(init.get("group"), str) or init.get("part") not in spec.parts):
            self.fail(field, f"dist {dist} describes several buffers: give group: NAME (shared by its buffers) "
                             f"and part: one of {', '.join(spec.parts)}")  # fmt: skip

    def groups(self, args: tuple[Arg, ...]) -> None:
        """Buffers of one structured ``group`` must agree on its distribution and parameters."""
        seen: dict[str, Mapping[str, Any]] = {}
        for arg in args:
            group = arg.init.get("group")
            if group is None:
                continue
            params = {k: v for k, v in arg.init.items() if k != "part"}
            if seen.setdefault(group, params) != params:
                self.fail(f"args.{arg.name}.init", f"group {group!r} is described differently by another buffer: "
                                                   f"{dict(seen[group])} vs {params}")  # fmt: skip

    def evaluates(self, arg: Arg, configs: tuple[Config, ...], field: str) -> None:
        for cfg in configs:
            try:
                if arg.is_buffer:
                    if arg.numel(cfg) < 1:
                        self.fail(f"{field}.shape", f"is empty under configuration {dict(cfg)}")
                    resolve(arg.init, cfg)
                else:
                    arg.scalar_value(cfg)
            except ValueError as exc:
                self.fail(field, str(exc))

    def tolerances(self, value: Any, args: tuple[Arg, ...]) -> dict[str, Tolerance]:
        if value is None:
            return {}
        value = self.mapping(value, "tolerance")
        if set(value) <= {"rtol", "atol"}:
            tol = self._tolerance(value, "tolerance")
            return {a.dtype.name: tol for a in args if a.dtype.is_float}
        out = {}
        for dtype, tol in value.items():
            if dtype not in DTYPES:
                self.fail(f"tolerance.{dtype}", "expected rtol/atol or a map from dtype to rtol/atol")
            out[dtype] = self._tolerance(self.mapping(tol, f"tolerance.{dtype}"), f"tolerance.{dtype}")
        return out

    def _tolerance(self, m: Mapping[str, Any], field: str) -> Tolerance:
        values = []
        for key in ("rtol", "atol"):
            x = m.get(key, 0.0)
            if not isinstance(x, (int, float)) or isinstance(x, bool) or x < 0:
                self.fail(f"{field}.{key}", f"expected a non-negative number, got {x!r}")
            values.append(float(x))
        return Tolerance(*values)

    def implementations(self, value: Any) -> tuple[Implementation, ...]:
        out, names = [], set()
        for i, raw in enumerate(self.sequence(value, "implementations")):
            field = f"implementations[{i}]"
            raw = self.mapping(raw, field)
            name = self.text(raw, "name", f"{field}.name")
            if name in names:
                self.fail(f"{field}.name", f"duplicate implementation name {name!r}")
            names.add(name)
            strategies = raw.get("strategies", [])
            if not isinstance(strategies, list) or not all(isinstance(s, str) for s in strategies):
                self.fail(f"{field}.strategies", "expected a list of strings")
            raw_labels = raw.get("labels") or []
            if not isinstance(raw_labels, list):
                self.fail(f"{field}.labels", "expected a list of GPU timing labels")
            labels = tuple(self.label(x, f"{field}.labels[{k}]") for k, x in enumerate(raw_labels))
            out.append(Implementation(name, tuple(strategies), self.text(raw, "source", f"{field}.source"), labels))
        return tuple(out)

    def label(self, value: Any, field: str) -> TimingLabel:
        """One GPU timing label (tens of thousands per dataset: a fast check, then the slow one to say why)."""
        m: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        card, kind, driver, date, config = (m.get(k) for k in ("card", "kind", "driver", "date", "config"))
        numbers: tuple[Any, ...] = tuple(m.get(k, 0 if k == "mismatched" else None) for k in _LABEL_NUMBERS)
        if not (isinstance(card, str) and card and kind in LABEL_KINDS and isinstance(driver, str)
                and isinstance(date, str) and isinstance(config, Mapping)
                and all(type(x) in (int, float) and x >= 0 for x in numbers)):  # fmt: skip
            self._label_problem(value, field)
        median, lo, hi, trials, mismatched = numbers
        return TimingLabel(card, driver, date, kind, config, float(median), float(lo), float(hi), int(trials),
                           int(mismatched))  # fmt: skip

    def _label_problem(self, value: Any, field: str) -> NoReturn:
        m = self.mapping(value, field)
        for key in ("card", "kind"):
            self.text(m, key, f"{field}.{key}")
        if m["kind"] not in LABEL_KINDS:
            self.fail(f"{field}.kind", f"expected one of {', '.join(LABEL_KINDS)}, got {m['kind']!r}")
        for key in ("driver", "date"):
            if not isinstance(m.get(key), str):
                self.fail(f"{field}.{key}", f"expected a string, got {m.get(key)!r}")
        self.mapping(m.get("config"), f"{field}.config")
        for key in _LABEL_NUMBERS:
            x = m.get(key, 0 if key == "mismatched" else None)
            if type(x) not in (int, float) or not x >= 0:
                self.fail(f"{field}.{key}", f"expected a non-negative number, got {x!r}")
        raise AssertionError("unreachable: the fast check failed")
