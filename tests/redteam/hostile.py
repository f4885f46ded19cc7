"""Helpers of the red-team suite: hostile host code run in the real worker, a root-only secret.

Most attacks here are plain C built with gcc and run by the real worker in its real
confinement (``backends/execute.py``): they skip the screen on purpose, to show that the
kernel boundary holds where the screen is not looking. A few go through the whole CPU
pipeline (nvcc check, g++, worker) where the pipeline is what is attacked.
"""

import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudaperf_env.backends.execute import Job, run_jobs
from cudaperf_env.backends.harness import wrap
from cudaperf_env.tasks import load_task
from cudaperf_env.tasks.inputs import make_inputs
from cudaperf_env.toolchain import tools
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.confine import UID_RANGE, Confinement
from cudaperf_env.toolchain.native import build_library

SAXPY = load_task(Path(__file__).parents[1] / "fixtures" / "tasks" / "saxpy.yaml")
HEADERS = (
    "#define _GNU_SOURCE\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n"
    "#include <signal.h>\n#include <fcntl.h>\n#include <dirent.h>\n#include <errno.h>\n#include <sys/socket.h>\n"
    "#include <netinet/in.h>\n#include <arpa/inet.h>\n#include <sys/stat.h>\n#include <sys/types.h>\n"
)
HONEST = "for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];"

needs_namespaces = pytest.mark.skipif(
    Confinement().mode() not in ("root", "user"), reason="kernel namespaces are unavailable here"
)


def build_hostile(body: str, prologue: str = "") -> Path:
    """``saxpy`` with ``body`` as its C body, built with gcc (unconfined: the test's own code)."""
    code = HEADERS + prologue + "void saxpy(int n, float a, const float* x, float* y) {\n" + body + "\n}\n"
    build = build_library(tools.host_compiler("gcc"), ["-std=gnu11", "-O1", "-fPIC", "-shared"],
                          wrap(SAXPY, code, "c"), ".c")  # fmt: skip
    assert build.ok and build.library is not None, build.log
    return build.library


def run_hostile(body: str, timeout_s: float = 5.0, configs=None, workdir: Path | None = None, prologue: str = ""):
    """Build ``saxpy`` with ``body`` (C, gcc) and run it in a confined worker: (jobs, results, workdir)."""
    library = build_hostile(body, prologue)
    jobs = [Job(c, make_inputs(SAXPY, c, seed=7)) for c in (configs or SAXPY.configs[:1])]
    workdir = workdir or scratch_dir()
    try:
        return jobs, run_jobs(library, SAXPY, jobs, workdir, timeout_s, uid=65534), workdir
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def secret() -> Iterator[tuple[Path, str]]:
    """A file only root may read, holding a random marker: (path, marker)."""
    folder = Path(tempfile.mkdtemp(prefix="cudaperf-secret-", dir=os.path.expanduser("~")))
    folder.chmod(0o700)
    marker = f"TOPSECRET{secrets.token_hex(8)}"
    path = folder / "secret.txt"
    path.write_text(marker + "\n")
    path.chmod(0o600)
    yield path, marker
    shutil.rmtree(folder, ignore_errors=True)


def confined_processes(wait_s: float = 3.0) -> list[int]:
    """Host pids of live processes running as a confinement user id that are still there after ``wait_s``
    (none may outlive its evaluation; the wait lets another test session's running workers finish)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = _confined_now()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _confined_now() -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        uid = int(fields["Uid"].split()[0])
        pid = int(status.parent.name)
        live = not fields["State"].strip().startswith(("Z", "X"))
        if UID_RANGE[0] <= uid < UID_RANGE[1] and live and not _under_another_session(pid):
            found.append(pid)
    return found


def _under_another_session(pid: int) -> bool:
    """Whether ``pid`` belongs to a job beside this test session: another pytest session, or any other
    program that confines processes (a feature extraction compiling with nvcc, a training run).

    A confined process is this session's if it descends from this process, and a leak if it is an
    orphan (nothing but confined processes between it and init).
    """
    only_confined = True
    for _ in range(64):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if pid == os.getpid():  # one of this session's (this process or xdist worker)
                return False
            if pid <= 1:
                return not only_confined
            only_confined = only_confined and UID_RANGE[0] <= Path(f"/proc/{pid}").stat().st_uid < UID_RANGE[1]
        except (OSError, ValueError, IndexError):
            return False
    return False


def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
