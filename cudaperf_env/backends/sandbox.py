"""The parent's handle on one untrusted worker process: spawn, ask, time out, kill."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cudaperf_env.backends.base import Crash
from cudaperf_env.text import sanitize, truncate

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
# Exit codes of the CPU runtime's fatal errors (docs/cpu-backend.md).
FATAL_KINDS = {70: "deadlock", 71: "illegal_address", 72: "arithmetic", 73: "device_assert",
               74: "abort", 75: "illegal_instruction"}  # fmt: skip
_FATAL_LINE = re.compile(r"cudaperf-fatal: (\w+): (.*)")


class WorkerProcess:
    """One submission's worker: a fresh interpreter running ``worker.py``.

    Use as a context manager; the process group is killed on exit whatever happened.
    """

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str] | None = None,
        script: Path = WORKER_SCRIPT,
        wrapper: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self._unanswered = 0
        self.early_replies: list[dict[str, Any]] = []  # replies to send(), in order
        read_fd, write_fd = os.pipe()
        self._stdout = open(workdir / "worker.stdout", "wb")  # noqa: SIM115 - lives with the process
        self._stderr = open(workdir / "worker.stderr", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*wrapper, sys.executable, "-I", "-S", str(script), str(write_fd)],  # wrapper: e.g. compute-sanitizer
            stdin=subprocess.PIPE,
            stdout=self._stdout,
            stderr=self._stderr,
            cwd=workdir,
            env={"PATH": os.defpath, "LC_ALL": "C", **(env or {})},
            pass_fds=(write_fd,),
            start_new_session=True,
            preexec_fn=_limits,
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
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return Crash("timeout", f"did not finish within {timeout_s:g} s (killed)")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = self._replies.read(65536)
                if not chunk:
                    return self._crash()
                self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            self.kill()
            return Crash("protocol", "the worker sent an unreadable reply")

    def stdout_text(self, max_chars: int = 2000) -> str:
        """What the submission printed (device or host printf), sanitized and truncated."""
        data = (self.workdir / "worker.stdout").read_bytes()[: 4 * max_chars]
        return truncate(sanitize(data.decode("utf-8", "replace")), max_chars, max_lines=40)

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
        """Kill the whole process group and reap it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self._replies, self._stdout, self._stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def _crash(self) -> Crash:
        code = self.proc.wait()
        stderr = (self.workdir / "worker.stderr").read_bytes()[-8000:].decode("utf-8", "replace")
        stderr = sanitize(stderr)
        self.kill()
        match = _FATAL_LINE.search(stderr)
        if match:
            return Crash(match.group(1), match.group(2).strip(), stderr)
        if code < 0:
            name = signal.Signals(-code).name
            return Crash("signal", f"the process was killed by {name}", stderr)
        tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        return Crash("exit", f"the process exited with status {code}" + (f": {tail}" if tail else ""), stderr)


def _limits() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
