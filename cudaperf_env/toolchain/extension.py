"""Builds a KernelBench-mode submission's torch extensions, confined and cached.

Each :class:`~cudaperf_env.source.inline_extension.InlineExtension` the screen read is built by
PyTorch's own ``load_inline`` in a confined child (``extension_child.py``: its own user, no network,
only its build folder writable, the compile time limited) into
``$CUDAPERF_CACHE_DIR/torch_extensions/<digest>/``, the digest covering the screened arguments, the
torch release, the GPU architecture and the CUDA toolkit. A folder is complete once ``built.json`` is
in it (a finished build is moved into place whole), so a repeated submission, in this process or a
later one, loads the same build without compiling. Failed builds are not kept.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
import secrets
import shutil
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from cudaperf_env.errors import ToolchainError
from cudaperf_env.source.inline_extension import InlineExtension
from cudaperf_env.text import truncate
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import cache_dir, digest, touch
from cudaperf_env.toolchain.confine import Confinement

CHILD = Path(__file__).with_name("extension_child.py")
MARKER = "built.json"
# Lines of torch's build error that are not the compiler's diagnostics: ninja's command echoes and
# the command lines themselves (kilobytes of include paths each).
_NOISE = re.compile(r"^\s*(\[\d+/\d+\]|FAILED:|ninja: |subprocess\.CalledProcessError|The above exception|Traceback)"
                    r"|(-isystem|--compiler-options|-D_GLIBCXX_USE_CXX11_ABI).{200}")  # fmt: skip


@dataclass(frozen=True)
class ExtensionBuild:
    """The builds of a submission's extensions, or why not.

    Attributes:
        ok: Every extension built.
        modules: Extension key (:attr:`InlineExtension.key`) -> the built module (``<name>.so``).
        log: The compiler's diagnostics of the failed build (trimmed).
        seconds: Wall time (0 when every build came from the cache).
        cached: Every module came from the cache.
        timed_out: The build ran past its time limit.
    """

    ok: bool
    modules: Mapping[str, Path] = field(default_factory=dict)
    log: str = ""
    seconds: float = 0.0
    cached: bool = False
    timed_out: bool = False


def build_extensions(
    extensions: Sequence[InlineExtension], arch: str | None, timeout_s: float = 300.0,
    cancel: threading.Event | None = None,
) -> ExtensionBuild:  # fmt: skip
    """Build each extension (``arch``: ``sm_90``; None builds C++ sources only, for a CPU torch).

    ``timeout_s`` bounds each extension's build; the first failure ends the whole.
    """
    modules: dict[str, Path] = {}
    seconds, cached = 0.0, True
    for ext in extensions:
        built = _build_one(ext, arch, timeout_s, cancel)
        seconds += built.seconds
        cached = cached and built.cached
        if not built.ok:
            return ExtensionBuild(False, modules, built.log, seconds, False, built.timed_out)
        modules.update(built.modules)
    return ExtensionBuild(True, modules, "", seconds, cached)


def build_folder(ext: InlineExtension, arch: str | None) -> Path:
    """Where ``ext`` is built: named by a digest of everything the build depends on."""
    home = str(cuda_home() or "") if ext.cuda_sources else ""
    key = digest("torch_extension/1", ext.key, torch_release(), arch or "cpu", home)[:24]
    return cache_dir("torch_extensions") / key


@cache
def _build_lock(folder: str) -> threading.Lock:
    """One build of a folder at a time in this process (a GRPO group often holds the same reply several times)."""
    return threading.Lock()


def _build_one(ext: InlineExtension, arch: str | None, timeout_s: float,
               cancel: threading.Event | None) -> ExtensionBuild:  # fmt: skip
    folder = build_folder(ext, arch)
    with _build_lock(folder.name):
        return _build_in(ext, arch, folder, timeout_s, cancel)


def _build_in(ext: InlineExtension, arch: str | None, folder: Path, timeout_s: float,
              cancel: threading.Event | None) -> ExtensionBuild:  # fmt: skip
    module = folder / f"{ext.name}.so"
    if (folder / MARKER).is_file() and module.is_file():
        touch(folder / MARKER)
        return ExtensionBuild(True, {ext.key: module}, cached=True)
    if ext.cuda_sources and arch is None:
        return ExtensionBuild(False, log="CUDA sources need a GPU architecture to build for")
    started = time.perf_counter()
    tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir(mode=0o755)
    try:
        result = _run_child(ext, arch, tmp, timeout_s, cancel)
        built = tmp / f"{ext.name}.so"
        seconds = time.perf_counter() - started
        if not result.ok or not built.is_file():
            log = trim_build_log(result.output) if not result.timed_out else (
                f"the build of extension {ext.name!r} ran past its {timeout_s:g} s limit (killed): simplify the "
                "sources (fewer template instantiations, smaller unrolls)")  # fmt: skip
            return ExtensionBuild(False, log=log, seconds=seconds, timed_out=result.timed_out)
        _publish(tmp, folder, ext)
        return ExtensionBuild(True, {ext.key: module}, seconds=seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_child(ext: InlineExtension, arch: str | None, folder: Path, timeout_s: float,
               cancel: threading.Event | None) -> tools.ToolResult:  # fmt: skip
    home = cuda_home() if ext.cuda_sources else None
    if ext.cuda_sources and home is None:
        raise ToolchainError("no CUDA toolkit for torch extensions: set CUDA_HOME or install the project's nvcc wheel")
    env = {"MAX_JOBS": "2", "TORCH_EXTENSIONS_DIR": str(folder)}
    if home is not None:
        env["CUDA_HOME"] = str(home)
    if arch is not None:
        env["TORCH_CUDA_ARCH_LIST"] = arch_list(arch)
    spec = {"name": ext.name, "cpp_sources": list(ext.cpp_sources), "cuda_sources": list(ext.cuda_sources),
            "functions": list(ext.functions), "extra_cflags": list(ext.cflags),
            "extra_cuda_cflags": list(ext.cuda_cflags), "env": env}  # fmt: skip
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    visible = [CHILD, *([home] if home is not None else [])]
    return tools.run_tool([sys.executable, "-I", str(CHILD), "spec.json"], folder, timeout_s,
                          memory_bytes=16 << 30, max_output_chars=64000, cancel=cancel, confine=Confinement(),
                          visible=visible)  # fmt: skip


def _publish(tmp: Path, folder: Path, ext: InlineExtension) -> None:
    """Move a finished build into place whole, readable by every confined worker and owned by this process."""
    for path in [tmp, *tmp.rglob("*")]:
        with contextlib.suppress(OSError):
            if os.geteuid() == 0:
                os.chown(path, os.geteuid(), os.getegid(), follow_symlinks=False)
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() or path.suffix == ".so" else 0o644)
    (tmp / MARKER).write_text(json.dumps({"key": ext.key, "name": ext.name}), encoding="utf-8")
    if folder.exists() and not (folder / MARKER).is_file():
        shutil.rmtree(folder, ignore_errors=True)  # a build that died before it was complete
    with contextlib.suppress(OSError):  # another evaluation published the same build first: keep that one
        os.replace(tmp, folder)


def trim_build_log(text: str, max_chars: int = 4000) -> str:
    """The compiler's diagnostics from torch's build error: ninja's echoes and command lines left out (pure)."""
    lines = [line for line in text.splitlines() if line.strip() and not _NOISE.search(line)]
    return truncate("\n".join(lines), max_chars, max_lines=60)


def arch_list(arch: str) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for an nvcc architecture: ``sm_90`` -> ``9.0``, ``sm_90a`` -> ``9.0a`` (pure)."""
    m = re.fullmatch(r"sm_(\d+)(\d)([a-z]?)", arch)
    if m is None:
        raise ValueError(f"not an nvcc GPU architecture: {arch!r} (expected e.g. sm_90)")
    return f"{m.group(1)}.{m.group(2)}{m.group(3)}"


@lru_cache(maxsize=1)
def torch_release() -> str:
    """The installed torch's version (read from its metadata: torch is not imported here)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return ""


@lru_cache(maxsize=1)
def cuda_home() -> Path | None:
    """The CUDA toolkit torch builds extensions with: ``$CUDA_HOME``, else the project's nvcc's.

    torch links ``-lcudart`` from ``CUDA_HOME/lib64`` (or ``lib``); NVIDIA's wheels ship only
    ``libcudart.so.N``, so for them a folder of links in the cache stands in, adding the unversioned name.
    """
    given = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if given:
        return Path(given)
    try:
        root = Path(tools.nvcc()).resolve().parent.parent
    except ToolchainError:
        return None
    if any((root / lib / "libcudart.so").exists() for lib in ("lib64", "lib")):
        return root
    runtime = sorted((root / "lib").glob("libcudart.so.*"))
    if not runtime:
        return None
    home = cache_dir("torch_extensions", "cuda-home-" + digest(str(root))[:16])
    lib64 = home / "lib64"
    lib64.mkdir(exist_ok=True)
    links = {home / n: root / n for n in ("bin", "include", "nvvm") if (root / n).exists()}
    links |= {lib64 / item.name: item for item in (root / "lib").iterdir()} | {lib64 / "libcudart.so": runtime[0]}
    for link, target in links.items():
        with contextlib.suppress(FileExistsError):  # another process made it first
            link.symlink_to(target)
    return home
