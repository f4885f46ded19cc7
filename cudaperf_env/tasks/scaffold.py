"""Scaffold a task file from a C function: arguments and roles guessed, configurations sketched.

``cudaperf tasks new NAME --from reference.c`` writes what this module returns. The guesses
are marked ``# check:`` in the file: a ``const T*`` is an input, a ``T*`` that the function
also reads is ``inout`` and one it only writes is ``out``; integer scalars become the
configuration's symbols (``n`` -> ``N``) and a buffer's shape follows from how the reference
indexes it (loop bounds and row strides; else the first symbol).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudaperf_env.errors import ScaffoldError
from cudaperf_env.tasks.dtypes import DTYPES

# C spellings accepted in the reference's signature; each must be the very type the generated
# declaration uses, or C sees conflicting types (``int64_t`` is ``long`` on Linux, not ``long long``).
_C_TYPES = {d.c_type: d.name for d in DTYPES.values()} | {
    "int32_t": "int32", "uint32_t": "uint32", "int16_t": "int16", "uint16_t": "uint16", "int8_t": "int8",
    "uint8_t": "uint8", "unsigned": "uint32", "char": "int8", "signed": "int32", "signed int": "int32",
}  # fmt: skip
_NOT_SAME = {"long": "long long", "int64_t": "long long", "uint64_t": "unsigned long long", "long int": "long long",
             "size_t": "unsigned long long", "unsigned long": "unsigned long long"}  # fmt: skip
_FUNCTION = re.compile(r"\bvoid\s+([A-Za-z_]\w*)\s*\(([^()]*)\)\s*\{")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


@dataclass(frozen=True)
class Param:
    """One parameter of the C function and the guess made for it."""

    name: str
    dtype: str
    role: str
    note: str = ""


def parse_function(source: str, entry: str | None = None) -> tuple[str, tuple[Param, ...]]:
    """The entry's name and parameters (with guessed roles) from a C source.

    Raises:
        ScaffoldError: No ``void`` function (or not the one named ``entry``), or a parameter
            type a task cannot express; the message says what to change.
    """
    code = _COMMENTS.sub(" ", source)
    found = {m.group(1): m.group(2) for m in _FUNCTION.finditer(code)}
    if not found:
        raise ScaffoldError("no C function 'void NAME(...) { ... }' found: the entry returns its results "
                              "through pointer arguments")  # fmt: skip
    if entry is None:
        entry = list(found)[-1]  # helpers come first in C
    if entry not in found:
        raise ScaffoldError(f"no function {entry!r}; found: {', '.join(found)} (pass --entry NAME)")
    params = tuple(_param(text.strip(), code) for text in found[entry].split(",") if text.strip() not in ("", "void"))
    return entry, params


def _param(text: str, code: str) -> Param:
    pointer = text.count("*")
    words = text.replace("*", " ").replace("restrict", " ").replace("__restrict", " ").split()
    if pointer > 1 or len(words) < 2 or "[" in text:
        raise ScaffoldError(f"parameter {text!r}: expected 'T name' or '[const] T* name' (one level of pointer)")
    name, const = words[-1], "const" in words
    c_type = " ".join(w for w in words[:-1] if w != "const")
    if c_type in _NOT_SAME:
        raise ScaffoldError(f"parameter {text!r}: write {_NOT_SAME[c_type]!r} instead of {c_type!r} "
                              "(the task's declaration must be the very same type)")  # fmt: skip
    if c_type not in _C_TYPES:
        raise ScaffoldError(f"parameter {text!r}: type {c_type!r} is not one of {', '.join(sorted(_C_TYPES))}")
    dtype = _C_TYPES[c_type]
    if not pointer:
        return Param(name, dtype, "scalar")
    if const:
        return Param(name, dtype, "in")
    if _reads(name, code):
        return Param(name, dtype, "inout", "read and written by the reference")
    return Param(name, dtype, "out", "only written by the reference: out (inout if it reads its input)")


def _reads(name: str, code: str) -> bool:
    """Whether ``name[...]`` appears anywhere but as the target of a plain assignment."""
    uses = re.finditer(rf"\b{re.escape(name)}\s*\[", code)
    for use in uses:
        depth, i = 1, use.end()
        while i < len(code) and depth:
            depth += {"[": 1, "]": -1}.get(code[i], 0)
            i += 1
        if not re.match(r"\s*=(?!=)", code[i:]):
            return True
    return False


def _index_expressions(name: str, code: str) -> list[str]:
    found = []
    for use in re.finditer(rf"\b{re.escape(name)}\s*\[", code):
        depth, i = 1, use.end()
        while i < len(code) and depth:
            depth += {"[": 1, "]": -1}.get(code[i], 0)
            i += 1
        found.append(code[use.end() : i - 1])
    return found


def guess_shape(name: str, code: str, sizes: dict[str, str]) -> list[str]:
    """A buffer's shape from how the reference indexes it: ``x[j]`` with ``j < n`` is ``[N]``;
    ``a[i * n + j]`` with ``i < m`` is ``[M, N]``. ``sizes`` maps size parameters to symbols."""
    bounds = {m.group(1): m.group(2) for m in
              re.finditer(r"for\s*\(\s*(?:[A-Za-z_][\w ]*\s)?(\w+)\s*=[^;]*;\s*\1\s*<=?\s*(\w+)", code)}  # fmt: skip
    for index in _index_expressions(name, code):
        words = re.findall(r"[A-Za-z_]\w*", index)
        strides = [w for w in words if w in sizes and re.search(rf"\*\s*{w}\b|\b{w}\s*\*", index)]
        loops = [bounds[w] for w in words if bounds.get(w) in sizes]
        if strides:
            outer = next((b for b in loops if b != strides[0]), None)
            if outer:
                return [sizes[outer], sizes[strides[0]]]
        if len(words) == 1 and loops:
            return [sizes[loops[0]]]
    return [next(iter(sizes.values()))]


def scaffold(name: str, source: str, entry: str | None = None) -> str:
    """A task file (YAML text) for the C function in ``source``, to be reviewed where it says ``# check:``."""
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ScaffoldError(f"task name {name!r}: use lowercase letters, digits and '_' (e.g. vector_add)")
    entry, params = parse_function(source, entry)
    symbols = [p.name.upper() for p in params if p.role == "scalar" and not DTYPES[p.dtype].is_float]
    if not symbols:
        raise ScaffoldError(f"{entry}: no integer size parameter; add one (e.g. 'int n') so sizes can vary")
    code = _COMMENTS.sub(" ", source)
    sizes = {p.name: p.name.upper() for p in params if p.name.upper() in symbols}
    lines = [
        "schema: 1",
        f"id: c2cuda/{name}",
        "family: custom",
        f"description: \"{entry}: check: say what the function computes, for the agent.\"",
        f"entry: {entry}",
        "args:",
    ]
    for p in params:
        if p.role == "scalar":
            value = p.name.upper() if p.name.upper() in symbols else ("1.5" if DTYPES[p.dtype].is_float else "1")
            note = "" if p.name.upper() in symbols else "  # check: a fixed value"
            lines.append(f"  - {{name: {p.name}, role: scalar, dtype: {p.dtype}, value: {value}}}{note}")
        else:
            note = f"  # check: shape; {p.note}" if p.note else "  # check: shape"
            shape = ", ".join(guess_shape(p.name, code, sizes))
            lines.append(f"  - {{name: {p.name}, role: {p.role}, dtype: {p.dtype}, shape: [{shape}]}}{note}")
    small = [64, 255, 1000] if len(symbols) > 1 else [1000, 1823, 100000]

    def config(value: int) -> str:
        return "{" + ", ".join(f"{s}: {value}" for s in symbols) + "}"

    lines += ["configs:  # shown in the prompt; at least one odd size", *(f"  - {config(v)}" for v in small),
              f"hidden_configs: [{config(4099 if len(symbols) == 1 else 127)}]  # run, never shown",
              f"perf_configs: [{config(16777216 if len(symbols) == 1 else 4096)}]  # timed on a GPU only",
              "# tolerance: {rtol: 1.0e-4, atol: 1.0e-4}  # check: per-dtype defaults otherwise; loosen for long sums",
              "reference:", "  language: c", "  source: |"]  # fmt: skip
    lines += [f"    {line}" if line.strip() else "" for line in source.strip("\n").splitlines()]
    return "\n".join(lines) + "\n"
