"""Compiler features: ptxas resources, theoretical occupancy and a SASS opcode histogram.

The resources come from the compile check's ``nvcc -cubin -Xptxas -v``
report. The SASS histogram counts each function's instructions by
:func:`opcode_class`, read straight from the cubin's instruction words
(:mod:`cudaperf_env.analysis.cubin`, about a millisecond). When that decoder
does not know an instruction or the architecture, the cubin is disassembled
with ``nvdisasm`` (or ``cuobjdump -sass``) from the ``nvidia-cuda-nvdisasm`` /
``nvidia-cuda-cuobjdump`` wheels, found like nvcc (``$CUDAPERF_NVDISASM`` /
``$CUDAPERF_CUOBJDUMP``, the wheel's ``nvidia/cu*/bin``, then PATH); that
costs about 0.25 s of tool start-up, so those histograms are cached by the
cubin's digest. A missing tool or a failed run leaves the SASS features out;
nothing here raises for that."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from cudaperf_env.analysis.cubin import decode_histogram
from cudaperf_env.analysis.occupancy import Occupancy, occupancy
from cudaperf_env.analysis.static import SourceAnalysis, main_kernel
from cudaperf_env.toolchain.cache import cache_dir, digest, write_atomic
from cudaperf_env.toolchain.compile_check import CompileReport, KernelResources
from cudaperf_env.toolchain.tools import run_tool

_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_NVDISASM_FUNCTION = re.compile(r"^\s*\.text\.([^:\s]+):")
_CUOBJDUMP_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")
_MANGLED = re.compile(r"^_Z(?:N\d*)?(\d+)(\w+)")
SASS_TIMEOUT_S = 30.0

Histogram = Mapping[str, Mapping[str, int]]


@lru_cache(maxsize=4)
def find_tool(name: str) -> str | None:
    """Path of ``nvdisasm`` or ``cuobjdump``: ``$CUDAPERF_<NAME>``, the NVIDIA wheel, PATH; None if absent."""
    candidates = [os.environ.get(f"CUDAPERF_{name.upper()}", "")]
    try:
        import nvidia  # the namespace package of the nvidia-* wheels

        for root in nvidia.__path__:
            candidates += sorted(str(p) for p in Path(root).glob(f"cu*/bin/{name}"))
    except ImportError:
        pass
    candidates.append(shutil.which(name) or "")
    return next((p for p in candidates if p and os.access(p, os.X_OK)), None)


def instruction_mnemonic(line: str) -> str | None:
    """The mnemonic (``LDG.E.128.CONSTANT``) of one line of an nvdisasm or cuobjdump listing; None if no instruction."""
    m = _INSTRUCTION.search(line)
    return m.group(1) if m else None


def opcode_class(mnemonic: str) -> str:
    """The part of a mnemonic that :func:`sass_features` reads: the opcode, with ``.128`` kept for
    128-bit global loads and stores and ``.MMA`` for ptxas's ``HFMA2.MMA`` move idiom.

    ``sass_features`` gives the same counts for a histogram of mnemonics and for its classes; it may
    only read what this keeps (change both, then regenerate the tables: :mod:`.sass_learn`).
    """
    if mnemonic.startswith("HFMA2.MMA"):
        return "HFMA2.MMA"
    opcode, *modifiers = mnemonic.split(".")
    return f"{opcode}.128" if opcode in ("LDG", "STG") and "128" in modifiers else opcode


def parse_sass(listing: str) -> dict[str, Counter[str]]:
    """Opcodes (with modifiers, ``LDG.E.128``) per function of an nvdisasm or cuobjdump listing."""
    functions: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in listing.splitlines():
        header = _NVDISASM_FUNCTION.match(line) or _CUOBJDUMP_FUNCTION.search(line)
        if header:
            current = functions.setdefault(header.group(1), Counter())
            continue
        m = _INSTRUCTION.search(line)
        if m and current is not None:
            current[m.group(1)] += 1
    return functions


def sass_histogram(cubin: str | None) -> dict[str, dict[str, int]] | None:
    """Instructions per :func:`opcode class <opcode_class>` per function of a cubin; None if it cannot be made.

    Read from the instruction words when the opcode tables know them all (about a millisecond,
    :mod:`cudaperf_env.analysis.cubin`), else disassembled (cached by the cubin's content).
    """
    try:
        data = Path(cubin).read_bytes() if cubin else b""
    except OSError:  # evicted from the cache: the features are simply unavailable
        return None
    if not data:
        return None
    decoded = decode_histogram(data)
    if decoded is not None:
        return decoded
    entry = cache_dir("sass") / f"{digest('sass/2', data)}.json"
    if entry.exists():
        try:
            return json.loads(entry.read_text())  # type: ignore[no-any-return]
        except (OSError, json.JSONDecodeError):
            pass
    listing = _disassemble(str(cubin))
    if listing is None:
        return None
    histogram = {fn: _classes(counts) for fn, counts in parse_sass(listing).items()}
    write_atomic(entry, json.dumps(histogram).encode())
    return histogram


def _classes(mnemonics: Counter[str]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for name, n in mnemonics.items():
        counts[opcode_class(name)] += n
    return dict(counts)


def _disassemble(cubin: str) -> str | None:
    for tool, flags in (("nvdisasm", ["-c", "-ndf"]), ("cuobjdump", ["-sass"])):
        path = find_tool(tool)
        if path is None:
            continue
        try:
            result = run_tool([path, *flags, cubin], os.path.dirname(cubin), SASS_TIMEOUT_S, max_output_chars=4_000_000)
        except OSError:  # not executable on this machine
            continue
        if result.ok and _INSTRUCTION.search(result.output):
            return result.output
    return None


def sass_features(histogram: Histogram) -> dict[str, float | int]:
    """Counts over every function: global/shared/local memory, shuffles, barriers, atomics, FMAs."""
    total: Counter[str] = Counter()
    for counts in histogram.values():
        total.update(counts)
    for op in [op for op in total if op.startswith("HFMA2.MMA")]:  # ptxas's idiom for moving constants
        total["MOV"] += total.pop(op)

    def count(*prefixes: str, width: str = "") -> int:
        return sum(
            n for op, n in total.items()
            if op.split(".")[0] in prefixes and (not width or width in op.split("."))
        )

    features: dict[str, float | int] = {
        "sass_instructions": sum(total.values()),
        "sass_global_loads": count("LDG"),
        "sass_global_loads_128": count("LDG", width="128"),
        "sass_global_stores": count("STG"),
        "sass_global_stores_128": count("STG", width="128"),
        "sass_shared_loads": count("LDS", "LDSM"),
        "sass_shared_stores": count("STS"),
        "sass_local_memory": count("LDL", "STL"),
        "sass_shuffles": count("SHFL"),
        "sass_warp_votes": count("VOTE", "VOTEU", "MATCH", "REDUX"),
        "sass_barriers": count("BAR"),
        "sass_global_atomics": count("ATOMG", "REDG", "RED", "ATOM"),
        "sass_shared_atomics": count("ATOMS"),
        "sass_fma": count("FFMA", "DFMA", "HFMA2"),
        "sass_fp_instructions": count("FFMA", "FADD", "FMUL", "DFMA", "DADD", "DMUL", "HFMA2", "HADD2", "HMUL2"),
    }
    memory = features["sass_global_loads"] + features["sass_global_stores"]
    if memory:
        wide = features["sass_global_loads_128"] + features["sass_global_stores_128"]
        features["sass_vector_fraction"] = wide / memory
    return features


def kernel_name(ptxas_name: str) -> str:
    """Simple name of a kernel as ptxas reports it: ``void k<2>(int, float*)`` or ``_Z1kPf`` -> ``k``."""
    name = ptxas_name.strip()
    m = _MANGLED.match(name)
    if m:
        return m.group(2)[: int(m.group(1))]
    head = name.split("(")[0].split("<")[0].strip()
    return head.split()[-1].split("::")[-1] if head else name


def _occupancies(
    report: CompileReport, analysis: SourceAnalysis, block_size_hint: int | None
) -> dict[str, Occupancy]:
    """Occupancy of each compiled kernel at the block size it is launched with."""
    infos = {k.name: k for k in analysis.kernels}
    result: dict[str, Occupancy] = {}
    for res in report.kernels:
        name = kernel_name(res.name)
        info = infos.get(name)
        threads = info.threads if info is not None else (block_size_hint or 256)
        dynamic = info.dynamic_shared if info is not None else 0
        bounds = info.launch_bounds if info is not None else None
        try:
            occ = occupancy(threads, res.registers, res.shared_bytes, dynamic, res.barriers, report.arch, bounds)
        except ValueError:  # an architecture without a table: occupancy is left out
            continue
        if name not in result or occ.occupancy < result[name].occupancy:
            result[name] = occ
    return result


def compiler_features(
    report: CompileReport,
    analysis: SourceAnalysis,
    block_size_hint: int | None = None,
    sass: bool = True,
) -> tuple[dict[str, float | int | str], dict[str, Occupancy]]:
    """Features from a successful compile check.

    Args:
        report: The compile check's report (``ok`` True).
        analysis: The static analysis (block sizes and dynamic shared memory of launches).
        block_size_hint: Threads per block for kernels whose launch is not constant.
        sass: Whether to disassemble the cubin for the opcode histogram.

    Returns:
        ``(features, occupancy per kernel)``.
    """
    kernels: Sequence[KernelResources] = report.kernels
    features: dict[str, float | int | str] = {
        "compiled_kernels": len(kernels),
        "registers": max((k.registers for k in kernels), default=0),
        "spill_bytes": sum(k.spill_stores + k.spill_loads for k in kernels),
        "stack_bytes": max((k.stack_bytes for k in kernels), default=0),
        "ptxas_shared_bytes": max((k.shared_bytes for k in kernels), default=0),
        "ptxas_barriers": max((k.barriers for k in kernels), default=0),
    }
    occ = _occupancies(report, analysis, block_size_hint)
    main = main_kernel(analysis)
    chosen = occ.get(main.name) if main is not None else None
    if chosen is None and occ:
        chosen = min(occ.values(), key=lambda o: o.occupancy)
    if chosen is not None:
        features["occupancy"] = chosen.occupancy
        features["occupancy_limiter"] = chosen.limiter
        features["active_blocks_per_sm"] = chosen.blocks
        features["occupancy_registers"] = chosen.registers
        features["occupancy_min"] = min(o.occupancy for o in occ.values())
    if sass:
        histogram = sass_histogram(report.cubin)
        if histogram is not None:
            features.update(sass_features(histogram))
    return features, occ
