"""Kernel confinement of untrusted processes (compilers, assembler, workers): the parent's side.

:meth:`Confinement.wrap` turns a command into one that runs it through
``confine_exec.py`` (see that module for what the child sees): its own PID, mount,
network, IPC and UTS namespaces, a root holding only the toolchain and the paths
given, private ``/tmp`` and ``/dev/shm``, rlimits, and an unprivileged user id of its
own. Where the kernel refuses namespaces (no root and no unprivileged user
namespaces, or a container without ``CAP_SYS_ADMIN``) it falls back to the rlimits
alone (the CPU worker still drops to ``nobody`` itself), with a
:class:`ConfinementWarning` said once per process.
``CUDAPERF_CONFINE=off`` turns confinement off (for measuring its cost; never for
training on untrusted policies). docs/sandbox.md has the threat model.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from cudaperf_env.toolchain import seccomp_policy

LAUNCHER = Path(__file__).with_name("confine_exec.py")
LAUNCHER_SOURCE = Path(__file__).with_name("confine.c")
SECCOMP_ENV = "CUDAPERF_SECCOMP"
"""``off`` leaves out the C launcher's seccomp filter (to rule it out when a toolchain or driver misbehaves)."""
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Random user ids come from here: far above any account, one per confined process
# tree, so that a process limit and file ownership are that evaluation's alone.
UID_RANGE = (1_500_000_000, 2_000_000_000)
# The first step's threads (nvcc check, builds, worker) all ask for the launcher at once: one builds it.
_LAUNCHER_BUILD = threading.Lock()


class ConfinementWarning(RuntimeWarning):
    """Namespaces are unavailable: untrusted code runs with rlimits and a user change only."""


@dataclass(frozen=True)
class Limits:
    """rlimits of a confined process tree.

    Attributes:
        memory_bytes: Address space per process (RLIMIT_AS); None: unlimited (a CUDA context
            reserves far more address space than it uses: limit ``data_bytes`` instead).
        data_bytes: Private writable memory per process (RLIMIT_DATA); None: unlimited.
        cpu_seconds: CPU time per process (RLIMIT_CPU), a backstop behind the wall-clock limits.
        file_bytes: Largest file it may write (RLIMIT_FSIZE).
        processes: Processes and threads of its user id (RLIMIT_NPROC; the id is its own).
        open_files: Open file descriptors per process (RLIMIT_NOFILE).
        tmpfs_bytes: Size of each of its private ``/tmp`` and ``/dev/shm``.
    """

    memory_bytes: int | None = 8 << 30
    data_bytes: int | None = None
    cpu_seconds: int = 900
    file_bytes: int = 512 << 20
    processes: int = 256
    open_files: int = 256
    tmpfs_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        sizes = (self.memory_bytes, self.data_bytes, self.cpu_seconds, self.file_bytes, self.processes,
                 self.open_files, self.tmpfs_bytes)  # fmt: skip
        if min(v for v in sizes if v is not None) <= 0:
            raise ValueError(f"every limit must be positive (or None where allowed): {self}")

    def rlimits(self) -> dict[str, int]:
        """The limits by the launcher's names (``as``, ``data``, ``cpu``, ...)."""
        limits = {"as": self.memory_bytes, "data": self.data_bytes, "cpu": self.cpu_seconds, "fsize": self.file_bytes,
                  "nproc": self.processes, "nofile": self.open_files, "core": 0}  # fmt: skip
        return {name: value for name, value in limits.items() if value is not None}


@dataclass(frozen=True)
class Confined:
    """A command ready to start, and the user id it will run as (None: the caller's)."""

    argv: list[str]
    uid: int | None
    mode: str


@dataclass(frozen=True)
class Confinement:
    """How untrusted processes are confined.

    Attributes:
        enabled: Confine at all (``CUDAPERF_CONFINE=off`` turns the default off).
        limits: rlimits of the confined processes.
        devices: Device nodes visible inside (the GPU worker's ``/dev/nvidia*``).
        sys: Show ``/sys`` read-only (GPU drivers read PCI topology there).
    """

    enabled: bool = field(default_factory=lambda: os.environ.get("CUDAPERF_CONFINE", "on").lower() != "off")
    limits: Limits = field(default_factory=Limits)
    devices: tuple[str, ...] = ()
    sys: bool = False

    def wrap(
        self, argv: Sequence[str], *, cwd: str | Path, rw: Sequence[str | Path] = (), ro: Sequence[str | Path] = (),
        python_script: bool = False,
    ) -> Confined:
        """``argv`` confined: ``rw`` paths writable (the caller chowns them to ``uid``), ``ro`` readable.

        ``python_script``: ``argv`` is ``[sys.executable, "-I", "-S", SCRIPT, ...]``, run inside the
        launcher's own interpreter (one interpreter start, not two).

        The toolchain's own paths (system directories, this interpreter, the compilers) are
        always visible read-only; everything else (home directories, task files, other
        evaluations' scratch directories, the build cache) is not.
        """
        mode = self.mode()
        if mode == "off":
            return Confined(list(argv), None, mode)
        # A user of its own where its root is private; without namespaces the caller's user stays (as
        # root, the paths a build needs may lie under a home only root can enter): the CPU worker then
        # drops to `nobody` itself before it loads the submission.
        own = mode == "root" and os.geteuid() == 0
        uid = secrets.randbelow(UID_RANGE[1] - UID_RANGE[0]) + UID_RANGE[0] if own else None
        spec = {
            "mode": mode, "uid": uid, "gid": uid, "cwd": str(cwd),
            "ro": [*toolchain_paths(), *map(str, ro)], "rw": [str(cwd), *map(str, rw)],
            "devices": list(self.devices), "sys": self.sys,
            "tmpfs_bytes": self.limits.tmpfs_bytes, "rlimits": self.limits.rlimits(),
            "env": {"HOME": str(cwd), "TMPDIR": str(cwd)}, "python_script": python_script,
        }  # fmt: skip
        return Confined(launch_command(spec, argv), uid, mode)

    def mode(self) -> str:
        """``root`` / ``user`` (namespaces), ``limits`` (fallback) or ``off``."""
        return probe_mode() if self.enabled else "off"


@lru_cache(maxsize=1)
def toolchain_paths() -> tuple[str, ...]:
    """Read-only paths every confined process sees: the system, this interpreter, the compilers."""
    paths = [*SYSTEM_PATHS, sys.prefix, sys.base_prefix, sys.exec_prefix]
    paths.append(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    for name in ("CUDAPERF_NVCC", "CUDAPERF_CXX", "CUDAPERF_CC"):
        if os.environ.get(name):
            paths.append(os.path.dirname(os.path.dirname(os.path.realpath(os.environ[name]))))
    with contextlib.suppress(ImportError):
        import nvidia  # the CUDA wheels: nvcc, ptxas, headers

        paths += [os.path.realpath(p) for p in nvidia.__path__]
    paths.append(str(Path(__file__).parents[1] / "backends" / "cpu" / "include"))
    unique = list(dict.fromkeys(os.path.normpath(p) for p in paths if p and p != "/"))
    return tuple(p for p in unique if not any(p.startswith(q + "/") for q in unique if q != p))  # one bind each


@lru_cache(maxsize=1)
def probe_mode() -> str:
    """Which confinement works here, tried once per process by confining ``true``."""
    want = "root" if os.geteuid() == 0 else "user"
    if _try(want):
        return want
    warnings.warn(
        "cudaperf: kernel namespaces are unavailable here (need root, or unprivileged user namespaces: "
        "sysctl kernel.unprivileged_userns_clone=1; in a container, CAP_SYS_ADMIN or --privileged), so "
        "compilers and workers run with rlimits only (the CPU worker as nobody): a submission can read "
        "what that user can read and reach the network. Set CUDAPERF_CONFINE=off to silence this knowingly.",
        ConfinementWarning,
        stacklevel=2,
    )
    return "limits"


def launch_command(spec: dict[str, Any], argv: Sequence[str]) -> list[str]:
    """The launcher's command line for ``spec`` (see ``confine_exec.py``) running ``argv``."""
    binary = launcher_binary()
    if binary is None:
        spec = {**spec, "seccomp": os.environ.get(SECCOMP_ENV, "").lower() != "off"}
        return [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(spec), "--", *argv]
    command = [str(binary), "--mode", spec["mode"], "--cwd", spec["cwd"],
               "--tmpfs-bytes", str(spec.get("tmpfs_bytes", 64 << 20))]  # fmt: skip
    if spec.get("uid") is not None:
        command += ["--uid", str(spec["uid"]), "--gid", str(spec.get("gid", spec["uid"]))]
    for flag, key in (("--ro", "ro"), ("--rw", "rw"), ("--dev", "devices")):
        for path in spec.get(key, ()):
            command += [flag, str(path)]
    if spec.get("sys"):
        command.append("--sys")
    if os.environ.get(SECCOMP_ENV, "").lower() == "off":
        command.append("--no-seccomp")
    command += [arg for name, value in spec.get("rlimits", {}).items() for arg in ("--rlimit", f"{name}={value}")]
    command += [arg for name, value in spec.get("env", {}).items() for arg in ("--env", f"{name}={value}")]
    return [*command, "--", *argv]


def launcher_binary() -> Path | None:
    """The C launcher, built from ``confine.c`` into the cache once (None where no C compiler works)."""
    with _LAUNCHER_BUILD:  # held while it builds: the other threads then find it built
        return _launcher_binary()


@lru_cache(maxsize=1)
def _launcher_binary() -> Path | None:
    from cudaperf_env.toolchain.cache import cache_dir, digest

    source = LAUNCHER_SOURCE.read_bytes()
    denied = seccomp_define()
    folder = cache_dir("confine", digest("confine/2", source, denied)[:16])
    binary = folder / "confine"
    if binary.is_file():
        return binary
    compiler = os.environ.get("CUDAPERF_CC") or shutil.which("gcc") or shutil.which("cc")
    if not compiler:
        return None
    tmp = folder / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        done = subprocess.run([compiler, "-O2", "-std=gnu11", denied, "-x", "c", "-", "-o", str(tmp)], input=source,
                              capture_output=True, timeout=120, check=False)  # fmt: skip
        if done.returncode != 0:
            return None
        tmp.chmod(0o755)
        os.replace(tmp, binary)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return binary


def seccomp_define() -> str:
    """The C launcher's ``-DCUDAPERF_SECCOMP_DENIED=...``: the shared policy's list for this machine."""
    machine = platform.machine()
    return f"-DCUDAPERF_SECCOMP_DENIED={seccomp_policy.c_macro(machine) if machine in seccomp_policy.MACHINES else ''}"


def _try(mode: str) -> bool:
    uid = UID_RANGE[0] if mode == "root" else None
    spec: dict[str, Any] = {"mode": mode, "uid": uid, "gid": uid, "cwd": "/", "ro": list(toolchain_paths()),
                            "rw": [], "rlimits": {}, "env": {}}  # fmt: skip
    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    try:
        done = subprocess.run(launch_command(spec, [true]), capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def namespace_init(pid: int) -> int | None:
    """The process 1 of a confined tree whose launcher is ``pid`` (its only child), if it runs."""
    with contextlib.suppress(OSError, ValueError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return int(children[0]) if children else None
    return None


def chown_for(uid: int | None, *paths: Path) -> None:
    """Give ``paths`` to ``uid`` (when running as root and confined to another user)."""
    if uid is None or os.geteuid() != 0:
        return
    for path in paths:
        os.chown(path, uid, uid, follow_symlinks=False)  # a planted link is not followed
