#!/usr/bin/env python3
"""Checks the bundled C-to-CUDA starter tasks (cudaperf_env/tasks/data/c2cuda/*.yaml).

For every task file:

1. schema basics of docs/task-format.md (fields, roles, dtypes, expressions, configs);
2. every implementation compiles with the real compile check
   (``nvcc -arch=sm_90 -cubin -Xptxas -v -x cu``) after the entry's C declaration,
   so a signature mismatch fails; a static screen rejects forbidden constructs;
3. the C reference compiles (``gcc -std=c11 -O2 -shared -fPIC``) and, run through
   ctypes on random inputs for every visible and hidden config, agrees with an
   independent numpy implementation (``NUMPY_REFS`` below) and leaves ``in``
   buffers unchanged.

With ``--gpu`` (on a machine with an NVIDIA GPU) every implementation is also
built with ``nvcc -shared``, run on every visible and hidden config with outputs
poisoned twice (NaN / 0xA5 bytes, then 0x7F / 0x5A bytes) and compared with the
C reference. ``--perf`` times every implementation on the perf configs (CUDA
events, L2 flushed, inputs restored before each call; median) and cross-checks
outputs against the baseline's.

Usage::

    .venv/bin/python tests/cudaperf_env/tasks/starter_check.py [--gpu] [--perf] [TASK_NAME ...]
    # on a GPU machine, also under a sanitizer (one worker per task, two smallest configs):
    compute-sanitizer --tool racecheck --error-exitcode 99 python3 starter_check.py \
        --_worker TASK.yaml --mode correct --small --workdir BUILD_DIR IMPL_NAME ...

``--dir`` checks another task directory (e.g. a user's own tasks).

Prints a table; exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import contextlib
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "cudaperf_env" / "tasks" / "data" / "c2cuda"
NVCC = os.environ.get("NVCC", "/usr/local/bin/nvcc" if Path("/usr/local/bin/nvcc").exists() else "nvcc")

DTYPES = {  # dtype -> (numpy dtype, C type)
    "bool": (np.uint8, "bool"),
    "int8": (np.int8, "signed char"),
    "int16": (np.int16, "short"),
    "int32": (np.int32, "int"),
    "int64": (np.int64, "long long"),
    "uint8": (np.uint8, "unsigned char"),
    "uint16": (np.uint16, "unsigned short"),
    "uint32": (np.uint32, "unsigned int"),
    "uint64": (np.uint64, "unsigned long long"),
    "float32": (np.float32, "float"),
    "float64": (np.float64, "double"),
}
DEFAULT_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}
ROLES = ("scalar", "in", "out", "inout")
TOP_KEYS = {
    "schema", "id", "kind", "family", "description", "entry", "args", "configs",
    "hidden_configs", "perf_configs", "tolerance", "reference", "baseline", "implementations", "generator", "checker",
}
REQUIRED = TOP_KEYS - {"hidden_configs", "perf_configs", "tolerance", "generator", "checker"}
ALLOWED_INCLUDES = {
    "cuda_runtime.h", "cuda_fp16.h", "cooperative_groups.h", "stdint.h", "stddef.h",
    "float.h", "limits.h", "math.h", "cstdint", "cfloat", "climits", "cmath",
}
FORBIDDEN = [  # (regex, why)
    (r"\basm\b|\b__asm__\b", "inline asm"),
    (r"\b__shfl(_up|_down|_xor)?\s*\(", "__shfl without _sync"),
    (r"\b(__any|__all|__ballot)\s*\(", "warp vote without _sync"),
    (r"\bprintf\s*\(", "device/host printf"),
    (r"\bcublas|\bcusparse|\bthrust::|\bcub::", "library call"),
    (r"\btex[123]D|\btexture\s*<|\bsurf[123]D", "textures/surfaces"),
    (r"cudaMallocManaged|cudaDeviceSetLimit|cudaGetDeviceProperties|cudaDeviceGetAttribute",
     "host API outside the CPU runtime's subset"),
    (r"\bgrid\.sync\s*\(|this_grid\s*\(", "grid-wide sync"),
]
MAX_CONFIG_ELEMS = 2_200_000  # per buffer, visible/hidden configs (CPU backend cost)


class CheckError(Exception):
    """A task failed a check; the message says which file and field."""


# ----------------------------------------------------------------------------- expressions

_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b}


def eval_expr(expr: Any, env: dict[str, int], allow_float: bool = False) -> int | float:
    """Evaluates a shape/value expression of config symbols (the grammar of task-format.md)."""
    if isinstance(expr, bool):
        raise CheckError(f"boolean is not an expression: {expr!r}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, float):
        if not allow_float:
            raise CheckError(f"float literal where an integer expression is required: {expr!r}")
        return expr

    def ev(node: ast.AST) -> int | float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and allow_float:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise CheckError(f"unknown symbol {node.id!r} in {expr!r} (config has {sorted(env)})")
            return env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("min", "max") and len(node.args) == 2 and not node.keywords):
            f = min if node.func.id == "min" else max
            return f(ev(node.args[0]), ev(node.args[1]))
        raise CheckError(f"unsupported expression {expr!r}")

    return ev(ast.parse(str(expr), mode="eval"))


# ----------------------------------------------------------------------------- task model

@dataclass
class Task:
    path: Path
    data: dict[str, Any]
    id: str = ""
    entry: str = ""
    args: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]

    def signature(self) -> str:
        parts = []
        for a in self.args:
            ctype = a.get("ctype") or DTYPES[a["dtype"]][1]
            if a["role"] == "scalar":
                parts.append(f"{ctype} {a['name']}")
            elif a["role"] == "in":
                parts.append(f"const {ctype}* {a['name']}")
            else:
                parts.append(f"{ctype}* {a['name']}")
        return f"void {self.entry}({', '.join(parts)})"

    def tolerance(self, dtype: str) -> tuple[float, float]:
        tol = self.data.get("tolerance")
        rtol, atol = DEFAULT_TOL.get(dtype, (0.0, 0.0))
        if not tol or dtype not in DEFAULT_TOL:
            return (0.0, 0.0) if dtype not in DEFAULT_TOL else (rtol, atol)
        if "rtol" in tol or "atol" in tol:
            return float(tol.get("rtol", rtol)), float(tol.get("atol", atol))
        sub = tol.get(dtype)
        if sub:
            return float(sub.get("rtol", rtol)), float(sub.get("atol", atol))
        return rtol, atol

    def buffers(self) -> list[dict[str, Any]]:
        return [a for a in self.args if a["role"] != "scalar"]

    def shape(self, arg: dict[str, Any], cfg: dict[str, int]) -> tuple[int, ...]:
        fields = (len(arg["fields"]),) if arg.get("fields") else ()  # structs: interleaved fields last
        return tuple(int(eval_expr(e, cfg)) for e in arg["shape"]) + fields


def _need(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise CheckError(f"{where}: {msg}")


def check_schema(path: Path) -> Task:
    """Parses one YAML file and checks the schema basics; returns the task."""
    data = yaml.safe_load(path.read_text())
    w = path.name
    _need(isinstance(data, dict), w, "top level must be a mapping")
    _need(not (set(data) - TOP_KEYS), w, f"unknown fields {sorted(set(data) - TOP_KEYS)}")
    _need(not (REQUIRED - set(data)), w, f"missing fields {sorted(REQUIRED - set(data))}")
    _need(data["schema"] == 1, f"{w}: schema", "must be 1")
    _need(data["kind"] == "c2cuda", f"{w}: kind", "must be c2cuda")
    tid = data["id"]
    _need(isinstance(tid, str) and re.fullmatch(r"c2cuda/[a-z0-9_]+", tid) is not None,
          f"{w}: id", f"must be c2cuda/<lowercase name>, got {tid!r}")
    _need(tid.split("/", 1)[1] == path.stem, f"{w}: id", f"name must match the file name ({path.stem})")
    for key in ("family", "description", "entry"):
        _need(isinstance(data[key], str) and data[key].strip() != "", f"{w}: {key}", "non-empty string")
    _need(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", data["entry"]) is not None, f"{w}: entry", "C identifier")
    task = Task(path, data, id=tid, entry=data["entry"], args=data["args"])

    # args
    _need(isinstance(task.args, list) and task.args, f"{w}: args", "non-empty list")
    names = set()
    for i, a in enumerate(task.args):
        aw = f"{w}: args[{i}]"
        _need(isinstance(a, dict), aw, "mapping")
        _need(a.get("name") and re.fullmatch(r"[a-z_][a-z0-9_]*", a["name"]) is not None, aw, "name")
        _need(a["name"] not in names, aw, f"duplicate name {a['name']}")
        names.add(a["name"])
        _need(a.get("role") in ROLES, aw, f"role must be one of {ROLES}")
        _need(a.get("dtype") in DTYPES, aw, f"dtype must be one of {sorted(DTYPES)}")
        if a["role"] == "scalar":
            _need(("value" in a or "init" in a) and "shape" not in a, aw, "scalar needs a value or an init, no shape")
        else:
            _need(isinstance(a.get("shape"), list) and a["shape"], aw, "buffer needs a shape list")
            _need("value" not in a, aw, "buffer has no value")
            _need("init" not in a or a["role"] in ("in", "inout"), aw, "init only for in/inout")
    _need(any(a["role"] in ("out", "inout") for a in task.args), f"{w}: args", "no out/inout buffer")

    # configs
    for key in ("configs", "hidden_configs", "perf_configs"):
        cfgs = data.get(key, [])
        _need(isinstance(cfgs, list), f"{w}: {key}", "list of mappings")
        for j, cfg in enumerate(cfgs):
            cw = f"{w}: {key}[{j}]"
            _need(isinstance(cfg, dict) and all(isinstance(v, int) for v in cfg.values()), cw,
                  "mapping of symbol -> integer")
            for a in task.args:
                if a["role"] == "scalar" and "value" in a:
                    eval_expr(a["value"], cfg, allow_float=a["dtype"].startswith("float"))
                elif a["role"] == "scalar":
                    pass  # drawn per episode: the package's loader checks the distribution
                else:
                    shp = task.shape(a, cfg)
                    _need(all(s >= 1 for s in shp), cw, f"{a['name']} shape {shp} not positive")
                    if key != "perf_configs":
                        _need(int(np.prod(shp)) <= MAX_CONFIG_ELEMS, cw,
                              f"{a['name']} has {int(np.prod(shp))} elements (> {MAX_CONFIG_ELEMS}); "
                              "too slow for the CPU backend")
    _need(len(data["configs"]) >= 3, f"{w}: configs", "at least 3")
    _need(len(data.get("hidden_configs", [])) >= 1, f"{w}: hidden_configs", "at least 1")
    _need(1 <= len(data.get("perf_configs", [])) <= 2, f"{w}: perf_configs", "1 or 2")

    def odd(cfg: dict[str, int]) -> bool:
        return any(v > 2 and v % 2 == 1 for v in cfg.values())
    _need(any(odd(c) for c in data["configs"]), f"{w}: configs", "need a config with an odd size")
    _need(all(odd(c) for c in data["hidden_configs"]), f"{w}: hidden_configs", "use odd sizes")

    # tolerance
    tol = data.get("tolerance")
    if tol is not None:
        _need(isinstance(tol, dict), f"{w}: tolerance", "mapping")
        flat = {"rtol", "atol"} & set(tol)
        entries = [tol] if flat else list(tol.values())
        if not flat:
            _need(set(tol) <= {"float32", "float64"}, f"{w}: tolerance", "keys rtol/atol or a dtype")
        for e in entries:
            _need(isinstance(e, dict) and set(e) <= {"rtol", "atol"}
                  and all(isinstance(v, (int, float)) and v >= 0 for v in e.values()),
                  f"{w}: tolerance", "rtol/atol must be non-negative numbers")

    # reference and implementations
    ref = data["reference"]
    _need(isinstance(ref, dict) and ref.get("language") == "c" and isinstance(ref.get("source"), str),
          f"{w}: reference", "needs language: c and source")
    impls = data["implementations"]
    _need(isinstance(impls, list) and len(impls) >= 2, f"{w}: implementations", "at least 2")
    inames = [im.get("name") for im in impls]
    _need(len(set(inames)) == len(inames), f"{w}: implementations", "names must be unique")
    _need(data["baseline"] in inames, f"{w}: baseline", f"{data['baseline']!r} not among {inames}")
    for im in impls:
        iw = f"{w}: implementations[{im.get('name')}]"
        _need(set(im) <= {"name", "strategies", "source"}, iw, "fields are name, strategies, source")
        _need(isinstance(im.get("strategies"), list) and im["strategies"]
              and all(isinstance(s, str) and re.fullmatch(r"[a-z0-9-]+", s) for s in im["strategies"]),
              iw, "strategies: non-empty list of lowercase-dash tags")
        _need(isinstance(im.get("source"), str), iw, "source")
        static_screen(im["source"], iw, task.entry)
    return task


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def static_screen(src: str, where: str, entry: str) -> None:
    """Rejects constructs the ABI or the CPU backend does not allow."""
    code = _strip_comments(src)
    for inc in re.findall(r"#\s*include\s*[<\"]([^>\"]+)[>\"]", code):
        _need(inc in ALLOWED_INCLUDES, where, f"include <{inc}> not allowed")
    for pat, why in FORBIDDEN:
        m = re.search(pat, code)
        _need(m is None, where, f"forbidden construct ({why}): {m.group(0) if m else ''}")
    _need(re.search(r'extern\s+"C"\s+void\s+' + re.escape(entry) + r"\s*\(", code) is not None,
          where, f'must define extern "C" void {entry}(...)')
    _need(re.search(r"<<<", code) is not None, where, "launches no kernel")


# ----------------------------------------------------------------------------- compile checks

def run_cmd(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def nvcc_cubin(task: Task, impl: dict[str, Any], workdir: Path) -> tuple[bool, str]:
    """The real compile check; returns (ok, summary or error)."""
    src = workdir / f"{task.name}__{impl['name']}.cu"
    src.write_text(f'extern "C" {task.signature()};\n#line 1 "{impl["name"]}.cu"\n{impl["source"]}')
    out = src.with_suffix(".cubin")
    p = run_cmd([NVCC, "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-x", "cu", "-o", str(out), str(src)])
    text = p.stdout + p.stderr
    if p.returncode != 0:
        return False, text.strip()[-2000:]
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", text)]
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", text)]
    if any(spills):
        return False, f"register spills: {spills}\n{text}"
    if "warning" in text.lower():
        return False, f"nvcc warnings:\n{text}"
    return True, f"{len(regs)} kernels, max {max(regs, default=0)} regs"


def build_reference(task: Task, workdir: Path) -> ctypes.CDLL:
    src = workdir / f"{task.name}__ref.c"
    from cudaperf_env.tasks import load_task

    includes = "#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n"
    includes += load_task(task.path).type_declarations("c")
    src.write_text(f"{includes}{task.signature()};\n#line 1 \"reference.c\"\n{task.data['reference']['source']}")
    lib = src.with_suffix(".so")
    p = run_cmd(["gcc", "-std=c11", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib),
                 str(src), "-lm"])
    if p.returncode != 0:
        raise CheckError(f"{task.path.name}: reference does not compile:\n{p.stderr[-2000:]}")
    return ctypes.CDLL(str(lib))


# ----------------------------------------------------------------------------- inputs

PACKAGE_DISTRIBUTIONS = ("bernoulli", "unique", "unique_sorted", "planted", "symmetric", "spd", "nonsingular",
                         "adjacency", "csr_graph", "csr_matrix")  # fmt: skip


def package_inputs(task: Task, cfg: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """The package's own draw, for distributions with a property to construct (graphs, SPD matrices)."""
    from cudaperf_env.tasks import load_task
    from cudaperf_env.tasks.inputs import make_inputs as draw

    return draw(load_task(task.path), cfg, seed)


def make_inputs(task: Task, cfg: dict[str, int], rng: np.random.Generator) -> dict[str, Any]:
    """Scalars (numpy scalars of the arg dtype) and buffers drawn per each arg's init."""
    vals: dict[str, Any] = {}
    package: dict[str, np.ndarray] = {}
    for a in task.args:
        npdt = DTYPES[a["dtype"]][0]
        if a["role"] == "scalar" and a.get("init"):  # drawn per episode: the package draws it
            package = package or package_inputs(task, cfg, int(rng.integers(1 << 31)))
            vals[a["name"]] = np.array(package[a["name"]][0], dtype=npdt)
            continue
        if a["role"] == "scalar":
            vals[a["name"]] = np.array(eval_expr(a["value"], cfg, allow_float=True), dtype=npdt)
            continue
        shape = task.shape(a, cfg)
        size = int(np.prod(shape))
        if a["role"] == "out":
            vals[a["name"]] = np.full(shape, np.nan, npdt) if a["dtype"].startswith("float") \
                else np.frombuffer(b"\xa5" * (size * np.dtype(npdt).itemsize), npdt).reshape(shape).copy()
            continue
        is_float = a["dtype"].startswith("float")
        init = dict(a.get("init") or ({"dist": "normal"} if is_float else {"dist": "randint", "low": 0, "high": 100}))
        dist = init.pop("dist")
        ev = {k: eval_expr(v, cfg, allow_float=True) for k, v in init.items() if k not in ("group", "part")}
        if dist == "normal":
            arr = rng.normal(ev.get("mean", 0.0), ev.get("std", 1.0), size)
        elif dist == "uniform":
            arr = rng.uniform(ev.get("low", 0.0), ev.get("high", 1.0), size)
        elif dist == "randint":
            arr = rng.integers(int(ev.get("low", 0)), int(ev.get("high", 100)), size, dtype=np.int64)
        elif dist == "sorted_randint":
            arr = np.sort(rng.integers(int(ev.get("low", 0)), int(ev.get("high", 100)), size))
        elif dist == "permutation":
            arr = rng.permutation(size)
        elif dist == "csr_rowptr":
            nnz = int(ev["nnz"])
            inner = np.sort(rng.integers(0, nnz + 1, size - 2))
            arr = np.concatenate([[0], inner, [nnz]])
        elif dist in PACKAGE_DISTRIBUTIONS:  # structured ones: drawn by the package, for every buffer of a group
            package = package or package_inputs(task, cfg, int(rng.integers(1 << 31)))
            arr = package[a["name"]]
        else:
            raise CheckError(f"{task.path.name}: {a['name']}: unknown init dist {dist!r}")
        vals[a["name"]] = np.ascontiguousarray(arr.astype(npdt).reshape(shape))
    return vals


def call_argv(task: Task, vals: dict[str, Any]) -> list[Any]:
    argv = []
    for a in task.args:
        v = vals[a["name"]]
        if a["role"] == "scalar":
            ct = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}.get(v.dtype)
            argv.append(ct(float(v)) if ct else np.ctypeslib.as_ctypes_type(v.dtype)(int(v)))
        else:
            argv.append(ctypes.c_void_p(v.ctypes.data))
    return argv


def compare(task: Task, dtype: str, got: np.ndarray, want: np.ndarray) -> tuple[bool, float]:
    """Elementwise |got-want| <= atol + rtol*|want|; returns (ok, worst error / allowed)."""
    if got.shape != want.shape:
        return False, float("inf")
    if not dtype.startswith("float"):
        bad = int(np.count_nonzero(got != want))
        return bad == 0, float(bad)
    rtol, atol = task.tolerance(dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    allowed = atol + rtol * np.abs(w)
    ratio = np.where(np.isfinite(err), err / np.maximum(allowed, 1e-300), np.inf)
    worst = float(ratio.max()) if ratio.size else 0.0
    return bool(np.all(err <= allowed)), worst


def run_reference(task: Task, lib: ctypes.CDLL, vals: dict[str, Any]) -> dict[str, np.ndarray]:
    """Runs the C reference on copies of the inputs; returns every buffer after the call."""
    work = {k: (v.copy() if isinstance(v, np.ndarray) and v.ndim else v) for k, v in vals.items()}
    getattr(lib, task.entry)(*call_argv(task, work))
    return work


def smallest_first(task: Task, cfgs: list[dict[str, int]]) -> list[dict[str, int]]:
    return sorted(cfgs, key=lambda c: sum(int(np.prod(task.shape(a, c))) for a in task.buffers()))


def as_checked(a: dict, got: dict[str, Any], want: dict[str, Any], both: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One output as its ``check``/``length`` compares it: the counted prefix, sorted where order is free
    (``both``: the C reference against numpy, neither of which owes the ``sorted`` order)."""
    g, w = np.asarray(got[a["name"]]).ravel(), np.asarray(want[a["name"]]).ravel()
    if a.get("length"):
        count = int(np.asarray(want[a["length"]]).ravel()[0])
        g, w = g[:count], w[:count]
    if a.get("check") == "multiset" or (both and a.get("check") == "sorted"):
        g, w = np.sort(g), np.sort(w)
    elif a.get("check") == "sorted":
        w = np.sort(w)
    return g, w


def check_reference(task: Task, lib: ctypes.CDLL, seed: int) -> str:
    """C reference vs numpy on every visible and hidden config; returns a summary."""
    fn = NUMPY_REFS.get(task.id)
    if fn is None:
        raise CheckError(f"{task.path.name}: no numpy reference in NUMPY_REFS for {task.id}")
    rng = np.random.default_rng(seed)
    worst = 0.0
    for cfg in smallest_first(task, task.data["configs"] + task.data["hidden_configs"]):
        vals = make_inputs(task, cfg, rng)
        got = run_reference(task, lib, vals)
        scal = {a["name"]: vals[a["name"]][()] for a in task.args if a["role"] == "scalar"}
        ins = {a["name"]: vals[a["name"]] for a in task.args if a["role"] in ("in", "inout")}
        want = fn(cfg=cfg, **scal, **{k: v.copy() for k, v in ins.items()})
        for a in task.buffers():
            n = a["name"]
            if a["role"] == "in":
                _need(np.array_equal(got[n], vals[n], equal_nan=True), f"{task.path.name}: {cfg}",
                      f"reference modified in-buffer {n}")
                continue
            _need(n in want, task.path.name, f"numpy reference returned no {n}")
            w = np.asarray(want[n]).astype(DTYPES[a["dtype"]][0])
            ok, r = compare(task, a["dtype"], *as_checked(a, got, {**want, n: w}, both=True))
            _need(ok, f"{task.path.name}: config {cfg}",
                  f"C reference and numpy disagree on {n} (worst err/allowed {r:.3g})")
            worst = max(worst, r)
    return f"ok (worst err/allowed {worst:.2g})"


# ----------------------------------------------------------------------------- numpy references
# Each takes the scalars and in/inout buffers by arg name (plus cfg) and returns the expected
# out/inout buffers. Written independently of the C references (vectorised, float64 inside).

f64 = np.float64


def _rows_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(f64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _blur3x3(x: np.ndarray) -> np.ndarray:
    p = np.pad(x.astype(f64), 1, mode="edge")
    h, w = x.shape
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], f64) / 16
    return sum(k[i, j] * p[i:i + h, j:j + w] for i in range(3) for j in range(3))


def _jacobi5(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    if x.shape[0] > 2 and x.shape[1] > 2:
        y[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    return y


def _conv1d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    co, ci, kw = w.shape
    lo = x.shape[1] - kw + 1
    win = np.stack([x[:, k:k + lo] for k in range(kw)], axis=1).astype(f64)  # (ci, kw, lo)
    return np.einsum("ock,ckt->ot", w.astype(f64), win)


def _spmv(rowptr: np.ndarray, colidx: np.ndarray, vals: np.ndarray, x: np.ndarray) -> np.ndarray:
    m = rowptr.size - 1
    rows = np.repeat(np.arange(m), np.diff(rowptr))
    y = np.zeros(m, f64)
    np.add.at(y, rows, vals.astype(f64) * x[colidx].astype(f64))
    return y


def _compact(x: np.ndarray) -> dict[str, np.ndarray]:
    kept = x[x > 0]
    out = np.zeros_like(x)
    out[:kept.size] = kept
    return {"out": out, "count": np.array([kept.size], np.int32)}


def _layernorm(x: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(f64)
    mu = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=1, keepdims=True)
    return (x64 - mu) / np.sqrt(var + float(np.float32(eps)))


def _gelu(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(f64)
    return 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))


def _argmax_first(x: np.ndarray) -> np.ndarray:
    return np.array([int(np.argmax(x))], np.int32)  # numpy returns the first maximum


def _stencil_r4(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    n = x.size
    idx = np.clip(np.arange(n)[:, None] + np.arange(-4, 5)[None, :], 0, n - 1)
    return (x.astype(f64)[idx] * w.astype(f64)[None, :]).sum(axis=1)


def _stencil3(x: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    p = np.pad(x.astype(f64), 1)
    return f64(a) * p[:-2] + f64(b) * p[1:-1] + f64(c) * p[2:]


def _complex_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    p = (a[:, 0].astype(f64) + 1j * a[:, 1]) * (b[:, 0].astype(f64) + 1j * b[:, 1])
    return np.stack([p.real, p.imag], axis=1)


def _rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(f64)
    return x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + float(np.float32(eps))) * w.astype(f64)[None, :]


def _logsumexp(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(f64)
    m = x64.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x64 - m).sum(axis=1, keepdims=True)))[:, 0]


def _avgpool2(x: np.ndarray) -> np.ndarray:
    h, w = x.shape
    return x[: h // 2 * 2, : w // 2 * 2].astype(f64).reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))


def _pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    diff = a.astype(f64)[:, None, :] - b.astype(f64)[None, :, :]
    return (diff * diff).sum(axis=2)


def _nbody(eps: float, px: np.ndarray, py: np.ndarray, pz: np.ndarray, mass: np.ndarray) -> dict[str, np.ndarray]:
    p = np.stack([px, py, pz], axis=1).astype(f64)
    d = p[None, :, :] - p[:, None, :]  # d[i, j] = p_j - p_i
    w = mass.astype(f64)[None, :] / ((d * d).sum(axis=2) + f64(eps)) ** 1.5
    np.fill_diagonal(w, 0.0)  # j != i
    acc = np.einsum("ij,ijc->ic", w, d)
    return {"ax": acc[:, 0], "ay": acc[:, 1], "az": acc[:, 2]}


NUMPY_REFS: dict[str, Callable[..., dict[str, Any]]] = {
    "c2cuda/saxpy_f32": lambda cfg, n, a, x, y: {"y": f64(a) * x + y},
    "c2cuda/gelu_f32": lambda cfg, n, x: {"y": _gelu(x)},
    "c2cuda/fma3_f32": lambda cfg, n, a, b, c: {"d": a.astype(f64) * b + c},
    "c2cuda/clamp_i32": lambda cfg, n, lo, hi, x: {"y": np.clip(x, lo, hi)},
    "c2cuda/sum_f32": lambda cfg, n, x: {"out": [x.astype(f64).sum()]},
    "c2cuda/max_i32": lambda cfg, n, x: {"out": [x.max()]},
    "c2cuda/dot_f64": lambda cfg, n, x, y: {"out": [np.dot(x, y)]},
    "c2cuda/argmax_f32": lambda cfg, n, x: {"out": _argmax_first(x)},
    "c2cuda/l2norm_f32": lambda cfg, n, x: {"out": [np.sqrt((x.astype(f64) ** 2).sum())]},
    "c2cuda/row_l2_normalize_f32": lambda cfg, rows, cols, x: {
        "y": x / np.maximum(np.sqrt((x.astype(f64) ** 2).sum(axis=1, keepdims=True)), 1e-12)},
    "c2cuda/inclusive_scan_i32": lambda cfg, n, x: {"y": np.cumsum(x, dtype=np.int64)},
    "c2cuda/exclusive_scan_f32": lambda cfg, n, x: {
        "y": np.concatenate([[0.0], np.cumsum(x.astype(f64))[:-1]])},
    "c2cuda/histogram256_u8": lambda cfg, n, data: {"hist": np.bincount(data, minlength=256)},
    "c2cuda/histogram_i32": lambda cfg, n, nbins, values: {"hist": np.bincount(values, minlength=nbins)},
    "c2cuda/stencil3_f32": lambda cfg, n, a, b, c, x: {"y": _stencil3(x, a, b, c)},
    "c2cuda/stencil1d_r4_f32": lambda cfg, n, x, w: {"y": _stencil_r4(x, w)},
    "c2cuda/jacobi5_f64": lambda cfg, h, w, x: {"y": _jacobi5(x)},
    "c2cuda/blur3x3_f32": lambda cfg, h, w, x: {"y": _blur3x3(x)},
    "c2cuda/transpose_f32": lambda cfg, rows, cols, a: {"b": a.T},
    "c2cuda/matvec_f32": lambda cfg, m, n, a, x: {"y": a.astype(f64) @ x.astype(f64)},
    "c2cuda/matvec_t_f32": lambda cfg, m, n, a, x: {"y": a.astype(f64).T @ x.astype(f64)},
    "c2cuda/matmul_f32": lambda cfg, m, n, k, a, b: {"c": a.astype(f64) @ b.astype(f64)},
    "c2cuda/matmul_f64": lambda cfg, m, n, k, a, b: {"c": a @ b},
    "c2cuda/bmm_f32": lambda cfg, batch, m, n, k, a, b: {"c": np.matmul(a.astype(f64), b.astype(f64))},
    "c2cuda/softmax_rows_f32": lambda cfg, rows, cols, x: {"y": _rows_softmax(x)},
    "c2cuda/layernorm_rows_f32": lambda cfg, rows, cols, eps, x: {"y": _layernorm(x, eps)},
    "c2cuda/gather_rows_f32": lambda cfg, n, d, table, idx: {"out": table[idx]},
    "c2cuda/scatter_add_f32": lambda cfg, n, nbins, x, idx: {
        "out": np.bincount(idx, weights=x.astype(f64), minlength=nbins)},
    "c2cuda/compact_positive_f32": lambda cfg, n, x: _compact(x),
    "c2cuda/sort_rows_f32": lambda cfg, rows, cols, x: {"y": np.sort(x, axis=1)},
    "c2cuda/sort_u8": lambda cfg, n, x: {"y": np.sort(x)},
    "c2cuda/maxpool1d_f32": lambda cfg, rows, length, k, x: {
        "y": np.lib.stride_tricks.sliding_window_view(x, k, axis=1).max(axis=2)},
    "c2cuda/conv1d_f32": lambda cfg, cin, cout, length, kw, x, w: {"y": _conv1d(x, w)},
    "c2cuda/spmv_csr_f32": lambda cfg, m, n, rowptr, colidx, vals, x: {
        "y": _spmv(rowptr, colidx, vals, x)},
    "c2cuda/spmv_csr_f64": lambda cfg, n, rowptr, colidx, values, x: {"y": _spmv(rowptr, colidx, values, x)},
    "c2cuda/symv_f32": lambda cfg, n, a, x: {"y": a.astype(f64) @ x.astype(f64)},
    "c2cuda/find_first_i32": lambda cfg, n, target, a: {
        "out": [int(np.argmax(a == target)) if (a == target).any() else -1]},
    "c2cuda/lower_bound_i32": lambda cfg, n, m, keys, queries: {"pos": np.searchsorted(keys, queries, "left")},
    "c2cuda/select_positive_f32": lambda cfg, n, x: {"out": x[x > 0], "count": [int((x > 0).sum())]},
    "c2cuda/complex_mul_f32": lambda cfg, n, a, b: {"c": _complex_mul(a, b)},
    "c2cuda/returns_f32": lambda cfg, n, p: {"r": (p[1:].astype(f64) - p[:-1]) / p[:-1]},
    "c2cuda/distinct_sorted_i32": lambda cfg, n, k, keys: {"out": np.unique(keys), "count": [len(np.unique(keys))]},
    "c2cuda/masked_axpy_f32": lambda cfg, n, alpha, mask, x, y: {"y": y + np.where(mask != 0, f64(alpha) * x, 0.0)},
    "c2cuda/partition_sign_f32": lambda cfg, n, x: {  # the C reference's arrangement: each side in input order
        "out": np.concatenate([x[x < 0], x[~(x < 0)]]), "split": [int((x < 0).sum())]},
    "c2cuda/rms_norm_rows_f32": lambda cfg, rows, cols, eps, x, w: {"y": _rms_norm(x, w, eps)},
    "c2cuda/logsumexp_rows_f32": lambda cfg, rows, cols, x: {"out": _logsumexp(x)},
    "c2cuda/cumsum_rows_f32": lambda cfg, rows, cols, x: {"y": np.cumsum(x.astype(f64), axis=1)},
    "c2cuda/col_sum_f32": lambda cfg, m, n, a: {"out": a.astype(f64).sum(axis=0)},
    "c2cuda/poly_eval_f32": lambda cfg, n, d, c, x: {"y": np.polyval(c.astype(f64)[::-1], x.astype(f64))},
    "c2cuda/reverse_f32": lambda cfg, n, x: {"y": x[::-1]},
    "c2cuda/avgpool2d_f32": lambda cfg, h, w, x: {"y": _avgpool2(x)},
    "c2cuda/outer_product_f32": lambda cfg, m, n, x, y: {"c": np.outer(x.astype(f64), y.astype(f64))},
    "c2cuda/pairwise_dist_f32": lambda cfg, n, m, d, a, b: {"out": _pairwise(a, b)},
    "c2cuda/nbody_accel_f32": lambda cfg, n, eps, px, py, pz, mass: _nbody(eps, px, py, pz, mass),
    "c2cuda/count_if_i32": lambda cfg, n, lo, hi, x: {"out": [int(((x >= lo) & (x < hi)).sum())]},
    "c2cuda/lut_u8": lambda cfg, n, x, lut: {"y": lut[x]},
}



# ----------------------------------------------------------------------------- GPU runs (--gpu/--perf)

SHIM = r"""
#include <cuda_runtime.h>
#include <stdio.h>
static void* ck_dev[%(nargs)d];
static void* ck_orig[%(nargs)d];
static void* ck_flush;
static const int ck_role[%(nargs)d] = {%(roles)s};  // 0 scalar, 1 in, 2 out, 3 inout
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    snprintf(err, errlen, "%%s (%%s) at %%s", cudaGetErrorName(e_), cudaGetErrorString(e_), #x); \
    return (int)e_; } } while (0)
static int ck_body(void** host, const long long* nb, const int* poison, int reps, float* ms,
                   char* err, int errlen) {
  const size_t kFlush = 256u << 20;
  for (int i = 0; i < %(nargs)d; ++i) {
    if (!ck_role[i]) continue;
    CK(cudaMalloc(&ck_dev[i], nb[i] ? nb[i] : 1));
    if (ck_role[i] != 2) {
      CK(cudaMalloc(&ck_orig[i], nb[i] ? nb[i] : 1));
      CK(cudaMemcpy(ck_orig[i], host[i], nb[i], cudaMemcpyHostToDevice));
    }
  }
  if (reps > 0) CK(cudaMalloc(&ck_flush, kFlush));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  int rounds = reps > 0 ? reps + 3 : 1;  // 2 warm-ups, reps timed, 1 checked
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < %(nargs)d; ++i) {
      if (ck_role[i] == 2) CK(cudaMemset(ck_dev[i], poison[i], nb[i]));
      else if (ck_role[i]) CK(cudaMemcpy(ck_dev[i], ck_orig[i], nb[i], cudaMemcpyDeviceToDevice));
    }
    if (ck_flush) CK(cudaMemset(ck_flush, r & 0xff, kFlush));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(t0));
    %(entry)s(%(call)s);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    if (r >= 2 && r < rounds - 1) CK(cudaEventElapsedTime(&ms[r - 2], t0, t1));
  }
  for (int i = 0; i < %(nargs)d; ++i)
    if (ck_role[i]) CK(cudaMemcpy(host[i], ck_dev[i], nb[i], cudaMemcpyDeviceToHost));
  return 0;
}
extern "C" int ck_run(void** host, const long long* nb, const int* poison, int reps, float* ms,
                      char* err, int errlen) {
  err[0] = 0;
  int rc = ck_body(host, nb, poison, reps, ms, err, errlen);
  for (int i = 0; i < %(nargs)d; ++i) {
    if (ck_dev[i]) cudaFree(ck_dev[i]);
    if (ck_orig[i]) cudaFree(ck_orig[i]);
    ck_dev[i] = ck_orig[i] = 0;
  }
  if (ck_flush) cudaFree(ck_flush);
  ck_flush = 0;
  return rc;
}
"""

POISONS = ({"float": 0xFF, "int": 0xA5}, {"float": 0x7F, "int": 0x5A})  # NaN / 0xA5, then big finite


def shim_source(task: Task) -> str:
    call = []
    for i, a in enumerate(task.args):
        ctype = DTYPES[a["dtype"]][1]
        if a["role"] == "scalar":
            call.append(f"*({ctype}*)host[{i}]")
        else:
            const = "const " if a["role"] == "in" else ""
            call.append(f"({const}{ctype}*)ck_dev[{i}]")
    roles = ", ".join(str(ROLES.index(a["role"])) for a in task.args)
    return SHIM % {"nargs": len(task.args), "roles": roles, "entry": task.entry, "call": ", ".join(call)}


def build_gpu_lib(task: Task, impl: dict[str, Any], workdir: Path) -> tuple[Path, str]:
    src = workdir / f"{task.name}__{impl['name']}__gpu.cu"
    text = (f'extern "C" {task.signature()};\n#line 1 "{impl["name"]}.cu"\n{impl["source"]}\n'
            f'#line 1 "shim.cu"\n{shim_source(task)}')
    lib = src.with_suffix(".so")
    if lib.exists() and src.exists() and src.read_text() == text:
        return lib, ""  # built by an earlier phase of this run
    src.write_text(text)
    p = run_cmd([NVCC, "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(src)])
    return lib, (p.stderr + p.stdout if p.returncode else "")


def gpu_call(task: Task, lib: ctypes.CDLL, vals: dict[str, Any], poison: dict[str, int],
             reps: int) -> tuple[dict[str, Any], list[float]]:
    work = {k: (v.copy() if v.ndim else v) for k, v in vals.items()}
    n = len(task.args)
    host = (ctypes.c_void_p * n)(*[work[a["name"]].ctypes.data for a in task.args])
    nb = (ctypes.c_longlong * n)(*[work[a["name"]].nbytes for a in task.args])
    pz = (ctypes.c_int * n)(*[poison["float" if a["dtype"].startswith("float") else "int"]
                              for a in task.args])
    ms = (ctypes.c_float * max(reps, 1))()
    err = ctypes.create_string_buffer(512)
    rc = lib.ck_run(host, nb, pz, reps, ms, err, 512)
    if rc:
        raise RuntimeError(f"CUDA error {rc}: {err.value.decode()}")
    return work, list(ms)[:reps]


def gpu_worker(task_path: Path, impl_names: list[str], mode: str, seed: int, workdir: Path,
               small: bool = False) -> None:
    """Runs in a child process (a CUDA error poisons the context); prints one JSON line."""
    task = check_schema(task_path)
    result: dict[str, Any] = {}
    rng = np.random.default_rng(seed)
    if mode == "correct":
        ref = build_reference(task, workdir)
        cases = []
        cfgs = task.data["configs"] + task.data["hidden_configs"]
        for cfg in smallest_first(task, cfgs)[:2] if small else cfgs:
            vals = make_inputs(task, cfg, rng)
            cases.append((cfg, vals, run_reference(task, ref, vals)))
        for name in impl_names:
            lib = ctypes.CDLL(str(workdir / f"{task.name}__{name}__gpu.so"))
            worst, errors = 0.0, []
            for cfg, vals, want in cases:
                for poison in POISONS:
                    try:
                        got, _ = gpu_call(task, lib, vals, poison, 0)
                    except RuntimeError as e:
                        errors.append(f"{cfg}: {e}")
                        break
                    for a in task.buffers():
                        ok, r = compare(task, a["dtype"], *as_checked(a, got, want))
                        if a["role"] != "in":
                            worst = max(worst, r)
                        if not ok:
                            errors.append(f"{cfg} poison {poison['int']:#x}: {a['name']} "
                                          f"{'modified' if a['role'] == 'in' else 'wrong'} (err/allowed {r:.3g})")
            result[name] = {"ok": not errors, "worst": worst, "errors": errors[:4]}
    else:
        for cfg in task.data.get("perf_configs", []):
            vals = make_inputs(task, cfg, rng)
            base_out = None
            for name in [task.data["baseline"]] + [n for n in impl_names if n != task.data["baseline"]]:
                if name not in impl_names:
                    continue
                lib = ctypes.CDLL(str(workdir / f"{task.name}__{name}__gpu.so"))
                key = f"{name} {cfg}"
                try:
                    got, ms = gpu_call(task, lib, vals, POISONS[0], 10)
                except RuntimeError as e:
                    result[key] = {"ok": False, "errors": [str(e)]}
                    continue
                agree = 0.0  # worst err/allowed against the baseline's outputs
                if base_out is None:
                    base_out = got
                for a in task.buffers():
                    if a["role"] != "in":
                        agree = max(agree, compare(task, a["dtype"], got[a["name"]], base_out[a["name"]])[1])
                result[key] = {"ok": True, "ms": float(np.median(ms)), "min_ms": float(min(ms)),
                               "vs_baseline": agree}
    print("RESULT " + json.dumps(result), flush=True)


def run_gpu(tasks: list[Task], workdir: Path, mode: str, seed: int, jobs: int,
            small: bool = False) -> list[list[str]]:
    """Builds all implementations, then runs one child per task; returns table rows."""
    todo = [(t, im) for t in tasks for im in t.data["implementations"]]
    built: dict[tuple[str, str], str] = {}
    with cf.ThreadPoolExecutor(jobs) as ex:
        futs = {ex.submit(build_gpu_lib, t, im, workdir): (t.id, im["name"]) for t, im in todo}
        for f in cf.as_completed(futs):
            built[futs[f]] = f.result()[1]
    rows = []
    for t in tasks:
        names = [im["name"] for im in t.data["implementations"] if not built[(t.id, im["name"])]]
        for im in t.data["implementations"]:
            if built[(t.id, im["name"])]:
                rows.append([t.id, im["name"], "FAIL", "nvcc -shared: " + built[(t.id, im["name"])][-300:]])
        p = subprocess.run([sys.executable, __file__, "--_worker", str(t.path), "--mode", mode,
                            "--seed", str(seed), "--workdir", str(workdir), *(["--small"] if small else []),
                            *names],
                           capture_output=True, text=True, timeout=900)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            rows.append([t.id, ",".join(names), "FAIL", f"worker died rc={p.returncode}: {p.stderr[-400:]}"])
            continue
        if p.returncode != 0:  # e.g. compute-sanitizer's --error-exitcode
            rows.append([t.id, ",".join(names), "FAIL", f"worker exited with {p.returncode}: "
                         f"{(p.stdout + p.stderr)[-400:]}"])
        for name, r in json.loads(line[7:]).items():
            if mode == "correct":
                detail = f"worst err/allowed {r['worst']:.2g}" if r["ok"] else "; ".join(r["errors"])
            else:
                detail = (f"{r['ms']:.4f} ms (min {r['min_ms']:.4f}), vs baseline err/allowed "
                          f"{r['vs_baseline']:.2g}") if r["ok"] else "; ".join(r["errors"])
            rows.append([t.id, name, "ok" if r["ok"] else "FAIL", detail])
    return rows


# ----------------------------------------------------------------------------- driver

def check_task(path: Path, workdir: Path, seed: int) -> list[list[str]]:
    """Schema, nvcc compile of each implementation, C reference vs numpy; returns table rows."""
    try:
        task = check_schema(path)
    except (CheckError, yaml.YAMLError) as e:
        return [[path.stem, "-", "FAIL", f"schema: {e}"]]
    rows = []
    try:
        lib = build_reference(task, workdir)
        rows.append([task.id, "reference", "ok", check_reference(task, lib, seed)])
    except CheckError as e:
        rows.append([task.id, "reference", "FAIL", str(e)])
    with cf.ThreadPoolExecutor(4) as ex:
        res = list(ex.map(lambda im: (im, nvcc_cubin(task, im, workdir)), task.data["implementations"]))
    for im, (ok, msg) in res:
        base = " (baseline)" if im["name"] == task.data["baseline"] else ""
        rows.append([task.id, im["name"] + base, "ok" if ok else "FAIL",
                     f"[{', '.join(im['strategies'])}] {msg}"])
    return rows


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:3])) + "  " + r[3].replace("\n", " | ")[:400])


def summary(paths: list[Path]) -> None:
    fams: dict[str, list[str]] = {}
    for p in paths:
        d = yaml.safe_load(p.read_text())
        fams.setdefault(d["family"], []).append(d["id"])
    print(f"\n{len(paths)} tasks, {len(fams)} families: "
          + ", ".join(f"{k} ({len(v)})" for k, v in sorted(fams.items())))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="task names (file stems) to check; default all")
    ap.add_argument("--gpu", action="store_true", help="also run every implementation on the GPU")
    ap.add_argument("--perf", action="store_true", help="time implementations on perf configs (GPU)")
    ap.add_argument("--no-static", action="store_true", help="skip nvcc -cubin and reference checks")
    ap.add_argument("--small", action="store_true",
                    help="GPU correctness on the two smallest configs only (e.g. under compute-sanitizer)")
    ap.add_argument("--dir", type=Path, default=TASK_DIR, help="task directory (default: the bundled one)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--workdir", type=Path, default=None, help="keep build files here")
    ap.add_argument("--_worker", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="correct", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._worker:
        gpu_worker(args._worker, args.names, args.mode, args.seed, args.workdir, args.small)
        return 0
    paths = sorted(args.dir.glob("*.yaml"))
    if args.names:
        paths = [p for p in paths if p.stem in set(args.names)]
        missing = set(args.names) - {p.stem for p in paths}
        if missing:
            print(f"no such task files: {sorted(missing)}", file=sys.stderr)
            return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="starter_check_"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[list[str]] = []
    t0 = time.time()
    if not args.no_static:
        with cf.ThreadPoolExecutor(max(1, args.jobs // 2)) as ex:
            for r in ex.map(lambda p: check_task(p, workdir, args.seed), paths):
                rows += r
    tasks = []
    for p in paths:
        with contextlib.suppress(CheckError, yaml.YAMLError):  # already reported
            tasks.append(check_schema(p))
    if args.gpu:
        rows += [["--- gpu correctness", "", "", ""]] + run_gpu(tasks, workdir, "correct", args.seed,
                                                                 args.jobs, args.small)
    if args.perf:
        rows += [["--- gpu perf", "", "", ""]] + run_gpu(tasks, workdir, "perf", args.seed, args.jobs)
    print_table(rows)
    summary(paths)
    fails = sum(r[2] == "FAIL" for r in rows)
    print(f"{fails} failure(s); {time.time() - t0:.1f} s; build files in {workdir}")
    return 1 if fails or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
