"""The CPU backend's source pre-pass: CUDA launches and dynamic shared memory to plain C++.

Contract: ``docs/cpu-backend.md`` section 1. Every user line keeps its line
number: a rewrite puts back the newlines of the text it replaces (as ``\\``
continuations inside a ``#define``), so the output is ``#line 1 "<file>"``
followed by exactly as many lines as the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from cudaperf_env.source.launches import Launch, find_launches
from cudaperf_env.source.sync import reaching_sync
from cudaperf_env.source.tokens import Token, join_tokens, match_brackets
from cudaperf_env.source.unit import Unit, parse

_Edit = tuple[int, int, str]  # (start offset, end offset, replacement)

# Macros whose value differs between nvcc's device pass and the CPU build: code that tests them shows
# one face to each (``docs/cpu-backend.md``, section 1).
_SPLIT_MACROS = re.compile(r"__CUDA_ARCH__|__CUDA_ARCH_LIST__|__CUDA_ARCH_(?:FEAT|SPECIFIC|FAMILY)\w*|__NVCC__"
                           r"|__CUDACC_RTC__|CUDAPERF_CPU_RUNTIME")
_COMMENT = re.compile(r"//.*|/\*.*?(?:\*/|$)", re.S)

# construct -> (identifier pattern, token that must follow or None, what to do instead).
# The first matching construct wins.
_CONSTRUCTS: Mapping[str, tuple[re.Pattern[str], str | None, str]] = MappingProxyType(
    {
        "asm": (
            re.compile(r"asm|__asm__|__asm"), None,
            "inline PTX `{name}` cannot run on the CPU backend; use CUDA C++ intrinsics instead "
            "(__shfl_down_sync, __ldg, atomicAdd, __fmaf_rn, ...)",
        ),
        "texture": (
            re.compile(
                r"(?:tex|surf)(?:1D|2D|3D|Cubemap)\w*|cuda(?:Texture|Surface)Object_t"
                r"|cudaCreate(?:Texture|Surface)Object|cudaBind(?:Texture|Surface)\w*"
            ), None,
            "textures and surfaces (`{name}`) are not supported on the CPU backend; read through a "
            "plain `const T* __restrict__` pointer instead (__ldg(p + i) for read-only loads)",
        ),
        "texture_reference": (
            re.compile(r"texture|surface"), "<",
            "texture and surface references (`{name}<...>`) are not supported on the CPU backend; "
            "read through a plain `const T* __restrict__` pointer instead",
        ),
        "grid_sync": (
            re.compile(r"this_grid|grid_group|cudaLaunchCooperativeKernel\w*"), None,
            "grid-wide synchronization and cooperative launch (`{name}`) are not supported on the "
            "CPU backend; split the work into separate kernel launches (the end of a launch is a "
            "grid-wide barrier)",
        ),
        "cluster": (
            re.compile(
                r"__cluster_dims__|cluster_group|this_cluster|\w*wgmma\w*|\w*cp_async_bulk\w*"
                r"|CUtensorMap\w*|cuTensorMap\w*|cudaLaunchKernelEx"
            ), None,
            "thread block clusters, TMA and wgmma (`{name}`) are not supported on the CPU backend; "
            "use ordinary blocks with shared-memory tiles and __syncthreads()",
        ),
        "legacy_warp": (
            re.compile(r"__shfl|__shfl_up|__shfl_down|__shfl_xor|__ballot|__any|__all"), None,
            "`{name}` without `_sync` was removed in CUDA 9; use {name}_sync(0xffffffff, ...)",
        ),
        "wmma": (
            re.compile(r"wmma|nvcuda"), None,
            "WMMA (`nvcuda::wmma`) is not supported on the CPU backend yet; compute the tiles with "
            "ordinary loads, shared memory and FMAs",
        ),
        "async_copy": (
            re.compile(r"__pipeline_\w+|memcpy_async|cp_async\w*"), None,
            "asynchronous copies (`{name}`, cp.async) are not supported on the CPU backend yet; "
            "copy into shared memory with ordinary loads and stores, then __syncthreads()",
        ),
        "split_personality": (
            _SPLIT_MACROS, None,
            "`{name}` lets code differ between the GPU build and the CPU backend's single host build "
            "(nvcc compiles device code with __CUDA_ARCH__ defined, the CPU backend without), so what "
            "is checked here would not be what runs on the GPU; remove the conditional and keep one code path",
        ),
        "runtime_names": (
            re.compile(r"cudaperf\w*|_GLOBAL__\w*"), None,
            "`{name}` is a name of the CPU runtime's internals (namespace `cudaperf`), which the checks "
            "of the built code trust; a submission may neither use nor define it: rename it",
        ),
        "allocator_bypass": (
            re.compile(r"__real_\w*|__wrap_\w*|__libc_(?:malloc|calloc|realloc|free|memalign|valloc|pvalloc)"), None,
            "`{name}` reaches the C library's allocator past the CPU runtime's host-memory arena (which "
            "makes a kernel that reads host memory fault, as it does on a GPU); allocate host memory with "
            "malloc or new, device memory with cudaMalloc",
        ),
        "cuda_graph": (
            re.compile(r"cudaGraph\w*|cudaStream(?:Begin|End)Capture\w*"), None,
            "CUDA graphs (`{name}`) are not supported on the CPU backend; launch the kernels "
            "directly with <<<...>>>",
        ),
    }
)
_LAUNCH_HELP = "write it as kernel<<<grid, block[, shared_bytes[, stream]]>>>(args...)"
_MAX_SPECIFIERS = 16  # tokens scanned around `__shared__`: bounds the work on hostile input
_SHARED_WORDS = frozenset({"extern", "__shared__", "volatile", "const", "static"})
_ALIGN = frozenset({"__align__", "alignas", "__attribute__", "__attribute"})


@dataclass(frozen=True)
class Rejection:
    """A construct the CPU backend cannot run.

    Attributes:
        line: Line in the submission.
        construct: Short name, e.g. ``"asm"``, ``"dynamic_parallelism"``.
        message: Names the line, what is wrong and what to write instead.
    """

    line: int
    construct: str
    message: str


@dataclass(frozen=True)
class PrepassResult:
    """The pre-pass output.

    Attributes:
        source: Plain C++ for g++ with the CPU runtime; starts with ``#line 1 "<file>"``.
        kernels: Each ``__global__`` function's name -> whether it needs fibers
            (it, or something it may call, uses a barrier or warp collective).
        rejections: Unsupported constructs, by line; the source must not be built if any.
        device_variables: Names of the file-scope variables rewritten to references initialised at
            load time: ``__device__``/``__constant__`` ones and plain host arrays (the load-time code
            check allows their initialisers).
    """

    source: str
    kernels: Mapping[str, bool]
    rejections: tuple[Rejection, ...]
    device_variables: tuple[str, ...] = ()


def prepass(source: str, filename: str = "submission.cu", entry: str | None = None) -> PrepassResult:
    """Rewrites a CUDA submission for the CPU runtime and lists what it cannot run.

    Args:
        source: The submission's CUDA C++.
        filename: Name used in the ``#line`` directive (and so in compiler messages).
        entry: The task's entry function: its body opens a ``::cudaperf::HostScope`` over its
            arguments, which closes device memory to host code until it returns.

    Returns:
        The rewritten source, the per-kernel fiber decision and the rejections.
    """
    unit = parse(source)
    reach = reaching_sync(unit)
    kernels = {f.name: f.name in reach for f in unit.functions if f.is_kernel}
    edits: list[_Edit] = []
    rejections = list(_construct_rejections(unit))
    rejections.extend(_directive_rejections(unit))
    for toks, params in _token_lists(unit):
        partner = unit.partner if params is None else match_brackets(toks)
        launches, errors = find_launches(toks, partner)
        for launch in launches:
            edits.extend(_launch_edits(source, launch, kernels, params))
            host = None if params is not None else unit.enclosing(launch.index)
            if host is not None and host.on_device:
                rejections.append(_reject(launch.line, "dynamic_parallelism", (
                    f"launching `{launch.kernel}` from device code (dynamic parallelism) is not "
                    "supported on the CPU backend; launch every kernel from the host function")))
        rejections.extend(
            _reject(e.line, "launch", f"cannot parse this launch ({e.reason}); {_LAUNCH_HELP}")
            for e in errors
        )
    if entry is not None:
        edits.extend(_host_scope(unit, entry))
    shared_edits, shared_rejections = _dynamic_shared(unit)
    edits.extend(shared_edits)
    variables = _device_variables(unit)
    edits.extend(edit for edit, _ in variables)
    rejections.extend(shared_rejections)
    unique = sorted(set(rejections), key=lambda r: (r.line, r.construct, r.message))
    header = f'#line 1 "{_c_string(filename)}"\n'
    names = tuple(name for _, name in variables)
    return PrepassResult(header + _apply(source, edits), MappingProxyType(kernels), tuple(unique), names)


def _token_lists(unit: Unit) -> Iterator[tuple[Sequence[Token], frozenset[str] | None]]:
    """The code tokens, then each ``#define``'s body: ``(tokens, macro parameters or None)``."""
    yield unit.code, None
    for macro in unit.defines:
        yield macro.body, frozenset(macro.params or ())


def _reject(line: int, construct: str, what: str) -> Rejection:
    return Rejection(line, construct, f"line {line}: {what}")


def _construct_rejections(unit: Unit) -> Iterator[Rejection]:
    candidates: dict[str, list[str]] = {}  # identifier -> constructs it may be
    for toks, _ in _token_lists(unit):
        for k, tok in enumerate(toks):
            if tok.kind != "ident":
                continue
            if tok.text not in candidates:
                matches = [c for c, (p, _, _) in _CONSTRUCTS.items() if p.fullmatch(tok.text)]
                candidates[tok.text] = matches
            for construct in candidates[tok.text]:
                _, follow, message = _CONSTRUCTS[construct]
                if follow is None or (k + 1 < len(toks) and toks[k + 1].text == follow):
                    yield _reject(tok.line, construct, message.format(name=tok.text))
                    break


def _directive_rejections(unit: Unit) -> Iterator[Rejection]:
    """Conditionals (``#if``, ``#ifdef``, ...) on a macro whose value differs between nvcc and the CPU build."""
    for tok in unit.directives:
        found = _SPLIT_MACROS.search(_COMMENT.sub(" ", tok.text))
        if found is not None:
            _, _, message = _CONSTRUCTS["split_personality"]
            yield _reject(tok.line, "split_personality", message.format(name=found.group(0)))


_TYPE_WORDS = frozenset({
    "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "const", "volatile",
    "__restrict__", "__restrict", "restrict", "size_t", "struct", "int8_t", "int16_t", "int32_t", "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", "half", "__half"})


def _host_scope(unit: Unit, entry: str) -> list[_Edit]:
    """``::cudaperf::HostScope`` at the top of the entry's body, over its named parameters (none if unnamed)."""
    code = unit.code
    for f in unit.functions:
        if f.name != entry or f.on_device:
            continue
        names: list[str] = []
        current: list[Token] = []
        depth = 0
        for tok in [*code[f.params[0] + 1 : f.params[1]], None]:
            if tok is None or (tok.text == "," and depth == 0):
                idents = [t.text for t in current if t.kind == "ident"]
                if idents and (idents[-1] in _TYPE_WORDS or idents[-1] == "void" and len(idents) == 1):
                    return []  # an unnamed parameter: nothing to name in the scope
                if idents:
                    names.append(idents[-1])
                current = []
                continue
            if tok.text in ("(", "[", "<"):
                depth += 1
            elif tok.text in (")", "]", ">"):
                depth -= 1
            elif depth == 0:
                current.append(tok)
        brace = code[f.body[0]]
        return [(brace.end, brace.end, f" ::cudaperf::HostScope cudaperf_host_scope({', '.join(names)});")]
    return []


def _launch_edits(
    source: str, launch: Launch, kernels: Mapping[str, bool], params: frozenset[str] | None
) -> list[_Edit]:
    """Rewrites ``K<<<G, B>>>(args)`` into a runtime call.

    The result is ``::cudaperf::launch<F>("K", LINE, G, B, 0, 0,
    [&](auto... cudaperf_a) { K(cudaperf_a...); }, args)``.
    The configuration and the arguments stay in place, verbatim; the newlines of
    the replaced text are put back right after each replacement. Inside a
    macro whose parameter names the kernel, the name is the stringized argument.
    """
    newline = "\\\n" if params is not None else "\n"
    fibers = "true" if kernels.get(launch.name, True) else "false"
    name = f'"{_c_string(launch.kernel)}"'
    if params and launch.kernel in params:
        name = f"#{launch.kernel}"
    head = f"::cudaperf::launch<{fibers}>({name}, {launch.line}, "
    head += newline * source.count("\n", launch.start, launch.chevrons)
    tail = ", 0" * (4 - launch.parts)
    tail += f", [&](auto... cudaperf_a) {{ {launch.kernel}(cudaperf_a...); }}"
    tail += ", " if launch.has_args else ""
    tail += newline * source.count("\n", launch.closer, launch.args)
    return [(launch.start, launch.chevrons, head), (launch.closer, launch.args, tail)]


def _dynamic_shared(unit: Unit) -> tuple[list[_Edit], list[Rejection]]:
    """Rewrites ``extern __shared__ T name[];`` in functions; rejects it at file scope."""
    edits: list[_Edit] = []
    rejections: list[Rejection] = []
    code = unit.code
    for k, tok in enumerate(code):
        if tok.text != "__shared__" or tok.kind != "ident":
            continue
        first = _specifiers_start(code, unit.partner, k)
        if unit.enclosing(k) is None:
            if any(t.text == "extern" for t in code[first:k + 3]):
                rejections.append(_reject(tok.line, "file_scope_shared", (
                    "`extern __shared__` at file scope is not supported on the CPU backend; "
                    "declare it inside the kernel that uses it, e.g. "
                    "`extern __shared__ float smem[];`")))
            continue
        edit = _shared_edit(unit.source, code, unit.partner, first)
        if edit is not None:
            edits.append(edit)
    return edits, rejections


_VARIABLE_SPACES = frozenset({"__device__", "__constant__"})
_VARIABLE_WORDS = frozenset({"__device__", "__constant__", "static", "volatile"})
# Declarations left as they are: constants (usable in constant expressions), other storage, types, templates.
_VARIABLE_SKIP = frozenset({"const", "constexpr", "extern", "__shared__", "__managed__", "template", "typedef",
                            "using", "operator", "struct", "class", "union", "enum", "&", "&&", "auto"})  # fmt: skip


# Host storage the arena cannot stand for: per thread, or whose address the program may need constant.
_HOST_ARRAY_SKIP = frozenset({"thread_local", "constinit", "register", "__host__", "inline"})
# Element types of const host arrays that may move to the arena too: no element of theirs is usable in a
# constant expression (a const integral array's are, as template arguments or array bounds).
_FLOAT_TYPES = frozenset({"float", "double", "half", "__half", "__nv_bfloat16", "float2", "float3", "float4",
                          "double2"})  # fmt: skip


def _const_float_array(texts: Sequence[str]) -> bool:
    """Whether a declaration's tokens are ``[static] const F name[...]`` with F a floating type (pure)."""
    head = texts[: _index(list(texts), "[")]
    words = set(head[:-1]) - {"const", "static"}
    return "const" in head and bool(words) and words <= _FLOAT_TYPES


def _device_variables(unit: Unit) -> list[tuple[_Edit, str]]:
    """``__device__ T name[dims] = init;`` at file or namespace scope -> a reference to device storage.

    ``T (&name)[dims] = ::cudaperf::device_variable<T[dims]>(init);``: pages of their own that
    device memory's separation covers, so host code touching the variable directly faults, as
    it does not work on a GPU. A plain host array, ``T name[dims] = init;``, becomes
    ``T (&name)[dims] = ::cudaperf::host_variable<T[dims]>(init);``: storage in the host arena,
    closed to kernels, so a kernel handed its address faults as on a GPU. Declarations this
    cannot rewrite faithfully are left as they are (constants, several declarators, attributes,
    unsized arrays, thread_local). Returns each edit with the name.
    """
    code, edits = unit.code, []
    scopes: list[bool] = []  # per open brace: a namespace or extern "C" block (file scope continues)
    start = 0  # first token of the current declaration
    k = -1
    while k + 1 < len(code):
        k += 1
        tok = code[k]
        if tok.text == "{" and any(t.text == "=" for t in code[start:k]) and unit.partner[k] > k:
            k = unit.partner[k]  # an initializer's braces
        elif tok.text == "{":
            head = [t.text for t in code[start:k]]
            scopes.append(bool(head) and (head[0] == "namespace" or head == ["extern", '"C"']))  # not a function
            start = k + 1
        elif tok.text == "}":
            if scopes:
                scopes.pop()
            start = k + 1
        elif tok.text == ";" and all(scopes):
            edit = _device_variable_edit(unit.source, code[start : k + 1])
            if edit is not None:
                edits.append(edit)
            start = k + 1
        elif tok.text == ";":
            start = k + 1
    return edits


def _device_variable_edit(source: str, decl: Sequence[Token]) -> tuple[_Edit, str] | None:
    """The rewrite of one file-scope declaration: a ``__device__``/``__constant__`` variable to
    device storage, a plain host array (not const, or const of a floating type) to storage in the
    host arena (``::cudaperf::host_variable``, host_arena.h), so that a kernel given its address faults."""
    texts = [t.text for t in decl[:-1]]
    on_device = bool(_VARIABLE_SPACES & set(texts))
    skip = _VARIABLE_SKIP if on_device or not _const_float_array(texts) else _VARIABLE_SKIP - {"const"}
    if skip & set(texts) or "(" in texts[: _index(texts, "=")]:
        return None
    if not on_device and (_HOST_ARRAY_SKIP & set(texts) or "[" not in texts[: _index(texts, "=")]):
        return None
    eq = _index(texts, "=")
    left, init = decl[:eq], decl[eq + 1 : -1]
    depth = 0
    for t in left:
        depth += (t.text in ("[", "<", "(")) - (t.text in ("]", ">", ")"))
        if t.text == "," and depth == 0:
            return None  # several declarators
    words = [t for t in left if t.text in _VARIABLE_WORDS]
    rest = [t for t in left if t.text not in _VARIABLE_WORDS]
    bracket = _index([t.text for t in rest], "[")
    if bracket < 2 or rest[bracket - 1].kind != "ident":
        return None
    name, kind, dims = rest[bracket - 1], join_tokens(rest[: bracket - 1]), join_tokens(rest[bracket:])
    if "[]" in dims.replace(" ", ""):
        return None
    quals = " ".join(t.text for t in words if t.text != "volatile")
    volatile = "volatile " if any(t.text == "volatile" for t in words) else ""
    value = join_tokens(init) if init else ""
    target = f"{volatile}{kind}{dims}"
    ref = f"(&{name.text}){dims}" if dims else f"& {name.text}"
    storage = "device_variable" if on_device else "host_variable"
    text = f"{quals} {volatile}{kind} {ref} = ::cudaperf::{storage}<{target}>({value});"
    first, last = decl[0].start, decl[-1].end
    return (first, last, text + "\n" * source.count("\n", first, last)), name.text


def _index(items: Sequence[str], item: str) -> int:
    """The position of ``item`` in ``items``, or ``len(items)``."""
    return items.index(item) if item in items else len(items)


def _specifiers_start(code: Sequence[Token], partner: Sequence[int], k: int) -> int:
    stop = max(0, k - _MAX_SPECIFIERS)
    while k > stop:
        prev = code[k - 1]
        if prev.text in _SHARED_WORDS:
            k -= 1
        elif prev.text == ")" and partner[k - 1] > 0 and code[partner[k - 1] - 1].text in _ALIGN:
            k = partner[k - 1] - 1
        else:
            break
    return k


def _shared_edit(
    source: str, code: Sequence[Token], partner: Sequence[int], first: int
) -> _Edit | None:
    """The rewrite of the ``extern __shared__`` declaration starting at ``code[first]``, if any."""
    quals: list[str] = []
    words: set[str] = set()
    k = first
    while k < min(len(code), first + _MAX_SPECIFIERS):
        text = code[k].text
        if text in _SHARED_WORDS:
            words.add(text)
            if text in ("volatile", "const"):
                quals.append(text)
        elif text in _ALIGN and k + 1 < len(code) and partner[k + 1] > k:
            k = partner[k + 1]
        else:
            break
        k += 1
    if not {"extern", "__shared__"} <= words:
        return None
    bracket = next((j for j in range(k, min(len(code), k + 64)) if code[j].text in ("[", ";")), -1)
    if bracket <= k + 1 or code[bracket].text != "[" or partner[bracket] != bracket + 1:
        return None
    name = code[bracket - 1]
    end = bracket + 2
    while end < len(code) and code[end].text == "[" and partner[end] > end:
        end = partner[end] + 1
    if name.kind != "ident" or end >= len(code) or code[end].text != ";":
        return None
    kind = " ".join([*quals, join_tokens(code[k : bracket - 1])])
    dims = join_tokens(code[bracket + 2 : end])
    call = "(::cudaperf::dynamic_shared());"
    if dims:
        text = f"{kind} (*{name.text}){dims} = reinterpret_cast<{kind} (*){dims}>{call}"
    else:
        text = f"{kind}* {name.text} = reinterpret_cast<{kind}*>{call}"
    start, stop = code[first].start, code[end].end
    return start, stop, text + "\n" * source.count("\n", start, stop)


def _apply(source: str, edits: Sequence[_Edit]) -> str:
    out: list[str] = []
    at = 0
    for start, end, text in sorted(edits):
        if start < at:
            continue  # overlapping edits only come from malformed code: keep the first
        out.append(source[at:start])
        out.append(text)
        at = end
    out.append(source[at:])
    return "".join(out)


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
