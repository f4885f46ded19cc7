"""Build a pre-passed submission into a shared library with g++ and the CPU runtime.

Fixed flags (never the user's), the runtime header precompiled once per runtime
version and compiler, and builds cached by content.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest
from cudaperf_env.toolchain.native import BuildResult, build_library

INCLUDE_DIR = Path(__file__).parent / "include"
SHIM_DIR = INCLUDE_DIR / "shim"
RUNTIME_HEADER = "cudaperf/cuda_cpu.h"
# Identical for the precompiled header and every build, or g++ ignores the PCH.
BASE_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-pthread", "-w", "-fno-strict-aliasing", "-fstack-clash-protection")


@lru_cache(maxsize=1)
def runtime_version() -> str:
    """Hash of every runtime header: part of each cache key."""
    files = sorted(p for p in INCLUDE_DIR.rglob("*") if p.is_file())
    return digest(*(f"{p.relative_to(INCLUDE_DIR)}\0".encode() + p.read_bytes() for p in files))[:16]


def include_flags() -> list[str]:
    return ["-I", str(SHIM_DIR), "-I", str(INCLUDE_DIR)]


@lru_cache(maxsize=1)
def precompiled_header() -> Path:
    """A header that includes the runtime, with its ``.gch`` beside it (built on first use).

    ``-include`` of this path uses the ``.gch`` when valid and falls back to the
    plain text include otherwise, so a failed PCH build only costs speed.
    """
    compiler = tools.host_compiler("g++")
    key = digest("pch/1", tools.version(compiler), runtime_version(), *BASE_FLAGS)[:16]
    folder = cache_dir("pch", key)
    header = folder / "cudaperf_pch.h"
    gch = folder / "cudaperf_pch.h.gch"
    if not gch.exists():
        header.write_text(f"#include <{RUNTIME_HEADER}>\n")
        tmp = folder / f"tmp-{id(folder)}.gch"
        result = tools.run_tool(
            [compiler, *BASE_FLAGS, *include_flags(), "-x", "c++-header", str(header), "-o", str(tmp)],
            folder,
            timeout_s=120,
        )
        if result.ok and tmp.exists():
            tmp.replace(gch)
    return header


def build_cpu(translation_unit: str, timeout_s: float = 60.0, cancel: threading.Event | None = None) -> BuildResult:
    """Compile a complete translation unit (pre-passed code + harness shim) for the CPU runtime."""
    flags = [
        *BASE_FLAGS,
        *include_flags(),
        "-include",
        str(precompiled_header()),
        "-shared",
        "-Wl,-z,defs",
        "-Wl,-Bsymbolic",  # the entry binds to its own definition, even when libc exports the name
        "-x",
        "c++",
    ]
    return build_library(
        tools.host_compiler("g++"),
        flags,
        translation_unit,
        ".cpp",
        key_extra=runtime_version(),
        libs=("-lm",),
        timeout_s=timeout_s,
        cancel=cancel,
    )
