"""The static screen of a KernelBench-mode submission: Python defining ``ModelNew``, read as an AST, never run.

It runs in the trusted parent before anything is built. What it allows:

* imports of ``torch``, ``torch.nn``, ``torch.nn.functional``, ``torch.utils.cpp_extension`` and ``math`` only;
* at module level only imports, constants (the C++/CUDA source strings), ``name = load_inline(...)``
  with constant arguments (``inline_extension.py``), and definitions;
* in ``ModelNew.__init__``: building modules and parameters (``nn.Linear``, ``nn.Parameter``, ...),
  so the task's parameters can be loaded into it by ``state_dict`` key;
* on the forward path (every other function): the extension's bound functions, tensor allocation
  (``torch.empty``, ``empty_like``, ``empty_strided``, ``zeros``, ``zeros_like``: an accumulator may
  need zeros), views and shape methods, plain Python arithmetic on sizes.

What it refuses, each with the line and what to do instead: any other ``torch``/``torch.nn``/``F``
call or reference on the forward path (PyTorch doing the work), calling a submodule (``self.fc(x)``),
``@``, ``try``/``except`` (a fallback), any reference to ``Model``, other imports, ``eval``/``exec``/
``open``/``getattr``/``__import__`` and their kind, names and attributes that start with ``_``,
assignments to attributes of anything but ``self``, ``global``, generators and async code.

It is the first line, not the boundary: tensor arithmetic (``x + y``) cannot be told from size
arithmetic here, so the worker's op guard (``backends/cuda/kernelbench_worker.py``) refuses, at run
time, a forward that dispatches PyTorch compute or never calls the extension.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cudaperf_env.source.inline_extension import InlineExtension, NotConstant, fold, read_call, screen_extension
from cudaperf_env.source.screen import Finding

MODULES = frozenset({"torch", "torch.nn", "torch.nn.functional", "torch.utils", "torch.utils.cpp_extension", "math"})
LOAD_INLINE = "torch.utils.cpp_extension.load_inline"
ALLOCATION = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like"})
# torch names that are values or contexts, not compute.
TORCH_VALUES = frozenset({
    "float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "int16", "int32", "int64",
    "long", "int", "uint8", "bool", "Tensor", "Size", "device", "dtype", "no_grad", "inference_mode",
})  # fmt: skip
# torch calls that make parameters in __init__ (their values are replaced by the task's).
INIT_ONLY = frozenset({"randn", "rand", "ones", "full", "tensor", "arange", "ones_like", "randn_like"})
# Tensor methods the forward path may call: views, shapes, allocation, device moves.
SAFE_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "contiguous", "flatten", "unflatten", "squeeze", "unsqueeze",
    "permute", "transpose", "t", "expand", "expand_as", "narrow", "select", "unbind", "split", "chunk", "movedim",
    "size", "dim", "numel", "nelement", "stride", "storage_offset", "data_ptr", "is_contiguous", "element_size",
    "new_empty", "new_zeros", "zero_", "cuda", "to", "float", "detach", "get_device", "item",
})  # fmt: skip
# Tensor methods that compute (a static list of the common ones; the worker's op guard has the rest).
COMPUTE_METHODS = frozenset({
    "abs", "acos", "add", "addcmul", "addcdiv", "addmm", "addmv", "all", "amax", "amin", "any", "argmax", "argmin",
    "argsort", "asin", "atan", "atan2", "baddbmm", "bmm", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "clone",
    "copy", "cos", "cosh", "cross", "cummax", "cummin", "cumprod", "cumsum", "diag", "div", "divide", "dot", "einsum",
    "eq", "erf", "exp", "exp2", "expm1", "fill", "flip", "floor", "fmod", "gather", "ge", "gelu", "gt", "hardtanh",
    "index_add", "index_copy", "index_fill", "index_put", "index_select", "isfinite", "isnan", "kthvalue", "le",
    "lerp", "log", "log10", "log1p", "log2", "log_softmax", "logical_and", "logical_not", "logical_or", "logsumexp",
    "lt", "masked_fill", "masked_scatter", "masked_select", "matmul", "max", "maximum", "mean", "median", "min",
    "minimum", "mm", "mode", "mul", "multiply", "mv", "nan_to_num", "nanmean", "nansum", "ne", "neg", "negative",
    "norm", "outer", "pow", "prod", "quantile", "reciprocal", "relu", "remainder", "renorm", "repeat",
    "repeat_interleave", "roll", "round", "rsqrt", "scatter", "scatter_add", "scatter_reduce", "sigmoid", "sign",
    "silu", "sin", "sinh", "softmax", "sort", "sqrt", "square", "std", "sub", "subtract", "sum", "take", "tan",
    "tanh", "tensordot", "topk", "trace", "tril", "triu", "true_divide", "trunc", "unique", "var", "where", "xlogy",
    "format", "format_map",
})  # fmt: skip
FORBIDDEN_BUILTINS = frozenset({
    "eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr", "hasattr", "globals",
    "locals", "vars", "dir", "input", "breakpoint", "help", "memoryview", "type", "object", "id", "hash", "exit",
    "quit",
})  # fmt: skip
# nn.Module's own methods, which the harness calls (state_dict, to, ...): a submission may not redefine them.
MODULE_METHODS = frozenset({
    "state_dict", "load_state_dict", "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "apply",
    "train", "eval", "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
    "modules", "named_modules", "register_buffer", "register_parameter", "register_module", "add_module",
    "get_parameter", "get_buffer", "get_submodule", "zero_grad", "requires_grad_", "share_memory", "to_empty",
})  # fmt: skip
DO_INSTEAD = (
    "the work must be done by your own CUDA kernels, compiled with load_inline and called from forward "
    "through the extension (forward may also allocate with torch.empty/empty_like/zeros and take views)"
)


@dataclass(frozen=True)
class PythonScreen:
    """The screen's verdict on a submission.

    Attributes:
        findings: Refusals, sorted by line (empty: accepted); rule ``syntax`` means the Python does not parse.
        extensions: The ``load_inline`` calls read from it (the parent builds exactly these).
    """

    findings: tuple[Finding, ...]
    extensions: tuple[InlineExtension, ...] = ()


@dataclass
class _Scope:
    """Module-level facts the function bodies are judged against."""

    aliases: dict[str, str] = field(default_factory=dict)  # name -> qualified torch/math path
    constants: dict[str, Any] = field(default_factory=dict)
    extensions: dict[str, InlineExtension] = field(default_factory=dict)  # binding name -> extension
    self_extensions: dict[str, InlineExtension] = field(default_factory=dict)  # self.<attr> -> extension
    functions: set[str] = field(default_factory=set)  # module-level helpers
    findings: list[Finding] = field(default_factory=list)

    def refuse(self, node: ast.AST | int, rule: str, message: str) -> None:
        line = node if isinstance(node, int) else getattr(node, "lineno", 0)
        self.findings.append(Finding(line, rule, message))


def screen_python(code: str) -> PythonScreen:
    """Check a KernelBench-mode submission (see the module docstring); never raises on bad input."""
    try:
        tree = ast.parse(code, "submission.py")
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", 0) or 0
        return PythonScreen((Finding(line, "syntax", f"Python syntax error: {getattr(exc, 'msg', exc)}"),))
    except RecursionError:
        return PythonScreen((Finding(0, "syntax", "the Python nests too deeply to be read"),))
    scope = _Scope()
    classes = _module_level(tree, scope)
    model = classes.get("ModelNew")
    if model is None:
        scope.refuse(0, "no_model", "no `class ModelNew(nn.Module)` was found: define it, with __init__ taking the "
                                    "same arguments as Model and forward taking the same inputs")  # fmt: skip
    elif not any(isinstance(f, ast.FunctionDef) and f.name == "forward" for f in model.body):
        scope.refuse(model, "no_forward", "ModelNew defines no forward(self, ...): define it")
    if not scope.extensions and not any(f.rule.startswith("load_inline") for f in scope.findings):
        scope.refuse(0, "no_extension", "no `name = load_inline(...)` at module level: compile your CUDA "
                                        "kernels with torch.utils.cpp_extension.load_inline and call them from "
                                        "forward")  # fmt: skip
    for cls in classes.values():
        _screen_class(cls, scope)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            _Body(scope, init=False, methods=frozenset()).visit_function(node)
    for ext in scope.extensions.values():
        scope.findings += screen_extension(ext)
    unique = {(f.line, f.rule, f.message): f for f in scope.findings}
    return PythonScreen(tuple(sorted(unique.values(), key=lambda f: (f.line, f.rule, f.message))),
                        tuple(scope.extensions.values()))  # fmt: skip


def _module_level(tree: ast.Module, scope: _Scope) -> dict[str, ast.ClassDef]:
    """Imports, constants and load_inline calls, in order; returns the classes."""
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _import(node, scope)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            _module_assign(node, scope)
        elif isinstance(node, ast.FunctionDef):
            scope.functions.add(node.name)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a docstring
        else:
            scope.refuse(node, "module_code", (
                "module-level code runs when the submission is loaded: keep only imports, the source strings, "
                "`name = load_inline(...)` and definitions at module level"))  # fmt: skip
    return classes


def _import(node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
    if isinstance(node, ast.Import):
        bound = [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0], a.name)
                 for a in node.names]  # fmt: skip
    else:
        base = "." * node.level + (node.module or "")
        bound = [(a.asname or a.name, f"{base}.{a.name}", base) for a in node.names]
    for name, path, module in bound:
        if module not in MODULES:
            scope.refuse(node, "import", f"`import {module}` is not allowed: import only torch, torch.nn, "
                                         "torch.nn.functional, torch.utils.cpp_extension and math")  # fmt: skip
        elif name == "*":
            scope.refuse(node, "import", "`import *` is not allowed: import names one by one")
        elif path.startswith("torch.utils.cpp_extension.") and path != LOAD_INLINE:
            scope.refuse(node, "import", f"`{path.rsplit('.', 1)[1]}` is not allowed: compile with load_inline")
        else:
            scope.aliases[name] = path


def _module_assign(node: ast.Assign | ast.AnnAssign, scope: _Scope) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
        scope.refuse(node, "module_code", "at module level assign one name at a time (`name = ...`)")
        return
    name, value = targets[0].id, node.value
    if name.startswith("__") or name in FORBIDDEN_BUILTINS or name == "Model":
        scope.refuse(node, "name", f"the name `{name}` is not allowed: choose another")
    if isinstance(value, ast.Call) and _qualified(value.func, scope) == LOAD_INLINE:
        ext, why = read_call(value, scope.constants, name)
        if ext is None:
            scope.refuse(node, "load_inline", why)
        else:
            scope.extensions[name] = ext
        return
    try:
        scope.constants[name] = fold(value, scope.constants)
    except NotConstant:
        scope.refuse(node, "module_code", (
            f"`{name} = {ast.unparse(value)[:60]}` runs code at module level: a module-level name may hold only a "
            "constant (a source string, a number) or the result of load_inline(...)"))  # fmt: skip


def _screen_class(cls: ast.ClassDef, scope: _Scope) -> None:
    if cls.decorator_list or cls.keywords:
        scope.refuse(cls, "class", f"class {cls.name}: decorators and class keywords are not allowed")
    if [_qualified(b, scope) for b in cls.bases] != ["torch.nn.Module"]:
        scope.refuse(cls, "class", f"class {cls.name} must derive from nn.Module only")
    methods = frozenset(f.name for f in cls.body if isinstance(f, ast.FunctionDef))
    for init in (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"):
        for assign in (n for n in ast.walk(init) if isinstance(n, ast.Assign)):
            if isinstance(assign.value, ast.Name) and assign.value.id in scope.extensions:
                for target in assign.targets:
                    if _is_self_attribute(target):
                        assert isinstance(target, ast.Attribute)
                        scope.self_extensions[target.attr] = scope.extensions[assign.value.id]
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in MODULE_METHODS:
            scope.refuse(node, "module_method", f"`{node.name}` redefines nn.Module's own method, which the harness "
                                                "uses (loading parameters, moving the model): rename it")  # fmt: skip
        if isinstance(node, ast.FunctionDef):
            _Body(scope, init=node.name == "__init__", methods=methods).visit_function(node)
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            scope.refuse(node, "class", f"class {cls.name} may hold only methods: set attributes in __init__")


def _qualified(node: ast.AST, scope: _Scope) -> str | None:
    """``torch.nn.functional.relu`` for ``F.relu`` (after ``import torch.nn.functional as F``); None when the
    expression does not start at an imported name."""
    if isinstance(node, ast.Name):
        return scope.aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, scope)
        return f"{base}.{node.attr}" if base is not None else None
    return None


class _Body(ast.NodeVisitor):
    """The rules inside one function (``init``: a class's ``__init__``, where modules may be built)."""

    def __init__(self, scope: _Scope, init: bool, methods: frozenset[str]) -> None:
        self.scope, self.init, self.methods = scope, init, methods

    def visit_function(self, node: ast.FunctionDef) -> None:
        if any(not (isinstance(d, ast.Name) and d.id == "staticmethod") for d in node.decorator_list):
            self.scope.refuse(node, "decorator", f"the decorator on `{node.name}` is not allowed: remove it")
        if node.name.startswith("__") and node.name != "__init__":
            self.scope.refuse(node, "name", f"the method name `{node.name}` is not allowed: choose another")
        for child in [*node.args.defaults, *node.args.kw_defaults, *node.body]:
            if child is not None:
                self.visit(child)

    def refuse(self, node: ast.AST, rule: str, message: str) -> None:
        self.scope.refuse(node, rule, message)

    def visit_Try(self, node: ast.AST) -> None:
        self.refuse(node, "try", "try/except is not allowed (it can hide a failing kernel behind a fallback): "
                                 "let errors surface; the harness reports them")  # fmt: skip
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if _qualified(getattr(item.context_expr, "func", None) or item.context_expr, self.scope) not in (
                "torch.no_grad", "torch.inference_mode"):  # fmt: skip
                self.refuse(node, "with", "the only `with` allowed is `with torch.no_grad():`")
        self.generic_visit(node)

    def _forbidden_statement(self, node: ast.AST) -> None:
        what = type(node).__name__.lower()
        self.refuse(node, "statement", f"`{what}` is not allowed in a submission: keep forward a plain function")

    visit_Global = visit_Nonlocal = visit_Import = visit_ImportFrom = _forbidden_statement
    visit_AsyncFunctionDef = visit_Await = visit_Yield = visit_YieldFrom = visit_ClassDef = _forbidden_statement

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # a nested helper: same rules
        self.visit_function(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in FORBIDDEN_BUILTINS or name.startswith("__"):
            self.refuse(node, "builtin", f"`{name}` is not allowed: a submission may not reach the interpreter, "
                                         "files or other code")  # fmt: skip
        elif name == "Model":
            self.refuse(node, "reference_model", "ModelNew may not use the reference `Model`: " + DO_INSTEAD)
        elif name == "super" and not self.init:
            self.refuse(node, "builtin", "super() belongs in __init__ only (super().__init__())")
        elif name in self.scope.aliases:
            path = self.scope.aliases[name]
            if path in MODULES:
                self.refuse(node, "module_value", f"`{name}` (the {path} module) may only be used as `{name}.name`")
            else:
                self._torch(node, path)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        super_init = node.attr == "__init__" and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Name) and node.value.func.id == "super"  # fmt: skip
        path = _qualified(node, self.scope)
        hidden = next((p for p in (path or "").split(".") if p.startswith("_")), node.attr)
        if hidden.startswith("_") and not super_init:
            self.refuse(node, "private", f"`.{hidden}`: names that start with `_` are not allowed")
        if path is not None:
            self._torch(node, path)
            return  # the imported name at its base is part of this path
        self.generic_visit(node)

    def _torch(self, node: ast.AST, path: str) -> None:
        """A use of ``torch.x``/``nn.x``/``F.x``/``math.x`` (called or not)."""
        head, _, last = path.rpartition(".")
        if path.startswith("math.") or path in MODULES:
            return
        if path == LOAD_INLINE:
            self.refuse(node, "load_inline", "call load_inline once, at module level: `ext = load_inline(...)`")
        elif path.startswith("torch.nn.functional."):
            self.refuse(node, "torch_compute", f"`{path}` is PyTorch compute: {DO_INSTEAD}")
        elif path.startswith("torch.nn."):
            if not self.init and path != "torch.nn.Module":
                self.refuse(node, "torch_compute", f"`{path}` builds or runs a PyTorch module; in forward, "
                                                   f"{DO_INSTEAD}")  # fmt: skip
        elif path.startswith("torch.cuda."):
            self.refuse(node, "torch_cuda", f"`{path}`: streams, devices and synchronization belong to the "
                                            "harness; launch on the current stream "
                                            "(at::cuda::getCurrentCUDAStream())")  # fmt: skip
        elif head != "torch" or not (last in ALLOCATION or last in TORCH_VALUES or (self.init and last in INIT_ONLY)):
            self.refuse(node, "torch_compute", f"`{path}` is PyTorch compute: {DO_INSTEAD}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and _qualified(func, self.scope) is None:
            self._method_call(node, func)
        self.generic_visit(node)

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        receiver, method = func.value, func.attr
        ext = self._extension_of(receiver)
        if ext is not None:
            if method not in ext.functions:
                self.refuse(node, "extension", f"`{method}` is not bound by load_inline(name={ext.name!r}) "
                                               f"(functions={list(ext.functions)}): add it to "
                                               "functions=[...]")  # fmt: skip
            return
        if self.init:
            return
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            if method not in self.methods:
                self.refuse(node, "submodule_call", f"`self.{method}(...)` runs a submodule or a stored function "
                                                    f"(PyTorch compute); {DO_INSTEAD}")  # fmt: skip
        elif _is_self_attribute(receiver) and any(method in e.functions for e in self.scope.extensions.values()):
            held = ast.unparse(receiver)
            self.refuse(node, "extension", f"`{held}` is not known to hold the extension: set it in __init__ as "
                                           f"`{held} = <the name load_inline's result is bound to>`")  # fmt: skip
        elif _is_self_attribute(receiver) and method not in SAFE_METHODS:
            self.refuse(node, "submodule_call", f"`.{method}(...)` on `{ast.unparse(receiver)}`: {DO_INSTEAD}")
        elif method in COMPUTE_METHODS or (method.endswith("_") and method not in SAFE_METHODS):
            self.refuse(node, "torch_compute", f"`.{method}(...)` is PyTorch compute (or string formatting, which "
                                               f"can reach attributes): {DO_INSTEAD}")  # fmt: skip

    def _extension_of(self, node: ast.AST) -> InlineExtension | None:
        if isinstance(node, ast.Name):
            return self.scope.extensions.get(node.id)
        if _is_self_attribute(node):
            assert isinstance(node, ast.Attribute)
            return self.scope.self_extensions.get(node.attr)
        return None

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self.refuse(node, "torch_compute", f"`@` is a PyTorch matrix product: {DO_INSTEAD}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def _target(self, target: ast.AST) -> None:
        for node in _targets(target):
            if not isinstance(node, ast.Attribute):
                continue
            if not _is_self_attribute(node):
                self.refuse(node, "attribute_write", f"assigning `{ast.unparse(node)}` is not allowed: only "
                                                     "`self.name = ...` may be set")  # fmt: skip


def _targets(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _targets(element)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)
    else:
        yield target


def _is_self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
