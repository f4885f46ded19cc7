"""Convert KernelBench-format problem files (``Model``, ``get_inputs``, ``get_init_inputs``) into torch2cuda tasks.

How a file becomes a task (docs/torch2cuda.md):

* its module-level integer constants (``batch_size = 16``) are the candidate size
  symbols; each is perturbed and ``get_inputs()`` / ``get_init_inputs()`` re-run on
  the ``meta`` device to see which input dimensions and constructor arguments it
  drives, so shapes become expressions (``[BATCH_SIZE, DIM]``) without guessing
  from coincident values;
* the file's own sizes become the GPU-only ``perf_configs``; smaller
  configurations (about 4k, 12k and 30k elements in the largest tensor, one with
  odd sizes, plus a hidden one) are derived by scaling the symbols above 8 down
  together, so the CPU backend can check submissions;
* output and parameter dimensions are fitted with simple expressions of the
  symbols (``S``, ``S * k``, ``S // k``, ``S + k``, ``(S - a) // b + 1``, ``S * T``)
  that must hold on every configuration;
* parameters (``named_parameters``) become ``in`` arguments drawn uniformly in the
  range the module's own initialisation gives; float inputs are drawn like
  ``torch.randn`` (or ``torch.rand`` where the file's inputs are non-negative);
* the tolerance comes from the output scale: ``rtol 1e-3``, ``atol 1e-3 * rms``.

Files that cannot be converted are reported with the reason; files loading a
pretrained model from a hub (KernelBench level 4) are refused, since nothing is
downloaded. The files' code is executed, as KernelBench itself does: import only
files you trust.
"""

from __future__ import annotations

import itertools
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HUB_PATTERNS = re.compile(r"from_pretrained|torch\.hub|hf_hub_download|snapshot_download|\btransformers\b|"
                          r"\bAutoModel|pretrained\s*=\s*True|timm\.create_model")  # fmt: skip
SHOWN_BUDGETS = (4096, 12000, 30000)
HIDDEN_BUDGET = 8000
FIXED_BELOW = 8  # symbols this small (kernel sizes, small channel counts) keep their value
_DTYPES = {"torch.float32": "float32", "torch.float64": "float64", "torch.int32": "int32", "torch.int64": "int64"}


class ImportRefused(Exception):
    """A file that cannot become a task; the message says why."""


@dataclass(frozen=True)
class Outcome:
    """What became of one file: ``task`` (a task mapping) or ``reason`` (why not)."""

    path: str
    task: Mapping[str, Any] | None = None
    reason: str = ""


@dataclass
class _Problem:
    """A loaded file: its namespace and size symbols (constant name -> original value)."""

    name: str
    namespace: dict[str, Any]
    constants: dict[str, int]
    symbols: dict[str, str] = field(default_factory=dict)  # constant -> SYMBOL


def import_dir(directory: str | Path) -> list[Outcome]:
    """Convert every ``*.py`` under ``directory`` (sorted); never raises for a bad file."""
    return [import_file(p) for p in sorted(Path(directory).rglob("*.py"))]


def import_file(path: str | Path) -> Outcome:
    """Convert one KernelBench-format file."""
    path = Path(path)
    try:
        return Outcome(str(path), task=convert(path.read_text(encoding="utf-8"), path.stem, path.parent.name))
    except ImportRefused as exc:
        return Outcome(str(path), reason=str(exc))
    except Exception as exc:  # noqa: BLE001 - the file's own code failed: reported per file, the import goes on
        return Outcome(str(path), reason=f"running the file failed: {type(exc).__name__}: {exc}")


def convert(source: str, name: str, group: str = "") -> dict[str, Any]:
    """The task mapping of one problem's ``source`` (``name`` from its file stem)."""
    if HUB_PATTERNS.search(source):
        raise ImportRefused("loads a pretrained model from a hub (KernelBench level-4 style); CudaPerf downloads no "
                            "weights, so this file is not converted: write a task with a small model built from a "
                            "config instead")  # fmt: skip
    problem = _load(source, name)
    base = dict(problem.constants)
    probe = _probe(problem, base, "meta")
    for k, dtype in enumerate(probe["input_dtypes"]):
        if dtype.startswith("int"):
            raise ImportRefused(f"input {k} holds integers (class indices, ids): their valid range cannot be derived "
                                "from the file; write this task by hand with an init distribution")  # fmt: skip
    problem.symbols = {c: _symbol(c) for c in _drivers(problem, base, probe)}
    configs = _derive_configs(problem, base)
    problem.namespace.update(base)
    shapes = [_probe(problem, _with(base, c), "cpu") for c in configs] + [probe]
    all_configs = [_symbols_of(problem, _with(base, c)) for c in configs] + [_symbols_of(problem, base)]
    inputs = [_input_arg(problem, k, [s["inputs"][k] for s in shapes], all_configs, shapes[0]["values"][k])
              for k in range(len(probe["inputs"]))]  # fmt: skip
    params = [(key, _param_arg(key, [s["params"][key] for s in shapes], all_configs, shapes[0]["param_values"][key]))
              for key in probe["params"]]  # fmt: skip
    outputs = [_arg(f"out{k}" if len(probe["outputs"]) > 1 else "out", "out", probe["outputs"][k][1],
                    _fit_shape([s["outputs"][k][0] for s in shapes], all_configs, f"output {k}"))
               for k in range(len(probe["outputs"]))]  # fmt: skip
    init = [_fit_init(problem, k, [s["init"][k] for s in shapes], all_configs) for k in range(len(probe["init"]))]
    _check_deterministic(problem, _with(base, configs[0]))
    scale = _output_rms(shapes[0])
    used = sorted({s for a in [*inputs, *(p for _, p in params), *outputs] for d in a["shape"] for s in _names(d)}
                  | {s for x in init for s in _names(x)})  # fmt: skip
    taken = {a["name"] for a in [*inputs, *(p for _, p in params), *outputs]}
    sizes = [{"name": _c_name(s.lower()) + ("_size" if _c_name(s.lower()) in taken else ""), "role": "scalar",
              "dtype": "int32", "value": s} for s in used]  # fmt: skip
    cfgs = [{k: v for k, v in c.items() if k in set(used)} for c in all_configs]
    if len({tuple(sorted(c.items())) for c in cfgs}) != len(cfgs):
        raise ImportRefused("the derived configurations coincide once unused constants are dropped")
    doc = (problem.namespace["Model"].__doc__ or "").strip().split("\n")[0].strip()
    return {
        "schema": 1, "id": f"torch2cuda/kb_{_slug(group) + '_' if group else ''}{_slug(name)}",
        "kind": "torch2cuda",
        "family": f"kernelbench_{_slug(group)}" if group else "kernelbench",
        "description": doc or f"KernelBench problem {name}: the forward pass of Model.",
        "entry": "forward",
        "args": [*inputs, *(p for _, p in params), *outputs, *sizes],
        "configs": cfgs[:3], "hidden_configs": cfgs[3:-1], "perf_configs": cfgs[-1:],
        "tolerance": {"rtol": 1.0e-3, "atol": float(f"{max(1e-7, 1e-3 * scale):.3g}")},
        "reference": {"language": "pytorch", "source": source, "inputs": [a["name"] for a in inputs],
                      "parameters": {k: p["name"] for k, p in params}, "outputs": [a["name"] for a in outputs],
                      "init_inputs": init},
        "provenance": {"imported_from": f"{group + '/' if group else ''}{name}.py"},
    }


def _load(source: str, name: str) -> _Problem:
    namespace: dict[str, Any] = {"__name__": f"kernelbench_{_slug(name)}"}
    exec(compile(source, f"{name}.py", "exec"), namespace)
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(namespace.get(needed)):
            raise ImportRefused(f"defines no `{needed}`: not a KernelBench-format problem file")
    if callable(namespace.get("ModelNew")):
        raise ImportRefused("defines `ModelNew`: this is a solution, not a problem file")
    constants = {k: v for k, v in namespace.items()
                 if type(v) is int and not k.startswith("_") and k.isidentifier()}  # fmt: skip
    return _Problem(name, namespace, constants)


def _probe(problem: _Problem, constants: Mapping[str, int], device: str, forward_seed: int = 0) -> dict[str, Any]:
    """Shapes (and, on the CPU, values) of inputs, parameters, outputs and init values under ``constants``."""
    import torch

    problem.namespace.update(constants)
    with torch.device(device):
        torch.manual_seed(0)
        init = list(problem.namespace["get_init_inputs"]())
        inputs = list(problem.namespace["get_inputs"]())
        torch.manual_seed(0)
        model = problem.namespace["Model"](*init)
        torch.manual_seed(forward_seed)  # anything random inside forward follows this seed
        for k, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise ImportRefused(f"get_inputs() item {k} is a {type(x).__name__}; only tensor inputs convert")
            if str(x.dtype) not in _DTYPES:
                raise ImportRefused(f"get_inputs() item {k} has dtype {x.dtype}; supported: {', '.join(_DTYPES)}")
        with torch.no_grad():
            result = model(*inputs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if not all(isinstance(r, torch.Tensor) and str(r.dtype) in _DTYPES for r in results):
        raise ImportRefused("forward must return float or integer tensors (or a tuple of them)")
    cpu = device == "cpu"
    return {
        "init": init,
        "inputs": [tuple(x.shape) for x in inputs],
        "input_dtypes": [_DTYPES[str(x.dtype)] for x in inputs],
        "values": [x.detach().numpy() if cpu else None for x in inputs],
        "params": {k: tuple(p.shape) for k, p in model.named_parameters()},
        "param_values": {k: p.detach().numpy() if cpu else None for k, p in model.named_parameters()},
        "outputs": [(tuple(r.shape) or (1,), _DTYPES[str(r.dtype)]) for r in results],
        "output_values": [r.detach().numpy() if cpu else None for r in results],
    }


def _drivers(problem: _Problem, base: Mapping[str, int], probe: Mapping[str, Any]) -> list[str]:
    """Constants whose change moves an input dimension or a constructor argument."""
    seen = (probe["inputs"], probe["init"])
    out = []
    for name, value in base.items():
        if value < 1:
            continue
        try:
            moved = _probe(problem, _with(base, {name: value + 1}), "meta")
        except Exception:  # noqa: BLE001 - a constant the model cannot take another value of is not a size
            continue
        if (moved["inputs"], moved["init"]) != seen:
            out.append(name)
    problem.namespace.update(base)
    if not out:
        raise ImportRefused("no module-level integer constant drives the input shapes; sizes cannot be varied")
    return out


def _derive_configs(problem: _Problem, base: Mapping[str, int]) -> list[dict[str, int]]:
    """Three shown and one hidden configuration, each within its element budget (scaled from ``base``)."""
    out: list[dict[str, int]] = []
    for budget, odd in ((SHOWN_BUDGETS[0], False), (SHOWN_BUDGETS[1], True), (SHOWN_BUDGETS[2], False),
                        (HIDDEN_BUDGET, True)):  # fmt: skip
        config = _fit_budget(problem, base, budget, odd, out)
        if config is None:
            raise ImportRefused(f"no smaller configuration within {budget} elements runs: the model needs its sizes")
        out.append(config)
    return out


def _fit_budget(problem: _Problem, base: Mapping[str, int], budget: int, odd: bool,
                taken: Sequence[Mapping[str, int]]) -> dict[str, int] | None:  # fmt: skip
    """The largest scaling of ``base`` within ``budget`` elements that runs and differs from ``taken``.

    Symbols get slightly different offsets so that two sizes equal in the file (``dim1 = dim2 = 256``)
    differ here, and the fitted shapes cannot confuse them.
    """
    scalable = [c for c in problem.symbols if base[c] > FIXED_BELOW]
    best = None
    for f in (2.0 ** (-k / 8) for k in range(1, 120)):
        config = {c: ((max(2, round(base[c] * f)) | (1 if odd else 0)) + (2 if odd else 1) * i)
                  for i, c in enumerate(scalable)}  # fmt: skip
        if config in taken or all(config[c] >= base[c] for c in scalable):
            continue
        try:
            largest = _largest(_probe(problem, _with(base, config), "meta"))
        except Exception:  # noqa: BLE001 - sizes the model rejects (a reshape, a head count): try smaller
            continue
        if largest <= budget:
            best = config
            break
    problem.namespace.update(base)
    return best


def _largest(probe: Mapping[str, Any]) -> int:
    shapes = [*probe["inputs"], *probe["params"].values(), *(s for s, _ in probe["outputs"])]
    return max(int(_prod(s)) for s in shapes)


def _fit_shape(observed: Sequence[tuple[int, ...]], configs: Sequence[Mapping[str, int]], what: str) -> list[Any]:
    if len({len(s) for s in observed}) != 1:
        raise ImportRefused(f"{what} changes rank between configurations")
    return [_fit_dim([s[d] for s in observed], configs, f"{what} dimension {d}") for d in range(len(observed[0]))]


def _fit_dim(values: Sequence[int], configs: Sequence[Mapping[str, int]], what: str) -> str | int:
    from cudaperf_env.tasks.expressions import evaluate

    if len(set(values)) == 1:
        return int(values[0])
    for expression in _candidates(sorted(configs[0])):
        if all(evaluate(expression, c) == v for c, v in zip(configs, values, strict=True)):
            return expression
    raise ImportRefused(f"{what} ({list(values)} over the configurations) is not a simple expression of the sizes")


def _candidates(symbols: Sequence[str]) -> list[str]:
    """Shape expressions tried in order: the plainest first."""
    out: list[str] = []
    for s in symbols:
        out.append(s)
        out += [f"{s} * {k}" for k in range(2, 9)] + [f"{s} // {k}" for k in range(2, 9)]
        out += [f"{s} + {k}" if k > 0 else f"{s} - {-k}" for k in range(-16, 17) if k]
        out += [f"({s} - {a}) // {b} + 1" for a in range(0, 17) for b in range(2, 5)]
    out += [f"{s} * {t}" for s, t in itertools.combinations(symbols, 2)]
    return out


def _fit_init(problem: _Problem, k: int, values: Sequence[Any], configs: Sequence[Mapping[str, int]]) -> Any:
    if isinstance(values[0], (bool, float)):
        if len(set(values)) != 1:
            raise ImportRefused(f"get_init_inputs() item {k} changes with the sizes but is not an integer")
        return values[0]
    if not all(type(v) is int for v in values):
        raise ImportRefused(f"get_init_inputs() item {k} is a {type(values[0]).__name__}; only numbers convert")
    return _fit_dim(values, configs, f"get_init_inputs() item {k}")


def _input_arg(problem: _Problem, k: int, shapes: Sequence[tuple[int, ...]], configs: Sequence[Mapping[str, int]],
               values: Any) -> dict[str, Any]:  # fmt: skip
    import inspect

    params = list(inspect.signature(problem.namespace["Model"].forward).parameters)[1:]
    name = _c_name(params[k] if k < len(params) and not params[k].startswith("*") else f"input{k}")
    dtype = str(values.dtype)
    init = {"dist": "uniform", "low": 0.0, "high": 1.0} if float(values.min()) >= 0 else {"dist": "normal"}
    return {**_arg(name, "in", dtype, _fit_shape(shapes, configs, f"input {k}")), "init": init}


def _param_arg(key: str, shapes: Sequence[tuple[int, ...]], configs: Sequence[Mapping[str, int]],
               values: Any) -> dict[str, Any]:  # fmt: skip
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-6:  # constant-initialised (norm weights 1, biases 0): spread around the value
        lo, hi = lo - 0.5, hi + 0.5
    bound = max(abs(lo), abs(hi)) if lo < 0 < hi else 0.0
    init = {"dist": "uniform", "low": round(-bound if bound else lo, 6), "high": round(bound if bound else hi, 6)}
    return {**_arg(_c_name(key.replace(".", "_")), "in", str(values.dtype), _fit_shape(shapes, configs, key)),
            "init": init}


def _arg(name: str, role: str, dtype: str, shape: Sequence[Any]) -> dict[str, Any]:
    return {"name": name, "role": role, "dtype": dtype, "shape": list(shape)}


def _check_deterministic(problem: _Problem, constants: Mapping[str, int]) -> None:
    first = _probe(problem, constants, "cpu", forward_seed=1)["output_values"]
    second = _probe(problem, constants, "cpu", forward_seed=2)["output_values"]
    if not all((a == b).all() for a, b in zip(first, second, strict=True)):
        raise ImportRefused("forward is random (dropout or sampling): a kernel cannot reproduce its outputs")


def _output_rms(probe: Mapping[str, Any]) -> float:
    import numpy as np

    values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in probe["output_values"]])
    return float(np.sqrt(np.mean(values**2))) if values.size else 0.0


def _symbols_of(problem: _Problem, constants: Mapping[str, int]) -> dict[str, int]:
    return {problem.symbols[c]: int(constants[c]) for c in problem.symbols}


def _with(base: Mapping[str, int], change: Mapping[str, int]) -> dict[str, int]:
    return {**base, **change}


def _prod(shape: Sequence[int]) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _names(expression: Any) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression)) if isinstance(expression, str) else set()


def _symbol(constant: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", constant).upper()


def _slug(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", text.lower())).strip("_") or "problem"


_C_RESERVED = frozenset({"int", "float", "double", "char", "long", "short", "void", "const", "auto", "register",
                         "default", "signed", "unsigned", "new", "delete", "this", "template", "class", "struct",
                         "union", "switch", "case", "goto", "sizeof", "static", "extern", "inline", "volatile"})


def _c_name(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if name in _C_RESERVED or keyword.iskeyword(name) or name[0].isdigit():
        name = f"{name}_"
    return name
