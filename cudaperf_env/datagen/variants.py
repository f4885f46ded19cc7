"""Knob variants of an implementation's CUDA source: block sizes, tiles, items per thread, grid caps, unrolling.

Pure functions: :func:`variants` takes an implementation's name and source and
returns every variant it can make, each with a stable id
``<implementation>~<knob>=<value>``, the knob's kind and tags. Knobs are found by
careful regexes on the well-defined shapes the dataset's generators write
(comments and strings are masked first, so nothing inside them matches):

- ``constant``: a named integer constant (``#define BLOCK 256``, ``constexpr int TILE = 16;``,
  ``const int THREADS = 128``) used in a launch configuration (the ``<<<...>>>``
  arguments, the ``dim3`` components or the grid variable's definition);
  a constant in a launch's block argument gets block sizes, one used in both
  components of a 2-D block gets tile sizes (``tile^2 <= 1024``), any other
  (items per thread, rows per block) gets factors around its value;
- ``block``: a literal block size in ``<<<grid, 256>>>``, with the grid's
  ``256``/``255`` (or, for warp-per-item grids, ``8``/``7`` of a 256-thread block)
  rewritten consistently, in the launch or in the grid variable's definition;
- ``block2d``: a ``dim3 block(32, 8)`` of literals with its grid's literals per component;
- ``grid_cap``: kernels with a grid-stride loop (``gridDim.x`` in the body) get at most
  1 (``poor-serialized``), 8 or 32 (``low-occupancy``, far below an H200's 132 SMs) or 264 blocks;
- ``unroll``: every ``#pragma unroll [N]`` set to 1, 2, 4 or 8;
- ``index``: ``blockIdx.x * blockDim.x + threadIdx.x`` swapped to
  ``threadIdx.x * gridDim.x + blockIdx.x`` (the same index set, strided across a
  warp: tag ``uncoalesced``), only in kernels that use the thread and block
  indices nowhere else and have no barriers, shared memory or warp collectives.

Constraints detectable in the source are respected: block sizes <= 1024 threads;
a constant that sizes a ``__shared__`` array or is halved (tree reductions) only
takes powers of two; one divided or taken modulo by 32 only multiples of 32; a
literal that also appears in device code (so the kernel may assume it) is left
alone. What a regex cannot see (shared-memory limits, a kernel that assumes a
size indirectly) the CPU verification catches (``datagen/variant_verify.py``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
"""Block sizes tried for a 1-D block knob (plus multiples of 32 where powers of two are not required)."""
ODD_BLOCK_SIZES = (96, 192, 384, 768)
TILE_SIZES = (4, 8, 16, 32)
"""Square 2-D block edges (``tile^2 <= 1024``)."""
SHAPES_2D = ((32, 8), (16, 16), (32, 4), (64, 4), (32, 16), (128, 2), (8, 8), (32, 32), (16, 8), (64, 8), (256, 1))
GRID_CAPS = {1: "poor-serialized", 8: "low-occupancy", 32: "low-occupancy", 264: "knob"}
"""Grid caps for grid-stride kernels and the tag of each (an H200 has 132 SMs)."""
UNROLLS = (1, 2, 4, 8)
MAX_THREADS = 1024
TAGS = ("knob", "low-occupancy", "uncoalesced", "poor-serialized")
KINDS = ("constant", "block", "block2d", "grid_cap", "unroll", "index")


@dataclass(frozen=True)
class Variant:
    """One knob variant of an implementation.

    Attributes:
        id: ``<base>~<knob>=<value>``: the implementation name of the variant in its task.
        base: The implementation it was made from.
        kind: One of :data:`KINDS`.
        knob: What was turned (a constant's name, ``block``, ``grid_cap``, ...).
        value: The new value, as text (``128``, ``16x16``, ``strided``).
        tags: Subset of :data:`TAGS`.
        source: The rewritten CUDA source.
    """

    id: str
    base: str
    kind: str
    knob: str
    value: str
    tags: tuple[str, ...]
    source: str


Edit = tuple[int, int, str]
"""Replace ``source[start:end]`` with the text."""

_INT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_CONST_DECL = re.compile(r"\b(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+|signed\s+)?"
                         r"(?:int|long|size_t|short)\s+")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?(\d+)\)?[ \t]*$", re.M)
_DECLARATOR = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*\(?(\d+)\)?\s*$")
_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;<>]*(?:<[^;<>]*>[^;<>]*)*>)?\s*<<<")
_PRAGMA = re.compile(r"#[ \t]*pragma[ \t]+unroll\b([ \t]*\(?[ \t]*\d+[ \t]*\)?)?")
_INDEX = re.compile(r"(\((?:long long|long|size_t|int64_t|unsigned)\)\s*)?"
                    r"(?:blockIdx\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*"
                    r"\s*blockIdx\.x)\s*\+\s*threadIdx\.x|threadIdx\.x\s*\+\s*(?:blockIdx\.x\s*\*\s*blockDim\.x|"
                    r"blockDim\.x\s*\*\s*blockIdx\.x)")  # fmt: skip
_COLLECTIVE = re.compile(r"__syncthreads|__shared__|_sync\s*\(|__syncwarp|cooperative_groups|"
                         r"threadIdx\.[yz]|blockIdx\.[yz]")


def mask(source: str) -> str:
    """``source`` with comments and string/char literals blanked to spaces (same length, newlines kept)."""
    out = list(source)
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            start, i = i, n if source.find("\n", i) < 0 else source.find("\n", i)
        elif source.startswith("/*", i):
            start, i = i, n if source.find("*/", i + 2) < 0 else source.find("*/", i + 2) + 2
        elif c in "\"'":
            start, i = i + 1, i + 1
            while i < n and source[i] not in (c, "\n"):
                i += 2 if source[i] == "\\" else 1
            i = min(i, n)
        else:
            i += 1
            continue
        out[start:i] = [ch if ch == "\n" else " " for ch in source[start:i]]
        if c in "\"'" and i < n:
            i += 1  # past the closing quote
    return "".join(out)


def _close(text: str, start: int, pair: str = "()") -> int:
    """Index just past the bracket matching the opening one at ``start`` (or -1)."""
    depth = 0
    for k in range(start, len(text)):
        if text[k] == pair[0]:
            depth += 1
        elif text[k] == pair[1]:
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def split_args(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the top-level comma-separated items of ``text[start:end]`` (whitespace trimmed)."""
    spans, depth, begin = [], 0, start
    for k in range(start, end + 1):
        c = text[k] if k < end else ","
        if c in "([{<" and not (c == "<" and k + 1 < end and text[k + 1] == "<"):
            depth += c != "<"
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            a, b = begin, k
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            spans.append((a, b))
            begin = k + 1
    return spans


@dataclass(frozen=True)
class Function:
    """A top-level function: header and body spans, and whether it runs on the device."""

    name: str
    start: int
    body: tuple[int, int]
    device: bool


def functions(masked: str) -> list[Function]:
    """Top-level function definitions of a masked source (structs and namespaces are not functions)."""
    out: list[Function] = []
    depth, k, last = 0, 0, 0
    while k < len(masked):
        c = masked[k]
        if c == "#" and depth == 0:
            k = masked.find("\n", k)
            k = len(masked) if k < 0 else k
            last = k
            continue
        if c in ";}" and depth == 0:
            last = k + 1
        if c == "{":
            if depth == 0:
                end = _close(masked, k, "{}")
                header = masked[last:k]
                call = re.search(r"([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:->[^{;]*)?$", header)
                if call and end > 0:
                    device = bool(re.search(r"\b__(?:global|device)__\b", header))
                    out.append(Function(call.group(1), last, (k, end), device))
                k = end if end > 0 else len(masked)
                last = k
                continue
            depth += 1
        elif c == "}":
            depth -= 1
        k += 1
    return out


@dataclass(frozen=True)
class Launch:
    """One ``kernel<<<grid, block, ...>>>`` launch: the kernel and its configuration arguments' spans."""

    kernel: str
    args: tuple[tuple[int, int], ...]


def launches(masked: str) -> list[Launch]:
    """Every triple-chevron launch of a masked source."""
    out = []
    for m in _LAUNCH.finditer(masked):
        end = masked.find(">>>", m.end())
        if end > 0:
            out.append(Launch(m.group(1), tuple(split_args(masked, m.end(), end))))
    return out


@dataclass(frozen=True)
class Parsed:
    """What the knob finders need of one source."""

    source: str
    masked: str
    functions: tuple[Function, ...]
    launches: tuple[Launch, ...]

    def host_spans(self) -> list[tuple[int, int]]:
        return [f.body for f in self.functions if not f.device]

    def in_host(self, pos: int) -> bool:
        return any(a <= pos < b for a, b in self.host_spans())

    def device_text(self) -> str:
        """The masked source with host function bodies and named constants' values blanked.

        What is left (kernels, device functions, file scope) is where a literal means the
        device code assumes it; a constant's value is used through its name instead.
        """
        text = list(self.masked)
        for a, b in [*self.host_spans(), *(span for _, _, span in _constants(self))]:
            text[a:b] = " " * (b - a)
        return "".join(text)

    def kernel_body(self, name: str) -> str | None:
        for f in self.functions:
            if f.name == name and f.device:
                return self.masked[f.body[0] : f.body[1]]
        return None

    def text(self, span: tuple[int, int]) -> str:
        return self.masked[span[0] : span[1]]

    def definition(self, name: str, before: int) -> tuple[int, int] | None:
        """Span of the initializer of the last ``int|long|... NAME = <expr>;`` in host code before ``before``."""
        pattern = re.compile(rf"\b(?:int|long|unsigned|size_t|auto|const int)\s+(?:[^;=]*?,\s*)?{name}\s*=\s*")
        found = None
        for m in pattern.finditer(self.masked, 0, before):
            if not self.in_host(m.start()):
                continue
            spans = split_args(self.masked, m.end(), self.masked.find(";", m.end()))
            if spans:
                found = spans[0]
        return found


def parse(source: str) -> Parsed:
    """Mask ``source`` and find its functions and launches."""
    masked = mask(source)
    return Parsed(source, masked, tuple(functions(masked)), tuple(launches(masked)))


def apply(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with non-overlapping ``edits`` applied (pure)."""
    out, at = [], 0
    for start, end, text in sorted(set(edits)):
        if start < at:
            raise ValueError(f"overlapping edits at {start}")
        out += [source[at:start], text]
        at = end
    return "".join([*out, source[at:]])


def _literal_edits(p: Parsed, span: tuple[int, int], mapping: dict[int, int]) -> list[Edit]:
    """Edits replacing the integer literals of ``span`` that are keys of ``mapping``."""
    return [(span[0] + m.start(), span[0] + m.end(), str(mapping[int(m.group(1))]))
            for m in _INT.finditer(p.text(span)) if int(m.group(1)) in mapping]  # fmt: skip


def _literals(text: str) -> set[int]:
    return {int(m.group(1)) for m in _INT.finditer(text)}


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")


def _dim3_args(p: Parsed, name: str, before: int) -> list[tuple[int, int]] | None:
    """Spans of the components of the last ``dim3 NAME(a, b[, c])`` in host code before ``before``."""
    found = None
    for m in re.finditer(r"\bdim3\s+", p.masked[:before]):
        if not p.in_host(m.start()):
            continue
        statement_end = p.masked.find(";", m.end())
        for a, b in split_args(p.masked, m.end(), statement_end):
            d = re.match(rf"{name}\s*\(", p.masked[a:b])
            if d:
                open_at = a + d.end() - 1
                found = split_args(p.masked, open_at + 1, _close(p.masked, open_at) - 1)
    return found


def _block_components(p: Parsed, launch: Launch) -> list[tuple[int, int]]:
    """Spans of the block argument's components: the argument itself, or its dim3's components."""
    if len(launch.args) < 2:
        return []
    span = launch.args[1]
    text = p.text(span)
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        dims = _dim3_args(p, text, span[0])
        if dims is not None:
            return dims
    inline = re.fullmatch(r"dim3\s*\((.*)\)", text, re.S)
    if inline:
        return split_args(p.masked, span[0] + inline.start(1), span[0] + inline.end(1))
    return [span]


def _grid_spans(p: Parsed, launch: Launch) -> list[tuple[int, int]]:
    """Spans where the grid is computed: the grid argument, or its variable's definition or dim3 components."""
    span = launch.args[0]
    text = p.text(span)
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        dims = _dim3_args(p, text, span[0])
        if dims is not None:
            return dims
        definition = p.definition(text, span[0])
        if definition is not None:
            return [definition]
    inline = re.fullmatch(r"dim3\s*\((.*)\)", text, re.S)
    if inline:
        return split_args(p.masked, span[0] + inline.start(1), span[0] + inline.end(1))
    return [span]


def _variant(base: str, source: str, kind: str, knob: str, value: str, tags: Sequence[str],
             edits: Sequence[Edit]) -> Variant | None:  # fmt: skip
    new = apply(source, edits)
    return None if new == source else Variant(f"{base}~{knob}={value}", base, kind, knob, value, tuple(tags), new)


def constant_variants(base: str, p: Parsed) -> list[Variant]:
    """Variants of the named integer constants the host code uses."""
    config = [p.text(s) for launch in p.launches for s in (*launch.args, *_block_components(p, launch),
                                                             *_grid_spans(p, launch))]  # fmt: skip
    out = []
    for name, value, span in _constants(p):
        if not any(_word(name).search(text) for text in config):
            continue  # not a launch knob: a problem size (channels, filter width) the host uses otherwise
        for new in _constant_values(p, name, value):
            v = _variant(base, p.source, "constant", name, str(new), ("knob",), [(*span, str(new))])
            if v is not None:
                out.append(v)
    return out


def _constants(p: Parsed) -> list[tuple[str, int, tuple[int, int]]]:
    """``(name, value, span of the value literal)`` of every integer constant defined by a literal."""
    found = [(m.group(1), int(m.group(2)), m.span(2)) for m in _DEFINE.finditer(p.masked)]
    for m in _CONST_DECL.finditer(p.masked):
        end = p.masked.find(";", m.end())
        for a, b in split_args(p.masked, m.end(), end):
            d = _DECLARATOR.match(p.masked[a:b])
            if d:
                found.append((d.group(1), int(d.group(2)), (a + d.start(2), a + d.end(2))))
    names = [f[0] for f in found]
    return [f for f in found if names.count(f[0]) == 1]  # a name defined twice (per scope) is ambiguous


def _constant_values(p: Parsed, name: str, value: int) -> list[int]:
    """Candidate values of constant ``name`` (now ``value``) under the constraints its uses show."""
    word = re.escape(name)
    pow2 = bool(re.search(rf"__shared__[^;]*\[[^\]]*(?<!\w){word}(?!\w)", p.masked)
                or re.search(rf"(?<!\w){word}\s*(?:/\s*2\b|>>\s*1\b)", p.masked))  # fmt: skip
    warps = bool(re.search(rf"(?<!\w){word}\s*[/%]\s*(?:32|warpSize)\b", p.masked))
    edges = 0
    for launch in p.launches:
        components = _block_components(p, launch)
        uses = sum(bool(_word(name).search(p.text(c))) for c in components)
        edges = max(edges, uses, 1 if uses else 0)
    if edges >= 2:
        values = [v for v in TILE_SIZES if v ** edges <= MAX_THREADS]
    elif edges == 1:
        values = sorted({*BLOCK_SIZES, *ODD_BLOCK_SIZES})
    else:
        values = sorted({value // 4, value // 2, value * 2, value * 4, 1, 2, 3, 4, 6, 8}
                        if value <= 8 else {value // 4, value // 2, value * 2, value * 4})  # fmt: skip
        values = [v for v in values if 1 <= v <= max(64, value * 4)]
    return [v for v in values if v != value and (not pow2 or v & (v - 1) == 0) and (not warps or v % 32 == 0)]


def block_variants(base: str, p: Parsed) -> list[Variant]:
    """Variants of literal 1-D block sizes, their grids rewritten to match."""
    device = _literals(p.device_text())
    by_size: dict[int, list[Launch]] = {}
    for launch in p.launches:
        if len(launch.args) >= 2 and re.fullmatch(r"\d+", p.text(launch.args[1])) and p.in_host(launch.args[1][0]):
            by_size.setdefault(int(p.text(launch.args[1])), []).append(launch)
    out = []
    for size, group in sorted(by_size.items()):
        if size in device or size > MAX_THREADS:
            continue
        knob = "block" if len(by_size) == 1 else f"block@{size}"
        for new in sorted({*BLOCK_SIZES, *ODD_BLOCK_SIZES} - {size}):
            edits: list[Edit] = []
            for launch in group:
                edits.append((*launch.args[1], str(new)))
                for span in _grid_spans(p, launch):
                    edits += _literal_edits(p, span, _grid_mapping(_literals(p.text(span)), size, new))
            v = _variant(base, p.source, "block", knob, str(new), ("knob",), edits)
            if v is not None:
                out.append(v)
    return out


def _grid_mapping(literals: set[int], size: int, new: int) -> dict[int, int]:
    """How the grid's literals follow a block size change: ``size``/``size - 1``, else warps per block."""
    if literals & {size, size - 1}:
        return {size: new, size - 1: new - 1}
    warps, new_warps = size // 32, max(new // 32, 1)
    if size % 32 == 0 and warps >= 2 and literals & {warps, warps - 1} and new % 32 == 0:
        return {warps: new_warps, warps - 1: new_warps - 1}
    return {}


def block2d_variants(base: str, p: Parsed) -> list[Variant]:
    """Variants of ``dim3`` blocks of two literal components, the grid's components rewritten per dimension."""
    device = _literals(p.device_text())
    out = []
    seen: set[tuple[int, int]] = set()
    for launch in p.launches:
        components = _block_components(p, launch)
        grid = _grid_spans(p, launch)
        if len(components) != 2 or not all(re.fullmatch(r"\d+", p.text(c)) for c in components):
            continue
        shape = tuple(int(p.text(c)) for c in components)
        if components[0] in seen or len(grid) != 2:
            continue
        seen.add(components[0])
        for new in SHAPES_2D:
            if new == shape or new[0] * new[1] > MAX_THREADS:
                continue
            if any(n != s and s in device for n, s in zip(new, shape, strict=True)):
                continue
            edits: list[Edit] = []
            for c, g, s, n in zip(components, grid, shape, new, strict=True):
                if n != s:
                    edits.append((*c, str(n)))
                    edits += _literal_edits(p, g, {s: n, s - 1: n - 1})
            v = _variant(base, p.source, "block2d", "block2d", f"{new[0]}x{new[1]}", ("knob",), edits)
            if v is not None:
                out.append(v)
    return out


def grid_cap_variants(base: str, p: Parsed) -> list[Variant]:
    """Grid caps for launches of grid-stride kernels with a 1-D grid."""
    targets: list[tuple[int, int]] = []
    for launch in p.launches:
        body = p.kernel_body(launch.kernel)
        if body is None or "gridDim.x" not in body or re.search(r"gridDim\.[yz]", body) or not launch.args:
            continue
        spans = _grid_spans(p, launch)
        if len(spans) == 1 and not re.match(r"\s*dim3\b", p.text(spans[0])) and spans[0] not in targets:
            targets.append(spans[0])
    if not targets:
        return []
    out = []
    for cap, tag in GRID_CAPS.items():
        edits = [(a, b, f"(({p.source[a:b]}) < {cap} ? ({p.source[a:b]}) : {cap})") for a, b in targets]
        v = _variant(base, p.source, "grid_cap", "grid_cap", str(cap), (tag,), edits)
        if v is not None:
            out.append(v)
    return out


def unroll_variants(base: str, p: Parsed) -> list[Variant]:
    """Every ``#pragma unroll [N]`` of the source set to one factor."""
    pragmas = list(_PRAGMA.finditer(p.masked))
    if not pragmas:
        return []
    out = []
    for factor in UNROLLS:
        edits = [(m.start(), m.end(), f"#pragma unroll {factor}") for m in pragmas]
        v = _variant(base, p.source, "unroll", "unroll", str(factor), ("knob",), edits)
        if v is not None:
            out.append(v)
    return out


def index_variants(base: str, p: Parsed) -> list[Variant]:
    """The 1-D global index made warp-strided (``uncoalesced``) in the kernels where that stays correct."""
    device_functions = [f for f in p.functions if f.device]
    launched = {launch.kernel for launch in p.launches}
    edits: list[Edit] = []
    for f in device_functions:
        body = p.masked[f.body[0] : f.body[1]]
        matches = list(_INDEX.finditer(body))
        if f.name not in launched or not matches or _COLLECTIVE.search(body):
            continue
        rest = _INDEX.sub(" ", body)
        if "threadIdx" in rest or "blockIdx" in rest:
            continue
        for m in matches:
            cast = m.group(1) or ""
            edits.append((f.body[0] + m.start(), f.body[0] + m.end(), f"{cast}threadIdx.x * gridDim.x + blockIdx.x"))
    helpers = [p.masked[f.body[0] : f.body[1]] for f in device_functions if f.name not in launched]
    if not edits or any(re.search(r"threadIdx|blockIdx|__shared__|_sync\s*\(|__syncthreads", h) for h in helpers):
        return []
    v = _variant(base, p.source, "index", "index", "strided", ("uncoalesced",), edits)
    return [v] if v is not None else []


FINDERS: dict[str, Callable[[str, Parsed], list[Variant]]] = {
    "constant": constant_variants, "block": block_variants, "block2d": block2d_variants,
    "grid_cap": grid_cap_variants, "unroll": unroll_variants, "index": index_variants,
}  # fmt: skip
"""The knob finders by kind."""


def variants(base: str, source: str) -> list[Variant]:
    """Every knob variant of implementation ``base`` (its CUDA ``source``), distinct sources, in finder order."""
    parsed = parse(source)
    out, seen = [], {source}
    for finder in FINDERS.values():
        for v in finder(base, parsed):
            if v.source not in seen:
                seen.add(v.source)
                out.append(v)
    return out


def choose(found: Sequence[Variant], k: int, seed: int | str) -> list[Variant]:
    """``k`` variants, deterministic for ``seed``, spread over tags and knobs first (round robin over groups)."""
    rng = random.Random(str(seed))
    groups: dict[tuple[str, str], list[Variant]] = {}
    for v in found:
        groups.setdefault((v.tags[0], v.knob), []).append(v)
    order = sorted(groups)
    rng.shuffle(order)
    # rarer tags first, so the few poor variants are not crowded out by the many knob ones
    order.sort(key=lambda g: sum(len(groups[h]) for h in groups if h[0] == g[0]))
    for key in order:
        rng.shuffle(groups[key])
    chosen: list[Variant] = []
    while len(chosen) < k and any(groups.values()):
        for key in order:
            if groups[key] and len(chosen) < k:
                chosen.append(groups[key].pop())
    return chosen
