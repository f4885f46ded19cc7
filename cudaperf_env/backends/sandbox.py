"""The parent's handle on one untrusted worker process: spawn, ask, time out, kill.

Every byte from the worker is hostile. Replies are frames (:func:`frame`): a magic,
a length and a JSON object, checked before anything is parsed; a frame that is
malformed, too long or not an object ends the worker with a ``protocol``
:class:`Crash`, never an exception. What the worker printed is read through the
parent's own descriptors (never by path: the worker owns its directory and could
put a link there), with a size bound.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudaperf_env.backends.base import Crash
from cudaperf_env.text import sanitize, truncate
from cudaperf_env.toolchain.confine import Confinement, Limits, chown_for, namespace_init

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
# Exit codes of the CPU runtime's fatal errors (docs/cpu-backend.md).
FATAL_KINDS = {70: "deadlock", 71: "illegal_address", 72: "arithmetic", 73: "device_assert",
               74: "abort", 75: "illegal_instruction", 78: "out_of_bounds"}  # fmt: skip
_FATAL_LINE = re.compile(r"cudaperf-fatal: (\w+): (.*)")
# A worker writes only its printed output (8 MiB at most); it runs ~10 wall-seconds per configuration.
WORKER_LIMITS = Limits(file_bytes=8 << 20, cpu_seconds=900)
FRAME_MAGIC = b"CPF1"
MAX_FRAME_BYTES = 16 << 20
_HEADER = len(FRAME_MAGIC) + 4


def frame(message: dict[str, Any]) -> bytes:
    """One reply as the worker writes it: magic, little-endian u32 length, JSON object."""
    body = json.dumps(message).encode()
    return FRAME_MAGIC + len(body).to_bytes(4, "little") + body


def unframe(pending: bytes) -> tuple[dict[str, Any] | None, bytes, str]:
    """Parse one frame off ``pending`` (pure): ``(message, rest, "")``, ``(None, pending, "")`` when
    incomplete, or ``(None, b"", why)`` when the bytes are not a valid frame."""
    if len(pending) < _HEADER:
        return (None, pending, "") if FRAME_MAGIC.startswith(pending[: len(FRAME_MAGIC)]) else (None, b"", "magic")
    if pending[: len(FRAME_MAGIC)] != FRAME_MAGIC:
        return None, b"", "magic"
    size = int.from_bytes(pending[len(FRAME_MAGIC) : _HEADER], "little")
    if size > MAX_FRAME_BYTES:
        return None, b"", f"a {size}-byte frame"
    if len(pending) < _HEADER + size:
        return None, pending, ""
    body, rest = pending[_HEADER : _HEADER + size], pending[_HEADER + size :]
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None, b"", "unreadable JSON"
    if not isinstance(message, dict):
        return None, b"", "not a JSON object"
    return message, rest, ""


class WorkerProcess:
    """One submission's worker: a fresh interpreter running ``worker.py``.

    Use as a context manager; the process group (and, confined, its PID namespace) is
    killed on exit whatever happened.

    Args:
        workdir: The evaluation's scratch directory (the worker's only writable place).
        env: Extra environment variables.
        script: The worker program (``worker.py`` or ``cuda/gpu_worker.py``).
        wrapper: A command the worker runs under (e.g. compute-sanitizer).
        confinement: Kernel confinement (default: on, see ``toolchain/confine.py``).
        visible: Further read-only paths the worker needs (libraries outside ``workdir``).
        site_packages: Start the interpreter with its site packages (``-I`` without ``-S``), for a worker
            that imports installed packages (the KernelBench-mode worker imports torch).
    """

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str] | None = None,
        script: Path = WORKER_SCRIPT,
        wrapper: Sequence[str] = (),
        confinement: Confinement | None = None,
        visible: Sequence[Path] = (),
        site_packages: bool = False,
    ) -> None:
        self.workdir = workdir
        self._unanswered = 0
        self.early_replies: list[dict[str, Any]] = []  # replies to send(), in order
        check_workdir(workdir)
        # Opened by the parent (never through a link) and read back through these descriptors only.
        self._stdout = _open_own(workdir / "worker.stdout")
        self._stderr = _open_own(workdir / "worker.stderr")
        read_fd, write_fd = os.pipe()
        flags = ["-I"] if site_packages else ["-I", "-S"]
        command = [*wrapper, sys.executable, *flags, str(script), str(write_fd)]  # wrapper: e.g. compute-sanitizer
        confined = (confinement or Confinement(limits=WORKER_LIMITS)).wrap(
            command, cwd=workdir, ro=[script, *visible], python_script=not wrapper and not site_packages
        )
        self.uid = confined.uid  # the worker's own user (None: the caller's)
        self.confinement = confined.mode
        chown_for(self.uid, workdir)
        self.proc = subprocess.Popen(
            confined.argv,
            stdin=subprocess.PIPE,
            stdout=self._stdout,
            stderr=self._stderr,
            cwd=workdir,
            env={"PATH": os.defpath, "LC_ALL": "C", **(env or {})},
            pass_fds=(write_fd,),
            start_new_session=True,
            preexec_fn=None if confined.mode in ("root", "user", "limits") else _limits,
        )
        os.close(write_fd)
        self._replies = os.fdopen(read_fd, "rb", buffering=0)
        self._pending = b""

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def send(self, message: dict[str, Any]) -> None:
        """Send a request without waiting (e.g. to create a CUDA context while compiling).

        Its reply is read by the next :meth:`request`, which fails if that reply does.
        """
        self._unanswered += 1
        self._write(message)

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any] | Crash:
        """Send one request; the reply, or a :class:`Crash` if the worker died or timed out."""
        if not self._write(message):
            return self._crash()
        while self._unanswered:
            self._unanswered -= 1
            earlier = self._receive(timeout_s)
            if isinstance(earlier, Crash) or not earlier.get("ok"):
                return earlier
            self.early_replies.append(earlier)
        return self._receive(timeout_s)

    def _write(self, message: dict[str, Any]) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def _receive(self, timeout_s: float) -> dict[str, Any] | Crash:
        deadline = time.monotonic() + timeout_s
        while True:
            message, self._pending, why = unframe(self._pending)
            if message is not None:
                return message
            if why:
                self.kill()
                return Crash("protocol", f"the worker sent a malformed reply ({why}): the submission wrote to the "
                                         "harness's reply channel or corrupted the worker")  # fmt: skip
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return Crash("timeout", f"did not finish within {timeout_s:g} s (killed)")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                try:
                    chunk = self._replies.read(1 << 20)
                except OSError:
                    chunk = b""
                if not chunk:
                    return self._crash()
                self._pending += chunk

    def stdout_text(self, max_chars: int = 2000, start: int = 0) -> str:
        """What the submission printed (device or host printf) from byte ``start`` on, sanitized and truncated."""
        data = _read_at(self._stdout, 4 * max_chars, start)
        return truncate(sanitize(data.decode("utf-8", "replace")), max_chars, max_lines=40)

    def stdout_size(self) -> int:
        """Bytes printed so far (a call's own output starts here)."""
        try:
            return os.fstat(self._stdout.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def finish(self, timeout_s: float) -> None:
        """Let the worker exit on its own (end of input), so wrappers such as a sanitizer write their
        report; killed if it has not exited within ``timeout_s``."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout_s)
        self.kill()

    def kill(self) -> None:
        """Kill the whole process group and the worker's PID namespace, and reap them.

        Process 1 of the namespace is killed by pid too: a worker that left the process
        group (``setsid``) still dies, and with it everything in its namespace.
        """
        if self.proc.poll() is None:
            init = namespace_init(self.proc.pid) if self.confinement in ("root", "user") else None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            if init is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(init, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self._replies, self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def _crash(self) -> Crash:
        code = self.proc.wait()
        stderr = sanitize(_read_tail(self._stderr, 8000).decode("utf-8", "replace"))
        self.kill()
        match = _FATAL_LINE.search(stderr)
        if match:
            return Crash(match.group(1), match.group(2).strip(), stderr)
        if code < 0:
            name = _signal_name(-code)
            return Crash("signal", f"the process was killed by {name}", stderr)
        tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        return Crash("exit", f"the process exited with status {code}" + (f": {tail}" if tail else ""), stderr)


class UnsafeWorkdir(OSError):
    """The worker's folder is a link or not a directory: an earlier submission's process planted it."""


def check_workdir(workdir: Path) -> None:
    """Raise :class:`UnsafeWorkdir` unless ``workdir`` is a real directory (not a link to one)."""
    st = os.lstat(workdir)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeWorkdir(f"{workdir} is not a plain directory")


def _open_own(path: Path) -> Any:
    """``path`` created (truncated) for reading and writing, refusing a link in its place."""
    flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.fdopen(os.open(path, flags, 0o644), "w+b", buffering=0)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read_at(stream: Any, limit: int, start: int = 0) -> bytes:
    """Up to ``limit`` bytes from ``start`` of the file open as ``stream`` (b"" if it is gone or closed)."""
    try:
        return os.pread(stream.fileno(), limit, start)
    except (OSError, ValueError):
        return b""


def _read_tail(stream: Any, limit: int) -> bytes:
    """The last ``limit`` bytes of the file open as ``stream``."""
    try:
        size = os.fstat(stream.fileno()).st_size
        return os.pread(stream.fileno(), limit, max(0, size - limit))
    except (OSError, ValueError):
        return b""


def _limits() -> None:
    """rlimits where confinement is off."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
