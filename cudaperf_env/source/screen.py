"""The static screen: refuse dangerous or off-task source before anything is compiled.

It runs in the trusted parent for every backend. It reads the code as the
compiler's first phases leave it (line splices joined, digraphs spelled out:
``source/phases.py``) and is token based, so text in comments and string literals
never matches. It is a fast first line with clear messages, not the boundary:
the kernel confinement of compilers and workers (``toolchain/confine.py``) is.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple, Protocol

from cudaperf_env.source.phases import translate
from cudaperf_env.source.tokens import Token, directive_name, directive_tokens, join_tokens
from cudaperf_env.source.unit import Unit, parse

# The C and C++ standard headers a submission may include: math, integers, limits, assert, strings,
# stdio, algorithms, utilities.
STANDARD_HEADERS = frozenset(
    {
        "assert.h", "float.h", "inttypes.h", "limits.h", "math.h", "stdbool.h", "stddef.h",
        "stdint.h", "stdio.h", "stdlib.h", "string.h", "algorithm", "array", "cassert", "cfloat",
        "cinttypes", "climits", "cmath", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring",
        "functional", "initializer_list", "iostream", "limits", "numeric", "string", "tuple",
        "type_traits", "utility", "vector",
    }
)
ALLOWED_HEADERS = STANDARD_HEADERS | frozenset(
    {
        # CUDA runtime and device headers.
        "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_bf16.h",
        "cuda_fp8.h", "cooperative_groups.h", "cooperative_groups/reduce.h",
        "cooperative_groups/scan.h", "cooperative_groups/memcpy_async.h",
        "device_launch_parameters.h", "device_functions.h", "math_constants.h", "vector_types.h",
        "vector_functions.h", "mma.h", "cuda_pipeline.h", "cuda/barrier", "cuda/pipeline",
    }
)
# Library name -> header and identifier prefixes that belong to it.
LIBRARIES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = MappingProxyType(
    {
        "cublas": (("cublas",), ("cublas", "CUBLAS_")),
        "cudnn": (("cudnn",), ("cudnn", "CUDNN_")),
        "cufft": (("cufft",), ("cufft", "CUFFT_")),
        "curand": (("curand",), ("curand", "CURAND_")),
        "cusparse": (("cusparse",), ("cusparse", "CUSPARSE_")),
        "cusolver": (("cusolver",), ("cusolver", "CUSOLVER_")),
        "cutensor": (("cutensor",), ("cutensor", "CUTENSOR_")),
        "nccl": (("nccl",), ("nccl",)),
        "thrust": (("thrust/",), ()),
        "cub": (("cub/",), ()),
        "cutlass": (("cutlass/", "cute/"), ()),
        "torch": (("torch/", "aten/", "c10/"), ()),
    }
)
# Namespaces (used as `ns::`) that belong to a library.
_NAMESPACES = MappingProxyType(
    {"thrust": "thrust", "cub": "cub", "cutlass": "cutlass", "cute": "cutlass", "torch": "torch",
     "at": "torch", "c10": "torch"}
)
_INCLUDE = re.compile(
    r"[ \t]*#[ \t]*(?:include|include_next|import)\b[ \t]*(?:<([^>\n]*)>|\"([^\"\n]*)\"|(.*))"
)
_INIT_SECTIONS = re.compile(r"\.(?:init_array|fini_array|preinit_array|ctors|dtors)")


class _Hit(NamedTuple):
    """Where a matcher matched: the line, the offending name, and optional detail."""

    line: int
    name: str
    detail: str = ""


@dataclass(frozen=True)
class Finding:
    """One problem the screen found.

    Attributes:
        line: Line in the code; 0 when the finding is about the whole file.
        rule: The rule's name, e.g. ``"include"``, ``"process"``, ``"no_entry"``.
        message: What is wrong and what to do.
    """

    line: int
    rule: str
    message: str


@dataclass(frozen=True)
class _View:
    """What matchers look at."""

    unit: Unit
    entry: str
    allow: frozenset[str]
    lists: tuple[Sequence[Token], ...]  # code tokens, then each #define's body
    # identifier -> (list index, token index) of each use that is not a member access
    uses: Mapping[str, tuple[tuple[int, int], ...]]

    def places(self, name: str) -> Iterator[tuple[Sequence[Token], int]]:
        """``(tokens, index)`` of each non-member use of ``name``."""
        for at, k in self.uses.get(name, ()):
            yield self.lists[at], k


class _Matcher(Protocol):
    def find(self, view: _View) -> Iterator[_Hit]: ...


@dataclass(frozen=True)
class _Names:
    """Identifiers used anywhere but as members (``.x``, ``->x``).

    Attributes:
        names: Matched wherever they appear.
        calls: Matched only when called, ``name(``, or address-taken, ``&name``.
        prefixes: Names starting with one of these match.
        qualified: ``ns::name`` forms that match.
    """

    names: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    qualified: frozenset[str] = frozenset()

    def find(self, view: _View) -> Iterator[_Hit]:
        last_parts = {q.rpartition("::")[2] for q in self.qualified}
        for name in view.uses:
            always = name in self.names or bool(self.prefixes and name.startswith(self.prefixes))
            if not (always or name in self.calls or name in last_parts):
                continue
            for toks, k in view.places(name):
                prev = toks[k - 1].text if k else ""
                after = toks[k + 1].text if k + 1 < len(toks) else ""
                qualified = f"{toks[k - 2].text}::{name}" if prev == "::" and k >= 2 else ""
                parenthesised = prev == "(" and after == ")"  # `(open)(path, flags)`
                if always or (name in self.calls and (after == "(" or prev == "&" or parenthesised)):
                    yield _Hit(toks[k].line, name)
                elif qualified in self.qualified:
                    yield _Hit(toks[k].line, qualified)


@dataclass(frozen=True)
class _Includes:
    """``#include`` of headers outside the allowlist (``libraries``: of libraries not allowed)."""

    libraries: bool

    def find(self, view: _View) -> Iterator[_Hit]:
        for tok in view.unit.directives:
            m = _INCLUDE.match(tok.text.replace("\\\n", ""))
            if m is None:
                continue
            angled, quoted, other = m.groups()
            header = (angled or quoted or "").strip()
            written = f'"{quoted}"' if quoted is not None else (other or "").strip()
            written = f"<{angled}>" if angled is not None else written
            library = _library_of_header(header) if header else None
            if self.libraries and library and library not in view.allow:
                yield _Hit(tok.line, written, library)
            elif not self.libraries and not library and header not in ALLOWED_HEADERS:
                yield _Hit(tok.line, written or "(nothing)")


@dataclass(frozen=True)
class _LibraryNames:
    """Identifiers and namespaces of libraries the task does not allow."""

    def find(self, view: _View) -> Iterator[_Hit]:
        prefixes = {
            p: lib for lib, (_, ps) in LIBRARIES.items() if lib not in view.allow for p in ps
        }
        for name in view.uses:
            by_prefix = next((v for p, v in prefixes.items() if name.startswith(p)), None)
            namespace = _NAMESPACES.get(name)
            if by_prefix is None and (namespace is None or namespace in view.allow):
                continue
            for toks, k in view.places(name):
                if by_prefix is not None:
                    yield _Hit(toks[k].line, name, by_prefix)
                elif k + 1 < len(toks) and toks[k + 1].text == "::":
                    yield _Hit(toks[k].line, f"{name}::", namespace or "")


@dataclass(frozen=True)
class _Directives:
    """Directives whose name is not in ``allowed`` (``pragmas``: pragmas not in ``allowed``)."""

    allowed: frozenset[str]
    pragmas: bool = False

    def find(self, view: _View) -> Iterator[_Hit]:
        for tok in view.unit.directives:
            name = directive_name(tok)
            if not self.pragmas and name not in self.allowed:
                yield _Hit(tok.line, name)
            elif self.pragmas and name == "pragma":
                words = directive_tokens(view.unit.source, tok)[1:]
                if not words or words[0].text not in self.allowed:
                    yield _Hit(tok.line, join_tokens(words))
        for toks, k in view.places("_Pragma") if self.pragmas else ():
            text = toks[k + 2].text.strip('"') if k + 2 < len(toks) else ""
            if not text.split() or text.split()[0] not in self.allowed:
                yield _Hit(toks[k].line, text)


@dataclass(frozen=True)
class _InitCode:
    """Code that runs before or after the entry: constructor attributes and init sections."""

    names: frozenset[str] = frozenset(
        {"constructor", "destructor", "init_priority", "__constructor__", "__destructor__",
         "__init_priority__"}
    )

    def find(self, view: _View) -> Iterator[_Hit]:
        for name in self.names:
            yield from (_Hit(toks[k].line, name) for toks, k in view.places(name))
        for name in ("section", "__section__"):
            for toks, k in view.places(name):
                arg = toks[k + 2] if k + 2 < len(toks) else toks[k]
                if arg.kind == "string" and _INIT_SECTIONS.search(arg.text):
                    yield _Hit(toks[k].line, f"section({arg.text})")


@dataclass(frozen=True)
class _Structure:
    """Whole-file facts: ``kernel``, ``entry``, ``host_entry`` or ``launch`` is missing."""

    need: str

    def find(self, view: _View) -> Iterator[_Hit]:
        functions = view.unit.functions
        entries = [f for f in functions if f.name == view.entry]
        if self.need == "kernel" and not any(f.is_kernel for f in functions):
            yield _Hit(0, "")
        elif self.need == "entry" and not entries:
            close = difflib.get_close_matches(view.entry, sorted({f.name for f in functions}), n=1)
            yield _Hit(0, view.entry, f" (did you mean `{close[0]}`?)" if close else "")
        elif self.need == "host_entry" and entries and all(f.is_kernel for f in entries):
            yield _Hit(entries[0].line, view.entry)
        elif self.need == "launch" and not any(
            t.text == "<<<" and t.kind == "punct" for toks in view.lists for t in toks
        ):
            yield _Hit(0, "")


@dataclass(frozen=True)
class _TokenPaste:
    """``##`` in a macro: it can assemble a forbidden name (``sys##tem``) the screen cannot see."""

    def find(self, view: _View) -> Iterator[_Hit]:
        for tok in view.unit.directives:
            if "##" in tok.text and tok.text.lstrip("# \t").startswith("define"):
                yield _Hit(tok.line, "##")


_RULES: Mapping[str, tuple[_Matcher, str]] = MappingProxyType(
    {
        "include": (_Includes(libraries=False), (
            "`#include {name}` is not available: include only C/C++ standard headers (math, "
            "integer types, limits, assert, strings, stdio, algorithm, type traits, utility) and "
            "CUDA headers such as cuda_runtime.h, cuda_fp16.h or cooperative_groups.h; remove it")),
        "library": (_Includes(libraries=True), (
            "`{name}` belongs to the {detail} library, which this task does not allow: the task "
            "asks for your own kernels, so write the computation as __global__ kernels")),
        "library_call": (_LibraryNames(), (
            "`{name}` belongs to the {detail} library, which this task does not allow: the task "
            "asks for your own kernels, so write the computation as __global__ kernels")),
        "directive": (_Directives(frozenset(
            {"", "include", "define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef",
             "elifndef", "else", "endif", "pragma", "error", "warning", "line"})), (
            "`#{name}` is not allowed; use only #include, #define, #undef, #if/#ifdef/#ifndef/"
            "#elif/#else/#endif, #pragma unroll, #error and #warning")),
        "pragma": (_Directives(frozenset({"unroll", "nounroll", "once"}), pragmas=True), (
            "`#pragma {name}` is not allowed; only #pragma unroll, #pragma nounroll and "
            "#pragma once are: remove it")),
        "process": (_Names(
            names=frozenset({
                "system", "popen", "fork", "vfork", "clone", "execl", "execle", "execlp", "execv",
                "execve", "execvp", "execvpe", "fexecve", "execveat", "posix_spawn", "posix_spawnp", "dlopen",
                "dlmopen", "dlsym", "dlvsym", "syscall", "ptrace", "sigaction", "prctl",
                "process_vm_readv", "process_vm_writev", "_Fork", "__clone", "clone3", "daemon",
                "wordexp", "setpgrp", "tgkill", "tkill", "sigqueue", "pidfd_open", "pidfd_send_signal",
                "__libc_dlopen_mode", "seccomp", "unshare", "setns"}),
            calls=frozenset({"kill", "killpg", "raise", "signal"})), (
            "`{name}` starts, signals or inspects processes or loads code, which a submission may "
            "not do: remove it and compute only with your kernels")),
        "memory_map": (_Names(names=frozenset(
            {"mmap", "mmap64", "mprotect", "munmap", "mremap", "pkey_mprotect", "madvise"})), (
            "`{name}` maps or reprotects memory, which is not allowed: use cudaMalloc/cudaFree "
            "for device buffers")),
        "file": (_Names(
            names=frozenset({
                "fopen", "freopen", "fdopen", "openat", "creat", "unlink", "unlinkat", "chdir",
                "fchdir", "mkdir", "rmdir", "tmpfile", "mkstemp", "symlink", "truncate", "chmod",
                "fopen64", "freopen64", "open64", "openat64", "openat2", "creat64", "tmpfile64",
                "mkstemp64", "mkostemp", "mkostemps", "mkdtemp", "truncate64", "ftruncate", "ftruncate64",
                "fallocate", "posix_fallocate", "link", "linkat", "symlinkat", "renameat", "renameat2",
                "chown", "fchown", "lchown", "fchownat", "fchmod", "fchmodat", "mkdirat", "mknod",
                "mknodat", "mkfifo", "opendir", "fdopendir", "readdir", "scandir", "nftw", "ftw",
                "dup2", "dup3", "fcntl", "ioctl", "name_to_handle_at", "open_by_handle_at",
                "inotify_init", "fanotify_init", "mount", "umount", "umount2", "pivot_root",
                "memfd_create", "shm_open", "shm_unlink", "sendfile", "splice", "copy_file_range"}),
            calls=frozenset({"open", "remove", "rename"})), (
            "`{name}` touches the file system, which is not allowed: read inputs from the "
            "pointers `{entry}` receives and write only its outputs")),
        "network": (_Names(
            names=frozenset({"socket", "socketpair", "getaddrinfo", "gethostbyname", "sendto",
                             "recvfrom", "inet_pton", "inet_addr"}),
            calls=frozenset({"connect", "bind", "listen", "accept"})), (
            "`{name}` is network access, which is not allowed: remove it")),
        "thread": (_Names(
            names=frozenset({"thrd_create"}), prefixes=("pthread_",),
            qualified=frozenset({"std::thread", "std::jthread", "std::async"})), (
            "host threads (`{name}`) are not allowed: put the parallel work in your kernels")),
        "environment": (_Names(names=frozenset(
            {"getenv", "secure_getenv", "setenv", "unsetenv", "putenv", "clearenv", "setrlimit",
             "prlimit", "setsid", "setpgid", "setuid", "setgid", "chroot", "environ", "__environ",
             "_environ", "getauxval", "seteuid", "setegid", "setreuid", "setregid", "setresuid",
             "setresgid", "setgroups", "capset", "personality"})), (
            "`{name}` reads or changes the process environment or limits, which is not allowed: "
            "remove it")),
        "exit": (_Names(
            names=frozenset({"_exit", "_Exit", "quick_exit", "atexit", "at_quick_exit", "__cxa_atexit",
                             "__cxa_thread_atexit", "__cxa_thread_atexit_impl", "on_exit", "__cxa_finalize",
                             "set_terminate", "set_unexpected", "longjmp", "siglongjmp", "setjmp", "sigsetjmp"}),
            calls=frozenset({"exit", "abort"})), (
            "`{name}` ends the process or runs code at exit: return from `{entry}` instead "
            "(CUDA errors are reported through cudaGetLastError)")),
        "init_code": (_InitCode(), (
            "`{name}` makes code run before or after `{entry}` (constructors, destructors, init "
            "sections), which is not allowed: do all the work inside `{entry}` and your kernels")),
        "token_paste": (_TokenPaste(), (
            "token pasting (`##`) in macros is not allowed (it can build names the screen must "
            "see): write the names out in full")),
        "sanitizer_off": (_Names(
            names=frozenset({"no_address_safety_analysis", "__no_address_safety_analysis__",
                             "disable_sanitizer_instrumentation"}),
            prefixes=("no_sanitize", "__no_sanitize")), (
            "`{name}` turns off the checks the evaluation compiles into your code (the race "
            "detector, array bounds): remove it")),
        "asm": (_Names(names=frozenset({"asm", "__asm__", "__asm"})), (
            "inline assembly (`{name}`) is not allowed: use CUDA C++ intrinsics instead "
            "(__shfl_down_sync, __ldg, atomicAdd, ...)")),
        "device_control": (_Names(
            names=frozenset({
                "cudaDeviceReset", "cudaSetDevice", "cudaSetDeviceFlags", "cudaSetValidDevices",
                "cudaDeviceSetLimit", "cudaProfilerStart", "cudaProfilerStop",
                "cudaStreamSetAttribute", "cudaCtxResetPersistingL2Cache"}),
            prefixes=("cudaIpc",)), (
            "`{name}` changes device-wide state that the harness owns (device, limits, profiler, "
            "L2 persistence): remove it, the harness sets up the device")),
        "cuda_graph": (_Names(
            names=frozenset({"cudaStreamBeginCapture", "cudaStreamEndCapture",
                             "cudaStreamBeginCaptureToGraph"}),
            prefixes=("cudaGraph",)), (
            "CUDA graphs (`{name}`) are not allowed: launch your kernels directly with "
            "kernel<<<grid, block>>>(args...)")),
        "launch_api": (_Names(names=frozenset(
            {"cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC",
             "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice",
             "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel"})), (
            "`{name}` is not allowed: launch kernels with kernel<<<grid, block, shared_bytes, "
            "stream>>>(args...)")),
        "driver_api": (_Names(prefixes=("cuCtx", "cuInit", "cuModule", "cuLibrary",
                                        "cuDevicePrimaryCtx", "cuLink")), (
            "`{name}` (CUDA driver API contexts and modules) is not allowed: use the CUDA "
            "runtime API and <<<...>>> launches")),
        "no_kernel": (_Structure("kernel"), (
            "no __global__ kernel was found: write at least one __global__ kernel and launch it "
            "from `{entry}`")),
        "no_entry": (_Structure("entry"), (
            "no function named `{entry}` was found{detail}: define the host function "
            "`extern \"C\" void {entry}(...)` with the task's signature and launch your kernels "
            "from it")),
        "entry_is_kernel": (_Structure("host_entry"), (
            "`{entry}` is a __global__ kernel, but it must be the host function that launches "
            "your kernels: rename the kernel and define `extern \"C\" void {entry}(...)` that "
            "launches it")),
        "no_launch": (_Structure("launch"), (
            "no kernel launch was found: launch your kernel from `{entry}` with "
            "kernel<<<grid, block>>>(args...)")),
    }
)


def screen(
    code: str, *, entry: str, allow_libraries: frozenset[str] = frozenset()
) -> tuple[Finding, ...]:
    """Checks a submission against every rule.

    Args:
        code: The submission's CUDA C++ source.
        entry: Name of the host function the task asks for.
        allow_libraries: Libraries the task allows, keys of ``LIBRARIES``
            (``"cublas"``, ``"thrust"``, ...).

    Returns:
        Findings sorted by line then rule; empty when the code passes.
    """
    unit = parse(translate(code))
    lists = (unit.code, *(m.body for m in unit.defines))
    view = _View(unit, entry, frozenset(allow_libraries), lists, _uses(lists))
    found = {
        Finding(hit.line, rule, message.format(name=hit.name, detail=hit.detail, entry=entry))
        for rule, (matcher, message) in _RULES.items()
        for hit in matcher.find(view)
    }
    return tuple(sorted(found, key=lambda f: (f.line, f.rule, f.message)))


def _uses(lists: Sequence[Sequence[Token]]) -> Mapping[str, tuple[tuple[int, int], ...]]:
    uses: dict[str, list[tuple[int, int]]] = {}
    for at, toks in enumerate(lists):
        for k, tok in enumerate(toks):
            if tok.kind == "ident" and not (k and toks[k - 1].text in (".", "->")):
                uses.setdefault(tok.text, []).append((at, k))
    return MappingProxyType({name: tuple(places) for name, places in uses.items()})


def _library_of_header(header: str) -> str | None:
    lowered = header.lower()
    base = lowered.rsplit("/", 1)[-1]
    for library, (prefixes, _) in LIBRARIES.items():
        for prefix in prefixes:
            if (prefix.endswith("/") and lowered.startswith(prefix)) or base.startswith(prefix):
                return library
    return None
