"""Confinement launcher: ``python -I -S confine_exec.py SPEC -- PROGRAM ARGS...``.

Standard library only (it runs before anything of the project may be trusted to be
importable). It puts PROGRAM in kernel namespaces of its own and then replaces itself
with it:

* a new PID namespace (a small init is its process 1 and PROGRAM its only child:
  when PROGRAM exits, init exits and the kernel kills every process PROGRAM left;
  nothing inside can see or signal a process outside), a new
  network namespace (no interface but a downed loopback), new IPC and UTS namespaces;
* a new mount namespace whose root is an empty tmpfs holding only the paths SPEC
  names (the toolchain and the interpreter read-only, the scratch directories
  read-write), a private ``/tmp`` and ``/dev/shm`` (tmpfs of bounded size), a minimal
  ``/dev`` (plus the device nodes SPEC names, e.g. a GPU's) and a fresh ``/proc``;
* rlimits (address space, CPU time, file size, processes, open files, no core);
* an unprivileged user: as root, a user id of SPEC's choosing (one per evaluation,
  so its process limit and its files are its own); otherwise a user namespace
  mapping the caller's own id; then ``no_new_privs``;
* the seccomp filter of ``seccomp_policy.py`` (the C launcher's, from the same list), unless
  SPEC's ``seccomp`` is false.

SPEC is JSON: ``{"mode": "root"|"user"|"limits", "uid": N, "gid": N, "ro": [PATH...],
"rw": [PATH...], "devices": [PATH...], "sys": BOOL, "tmpfs_bytes": N, "rlimits":
{NAME: N}, "cwd": PATH, "env": {NAME: VALUE}, "python_script": BOOL}``; with
``python_script``, PROGRAM is ``python -I -S SCRIPT ARGS`` and SCRIPT runs in this
interpreter (already isolated the same way), saving a second interpreter start. In ``limits`` mode (namespaces
unavailable) only the rlimits and the user change apply. A failure to set up is
reported on stderr as ``cudaperf-confine: ...`` with exit status 125, before PROGRAM
runs. The launcher process itself waits outside the namespace and exits as PROGRAM
did (same status, same signal).
"""

import ctypes
import importlib.util
import json
import os
import platform
import resource
import runpy
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 38, 22, 2
ROOT = "/tmp/.cudaperf-root"  # inside the private /tmp of the new mount namespace
BASE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
LIMITS = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA, "cpu": resource.RLIMIT_CPU,
          "fsize": resource.RLIMIT_FSIZE, "nproc": resource.RLIMIT_NPROC, "nofile": resource.RLIMIT_NOFILE,
          "core": resource.RLIMIT_CORE}  # fmt: skip
_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """A step of the set-up failed (its message names the step and the errno)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)} (errno {err})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def _bind(fd: int, target: str, read_only: bool) -> None:
    """Bind the object open as O_PATH ``fd`` onto ``target`` (an existing file or directory)."""
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    if read_only:  # keep the flags the kernel locked on the source (nodev, nosuid, ...)
        locked = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | locked)


def _place(path: str, is_dir: bool) -> str:
    """Create ``path`` (and its parents, world-traversable) under the new root; its new name."""
    inside = ROOT + path
    os.makedirs(inside if is_dir else os.path.dirname(inside), mode=0o755, exist_ok=True)
    if not is_dir and not os.path.exists(inside):
        os.close(os.open(inside, os.O_CREAT | os.O_WRONLY, 0o644))
    return inside


def _open_sources(spec: dict) -> list[tuple[str, int, bool, bool]]:
    """``(path, O_PATH fd, is_dir, read_only)`` of every path to show, opened before any mount hides it."""
    found, seen = [], set()
    devices = [*BASE_DEVICES, *spec.get("devices", ())]
    if spec.get("sys"):
        devices.append("/sys")
    for paths, read_only in ((spec.get("ro", ()), True), (devices, False), (spec.get("rw", ()), False)):
        for path in paths:
            path = os.path.normpath(path)
            if path in seen or not os.path.lexists(path):
                continue
            seen.add(path)
            if os.path.islink(path) and os.path.dirname(path) == "/":
                found.append((path, -1, False, read_only))  # /bin -> usr/bin: recreated as a link
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            found.append((path, fd, os.path.isdir(path), read_only))
    return found


def _build_root(spec: dict) -> None:
    """Mount the new root (run as process 1 of the new PID namespace, in the new mount namespace)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the host
    sources = _open_sources(spec)
    size = int(spec.get("tmpfs_bytes", 64 << 20))
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    os.mkdir(ROOT)
    _mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for sub, mode in (("tmp", "1777"), ("dev/shm", "1777")):
        os.makedirs(f"{ROOT}/{sub}", exist_ok=True)
        _mount("tmpfs", f"{ROOT}/{sub}", "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
    for path, fd, is_dir, read_only in sources:
        if fd < 0:
            os.symlink(os.readlink(path), ROOT + path)
            continue
        _bind(fd, _place(path, is_dir), read_only)
        os.close(fd)
    os.makedirs(ROOT + "/proc", exist_ok=True)
    _mount("proc", ROOT + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chroot(ROOT)
    os.chdir("/")


def _enter_user_namespace() -> None:
    """Unprivileged callers: a user namespace mapping only the caller's own ids."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER), "unshare(user)")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def _drop(spec: dict, seccomp: bytes) -> None:
    """rlimits, then the unprivileged user, then no_new_privs (nothing after this can regain privilege)."""
    for name, value in spec.get("rlimits", {}).items():
        resource.setrlimit(LIMITS[name], (int(value), int(value)))
    uid = spec.get("uid")
    if uid is not None and os.geteuid() == 0 and spec.get("mode") != "user":
        os.setgroups([])
        os.setgid(int(spec.get("gid", uid)))
        os.setuid(int(uid))
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")
    if seccomp:
        _install_seccomp(seccomp)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _seccomp_program(spec: dict) -> bytes:
    """The shared policy's filter (``seccomp_policy.py``, loaded by path before the new root hides it: ``-I``
    leaves this folder off ``sys.path``); none on an architecture it does not describe (as the C
    launcher) or when SPEC's ``seccomp`` is false."""
    if not spec.get("seccomp", True):
        return b""
    where = importlib.util.spec_from_file_location("seccomp_policy", os.path.join(os.path.dirname(__file__),
                                                                                  "seccomp_policy.py"))  # fmt: skip
    if where is None or where.loader is None:
        raise SetupError("seccomp: cannot load seccomp_policy.py")
    policy = importlib.util.module_from_spec(where)
    where.loader.exec_module(policy)
    machine = platform.machine()
    return policy.program_bytes(machine) if machine in policy.MACHINES else b""


def _install_seccomp(code: bytes) -> None:
    buffer = ctypes.create_string_buffer(code, len(code))
    program = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        err = ctypes.get_errno()
        if err != 22:  # EINVAL: a kernel without seccomp filters; the rest of the sandbox stands
            raise SetupError(f"seccomp: {os.strerror(err)} (errno {err})")


def _wait(pid: int) -> int:
    """Wait for ``pid``; its wait status."""
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 125 << 8


def _mirror(status: int) -> None:
    """Exit the way a process with wait status ``status`` did (same code, same signal)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _outside(pid: int, report: int) -> None:
    """The launcher, outside the namespace: wait for its process 1 and exit as PROGRAM did."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(pid, signal.SIGKILL))
    status = _wait(pid)
    word = os.read(report, 16)
    _mirror(int(word) if word.strip().isdigit() else status)


def _init(report: int) -> int:
    """Process 1 of the namespace: fork PROGRAM's process, reap orphans until it ends, report its status.

    PROGRAM is not process 1 itself: the kernel drops signals a process 1 sends itself, so
    ``abort()`` or ``raise()`` would not end it as they end any other program.
    """
    pid = os.fork()
    if pid == 0:
        os.close(report)
        return 0
    while True:
        try:
            done, status = os.wait()
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(125)
        if done == pid:
            os.write(report, str(status).encode())
            os._exit(0)  # the kernel then kills whatever PROGRAM left in the namespace


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: confine_exec.py SPEC -- PROGRAM ARGS...\n")
        os._exit(2)
    spec, program = json.loads(argv[1]), argv[3:]
    env = {**os.environ, **spec.get("env", {})}
    try:
        seccomp = _seccomp_program(spec)
        if spec.get("mode") in ("root", "user"):
            if spec["mode"] == "user":
                _enter_user_namespace()
            flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
            _check(_libc.unshare(flags), "unshare(mount, pid, net, ipc, uts)")
            report_r, report_w = os.pipe()
            pid = os.fork()
            if pid:
                os.close(report_w)
                _outside(pid, report_r)
            os.close(report_r)
            _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(pdeathsig)")
            _build_root(spec)
            _init(report_w)
        _drop(spec, seccomp)
        os.chdir(spec.get("cwd") or "/")
    except (OSError, SetupError, KeyError, ValueError) as exc:
        sys.stderr.write(f"cudaperf-confine: {exc}\n")
        sys.stderr.flush()
        os._exit(125)
    if spec.get("python_script"):  # PROGRAM is `python -I -S SCRIPT ARGS`: run SCRIPT here, no second interpreter
        os.environ.clear()
        os.environ.update(env)
        sys.argv = program[3:]
        runpy.run_path(program[3], run_name="__main__")
        sys.exit(0)
    try:
        os.execve(program[0], program, env)
    except OSError as exc:
        sys.stderr.write(f"cudaperf-confine: cannot run {program[0]}: {exc}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
