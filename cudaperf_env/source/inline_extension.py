"""A KernelBench-mode submission's ``load_inline(...)`` calls, read statically, and the screen of their C++.

The arguments must be constants the parent can read from the AST (string literals,
module-level names bound to them, ``+`` of them, lists of them): the parent builds the
extension itself (``backends/cuda/extension_build.py``) from exactly what it screened,
and the worker's ``load_inline`` only loads that build, matched by :meth:`InlineExtension.key`.
Compiler flags come from a short allowlist (optimization level, fast math, macros):
everything else about the build is fixed, as in native mode.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cudaperf_env.source.phases import translate
from cudaperf_env.source.screen import Finding, screen
from cudaperf_env.source.unit import parse

# Keyword arguments of load_inline a submission may pass; positional: name, cpp_sources, cuda_sources.
KEYWORDS = frozenset({"name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                      "extra_ldflags", "extra_include_paths", "verbose", "with_cuda"})  # fmt: skip
POSITIONAL = ("name", "cpp_sources", "cuda_sources")
# The flags a submission may add; the rest of the build (arch, includes, libraries) is fixed.
_FLAG = re.compile(
    r"-O[0-3]|--?use_fast_math|-ffast-math|-std=c\+\+(17|20)|-lineinfo|--expt-relaxed-constexpr|--extended-lambda"
    r"|-D[A-Za-z_]\w*(=[\w.+-]*)?|-U[A-Za-z_]\w*|--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)"
    r"|--?maxrregcount[= ]?\d{1,3}|-Xptxas=-v|-Xptxas -v|-w|-Wall|-Wno-[\w-]+|-march=native|-funroll-loops"
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w{0,63}")
# The C++ screen's rules that are about a native submission's shape (an entry, a launch), not its safety.
_SHAPE_RULES = frozenset({"no_kernel", "no_entry", "entry_is_kernel", "no_launch"})
# C++ names that reach past the extension's job: pybind11 (load_inline writes the bindings from ``functions``),
# the dispatcher (what the worker's op guard sees), operator registration; and, after `torch::`/`at::`/`c10::`,
# dispatcher internals, TorchScript and serialization.
_ESCAPES: Mapping[str, str] = {
    "pybind11": "pybind11", "PYBIND11_MODULE": "pybind11", "PYBIND11_PLUGIN": "pybind11",
    "DispatchKey": "the dispatcher", "DispatchKeySet": "the dispatcher", "Dispatcher": "the dispatcher",
    "ExcludeDispatchKeyGuard": "the dispatcher", "IncludeDispatchKeyGuard": "the dispatcher",
    "AutoDispatchBelowAutograd": "the dispatcher", "AutoDispatchBelowADInplaceOrView": "the dispatcher",
    "AutoDispatchSkipFunctionalize": "the dispatcher", "TorchDispatchModeTLS": "the dispatcher",
    "PythonTLSSnapshot": "the dispatcher", "redispatch": "the dispatcher", "TORCH_LIBRARY": "operator registration",
    "TORCH_LIBRARY_IMPL": "operator registration", "TORCH_LIBRARY_FRAGMENT": "operator registration",
}  # fmt: skip
_TORCH_MEMBERS: Mapping[str, str] = {
    "impl": "the dispatcher", "_ops": "the dispatcher", "jit": "TorchScript", "load": "serialization",
    "save": "serialization", "pickle_load": "serialization", "pickle_save": "serialization",
}  # fmt: skip
_PYTHON_API = re.compile(r"_?Py[A-Z_]\w*")


@dataclass(frozen=True)
class InlineExtension:
    """One ``load_inline(...)`` call of a submission, its arguments as the parent read them.

    Attributes:
        name: The module name (``name=``).
        cpp_sources: C++ sources, in order (load_inline adds ``#include <torch/extension.h>`` first).
        cuda_sources: CUDA sources, in order.
        functions: The functions load_inline binds (``functions=``).
        cflags: ``extra_cflags`` (from the allowlist).
        cuda_cflags: ``extra_cuda_cflags`` (from the allowlist).
        line: Line of the call in the submission.
        binding: The module-level name its result is bound to.
    """

    name: str
    cpp_sources: tuple[str, ...]
    cuda_sources: tuple[str, ...]
    functions: tuple[str, ...]
    cflags: tuple[str, ...] = ()
    cuda_cflags: tuple[str, ...] = ()
    line: int = 0
    binding: str = ""

    @property
    def key(self) -> str:
        """Digest of what the build depends on; the worker's ``load_inline`` computes it from its arguments."""
        return extension_key(self.name, self.cpp_sources, self.cuda_sources, self.functions, self.cflags,
                             self.cuda_cflags)  # fmt: skip


def extension_key(name: str, cpp_sources: Any, cuda_sources: Any, functions: Any, cflags: Any = (),
                  cuda_cflags: Any = ()) -> str:  # fmt: skip
    """The digest :attr:`InlineExtension.key` names (``kernelbench_worker.py`` restates it: standard library only)."""

    def strings(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else [str(v) for v in value or ()]

    text = json.dumps([name, strings(cpp_sources), strings(cuda_sources), strings(functions), strings(cflags),
                       strings(cuda_cflags)])  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


class NotConstant(ValueError):
    """An argument the parent cannot read statically; the message says which and what to do."""


def fold(node: ast.expr, constants: Mapping[str, Any]) -> Any:
    """The value of a constant expression: literals, module-level names bound to them, ``+``, lists, tuples,
    f-strings of constants. Raises :class:`NotConstant` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [fold(e, constants) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold(node.left, constants), fold(node.right, constants)
        if type(left) is type(right) and isinstance(left, (str, list)):
            return left + right
    if isinstance(node, ast.JoinedStr):
        return "".join(_formatted(v, constants) for v in node.values)
    raise NotConstant(f"`{ast.unparse(node)[:60]}` is not a constant")


def _formatted(node: ast.expr, constants: Mapping[str, Any]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.FormattedValue) and node.conversion == -1 and node.format_spec is None:
        value = fold(node.value, constants)
        if isinstance(value, (str, int)):
            return str(value)
    raise NotConstant("an f-string part is not a constant string or integer")


def read_call(call: ast.Call, constants: Mapping[str, Any], binding: str) -> tuple[InlineExtension | None, str]:
    """The extension a ``load_inline(...)`` call builds, or why it cannot be read (a message for the agent)."""
    if len(call.args) > len(POSITIONAL) or any(isinstance(a, ast.Starred) for a in call.args):
        return None, ("pass load_inline's arguments by keyword (name=, cpp_sources=, cuda_sources=, "
                      "functions=, ...), at most name, cpp_sources and cuda_sources by position")  # fmt: skip
    values: dict[str, Any] = {}
    nodes = list(zip(POSITIONAL, call.args, strict=False)) + [(k.arg, k.value) for k in call.keywords]
    for key, node in nodes:
        if key is None or key not in KEYWORDS:
            return None, (f"load_inline's `{key or '**'}` argument is not allowed: the build is fixed apart "
                          f"from {', '.join(sorted(KEYWORDS))}")  # fmt: skip
        try:
            values[key] = fold(node, constants)
        except NotConstant as exc:
            return None, (f"load_inline's `{key}` must be written as constants in the source (string literals, "
                          f"module-level names bound to them, `+` of them): {exc}")  # fmt: skip
    return _extension(values, call.lineno, binding)


def _extension(values: dict[str, Any], line: int, binding: str) -> tuple[InlineExtension | None, str]:
    name = values.get("name")
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        return None, "load_inline needs name='...', a Python identifier (letters, digits, underscores)"
    sources = {key: _strings(values.get(key)) for key in ("cpp_sources", "cuda_sources", "functions")}
    if sources["cpp_sources"] is None or sources["cuda_sources"] is None:
        return None, "cpp_sources and cuda_sources must be a string or a list of strings"
    functions = sources["functions"]
    if not functions or not all(_IDENTIFIER.fullmatch(f) for f in functions):
        return None, ("load_inline needs functions=[...]: the names of the C++ functions to bind (declared in "
                      "cpp_sources), as identifiers")  # fmt: skip
    flags: dict[str, tuple[str, ...]] = {}
    for key in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths"):
        raw = _strings(values.get(key))
        if raw is None:
            return None, f"{key} must be a list of strings"
        given = tuple(f.strip() for f in raw if f.strip())
        if key in ("extra_ldflags", "extra_include_paths") and given:
            return None, (f"{key} is not allowed ({' '.join(given)[:80]}): the extension links torch and the CUDA "
                          "runtime only; write the computation as your own kernels")  # fmt: skip
        bad = [f for f in given if not _FLAG.fullmatch(f)]
        if bad:
            return None, (f"the compiler flag `{bad[0][:60]}` is not allowed; allowed: -O0..-O3, "
                          "--use_fast_math, -std=c++17/20, -lineinfo, -DNAME[=VALUE], --maxrregcount=N and a few "
                          "warning flags")  # fmt: skip
        flags[key] = given
    if not isinstance(values.get("verbose", False), bool) or not isinstance(values.get("with_cuda", True), bool):
        return None, "verbose and with_cuda must be True or False"
    return InlineExtension(name, tuple(sources["cpp_sources"]), tuple(sources["cuda_sources"]), tuple(functions),
                           flags["extra_cflags"], flags["extra_cuda_cflags"], line, binding), ""  # fmt: skip


def _strings(value: Any) -> list[str] | None:
    """A string or a list of strings as a list (None: neither); None stays empty."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def screen_extension(ext: InlineExtension) -> tuple[Finding, ...]:
    """The C++ screen of native mode on each source (torch's headers and namespaces allowed: they are the
    extension's interface), plus the names that reach the interpreter or the dispatcher. Findings carry the
    call's line; the message names the source and its own line."""
    findings: list[Finding] = []
    entry = ext.functions[0]
    for field, sources in (("cpp_sources", ext.cpp_sources), ("cuda_sources", ext.cuda_sources)):
        for k, source in enumerate(sources):
            where = f"{field}" + (f"[{k}]" if len(sources) > 1 else "")
            hits = [f for f in screen(source, entry=entry, allow_libraries=frozenset({"torch"}))
                    if f.rule not in _SHAPE_RULES]  # fmt: skip
            hits += _escapes(source)
            findings += [Finding(ext.line, f.rule, f"in {where}, line {f.line}: {f.message}") for f in hits]
    return tuple(findings)


def _escapes(source: str) -> list[Finding]:
    unit = parse(translate(source))
    found = []
    for toks in (unit.code, *(m.body for m in unit.defines)):
        for k, tok in enumerate(toks):
            if tok.kind != "ident" or (k and toks[k - 1].text in (".", "->")):
                continue
            scope = toks[k - 2].text if k >= 2 and toks[k - 1].text == "::" else ""
            followed = k + 1 < len(toks) and toks[k + 1].text == "::"
            what = _ESCAPES.get(tok.text) or ("pybind11" if tok.text == "py" and followed else "")
            what = what or (_TORCH_MEMBERS.get(tok.text, "") if scope in ("torch", "at", "c10") else "")
            if what:
                found.append(Finding(tok.line, "extension_escape", (
                    f"`{tok.text}` reaches {what}, which an extension may not use: bind your functions with "
                    "load_inline's functions=[...] and compute with your own kernels")))  # fmt: skip
            elif _PYTHON_API.fullmatch(tok.text):
                found.append(Finding(tok.line, "extension_escape", (
                    f"`{tok.text}` is the Python C API, which an extension may not use: take and return "
                    "torch::Tensor and compute with your own kernels")))  # fmt: skip
    return found
