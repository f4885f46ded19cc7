"""The confinement launchers (C and its Python twin): what a confined process sees and how it ends."""

import os
import platform
import re
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudaperf_env.toolchain import confine, seccomp_policy
from cudaperf_env.toolchain.cache import scratch_dir
from cudaperf_env.toolchain.confine import Confinement, Limits

needs_namespaces = pytest.mark.skipif(Confinement().mode() not in ("root", "user"), reason="no namespaces here")
TASKS = Path(__file__).parents[3] / "cudaperf_env" / "tasks" / "data"
SCRIPT = (
    'echo "uid=$(id -u)"; echo "pid=$$"; if [ -e {tasks} ] || [ -e /root/.bashrc ]; then echo seen; fi; '
    "grep 'Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3; ls /dev/shm | wc -l"
)


@pytest.fixture(params=["c", "python"])
def launcher(request, monkeypatch):
    """Each launcher in turn (the Python one is the fallback where no C compiler works)."""
    if request.param == "python":
        monkeypatch.setattr(confine, "launcher_binary", lambda: None)
    elif confine.launcher_binary() is None:
        pytest.skip("no C compiler to build the launcher")
    return request.param


def run(argv, tmp_path, **kw):
    tmp_path.chmod(0o755)
    wrapped = Confinement(limits=Limits(processes=64)).wrap(argv, cwd=tmp_path, **kw)
    confine.chown_for(wrapped.uid, tmp_path)
    return subprocess.run(wrapped.argv, capture_output=True, text=True, timeout=60, check=False), wrapped


@needs_namespaces
def test_a_confined_process_sees_only_the_toolchain_and_its_folder(launcher, tmp_path):
    assert TASKS.is_dir()
    done, wrapped = run(["/bin/sh", "-c", SCRIPT.format(tasks=TASKS)], tmp_path)
    lines = done.stdout.split()
    assert done.returncode == 0, done.stderr
    assert f"uid={wrapped.uid if os.geteuid() == 0 else os.getuid()}" in lines and "uid=0" not in lines
    assert "pid=2" in lines  # its own PID namespace, under a small init
    assert "seen" not in lines and lines[-2:] == ["64", "0"]  # no task files, no home, NPROC, empty /dev/shm


@needs_namespaces
def test_exit_status_and_signals_come_back_as_the_program_ended(launcher, tmp_path):
    assert run(["/bin/sh", "-c", "exit 7"], tmp_path)[0].returncode == 7
    assert run(["/bin/sh", "-c", "kill -ABRT $$"], tmp_path)[0].returncode == -signal.SIGABRT


@needs_namespaces
def test_a_set_up_failure_is_status_125_with_a_reason(launcher, tmp_path):
    done, _ = run(["/nonexistent/program"], tmp_path)
    assert done.returncode == 127 and "cudaperf-confine" in done.stderr


def test_confinement_off_runs_the_command_as_is(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAPERF_CONFINE", "off")
    wrapped = Confinement().wrap(["/bin/true"], cwd=tmp_path)
    assert wrapped.argv == ["/bin/true"] and wrapped.mode == "off" and wrapped.uid is None


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        Limits(processes=0)


def test_without_namespaces_it_falls_back_with_a_warning(monkeypatch):
    monkeypatch.setattr(confine, "_try", lambda mode: False)
    confine.probe_mode.cache_clear()
    try:
        with pytest.warns(confine.ConfinementWarning, match="namespaces are unavailable"):
            assert confine.probe_mode() == "limits"
    finally:
        confine.probe_mode.cache_clear()


def test_the_limits_fallback_keeps_the_user_and_sets_the_limits(launcher, monkeypatch):
    monkeypatch.setattr(confine, "probe_mode", lambda: "limits")
    folder = scratch_dir()  # on the host's file system now: a folder its user can reach
    try:
        done, wrapped = run(["/bin/sh", "-c", "id -u; grep 'Max processes' /proc/self/limits"], folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert wrapped.uid is None and done.returncode == 0 and done.stdout.split()[0] == str(os.getuid())
    assert " 64 " in done.stdout


PROBE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static void *nothing(void *arg) { return arg; }
static void report(const char *what, long rc) {
  const char *err = errno == EPERM ? "EPERM" : errno == ENOSYS ? "ENOSYS" : "other";
  printf("%s=%s\n", what, rc == -1 ? err : "ok");
}
int main(int argc, char **argv) {
  (void)argv;
  if (argc == 1) {  /* with an argument: threads and processes only (unconfined, ptrace would stop us) */
    report("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
    report("unshare", unshare(CLONE_NEWUSER));
    report("clone3", syscall(SYS_clone3, 0, 0));
    report("perf", syscall(SYS_perf_event_open, 0, 0, -1, -1, 0));
  }
  pthread_t t;
  report("thread", pthread_create(&t, 0, nothing, 0) == 0 ? pthread_join(t, 0) : -1);
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  report("fork", pid > 0 && waitpid(pid, &status, 0) == pid ? 0 : -1);
  return 0;
}
"""


@needs_namespaces
def test_both_launchers_refuse_system_calls_that_reach_past_the_sandbox(launcher, tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("no C compiler to build the probe")
    (tmp_path / "probe.c").write_text(PROBE)
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c")], check=True)
    outside = subprocess.run([str(tmp_path / "probe"), "safe"], capture_output=True, text=True, timeout=30).stdout
    assert "thread=ok" in outside and "fork=ok" in outside
    done, _ = run([str(tmp_path / "probe")], tmp_path)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=") for line in done.stdout.split())
    assert seen == {
        "ptrace": "EPERM",
        "unshare": "EPERM",
        "clone3": "ENOSYS",
        "perf": "EPERM",
        "thread": "ok",
        "fork": "ok",
    }  # fmt: skip  (threads and processes still work: clone)


@pytest.mark.skipif(platform.machine() not in seccomp_policy.MACHINES, reason="no filter for this architecture")
def test_the_c_launchers_filter_is_the_shared_policys(tmp_path):
    """Byte for byte what the Python launcher installs (``seccomp_policy.program``)."""
    binary = confine.launcher_binary()
    if binary is None:
        pytest.skip("no C compiler to build the launcher")
    done = subprocess.run([str(binary), "--print-seccomp"], capture_output=True, timeout=30, check=True)
    assert done.stdout == seccomp_policy.program_bytes(platform.machine())
    assert len(done.stdout) == 8 * (len(seccomp_policy.denied(platform.machine())) * 2 + 12 + 2 * (
        platform.machine() == "x86_64"))


@pytest.mark.parametrize(("header", "column"), [("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", 0),
                                                ("/usr/include/asm-generic/unistd.h", 1)])  # fmt: skip
def test_the_policys_numbers_are_the_kernel_headers(header, column):
    """x86-64's from its own header; arm64 uses the generic table."""
    if not os.path.exists(header):
        pytest.skip(f"{header} is not installed")
    text = Path(header).read_text()
    numbers = dict(re.findall(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$", text, re.M))
    for name, pair in seccomp_policy.NUMBERS.items():
        assert pair[column] == (int(numbers[name]) if name in numbers else None), name


def test_the_python_launcher_can_leave_the_filter_out(monkeypatch):
    spec = {"mode": "limits", "cwd": "/", "ro": [], "rw": [], "rlimits": {}, "env": {}}
    monkeypatch.setattr(confine, "launcher_binary", lambda: None)
    assert '"seccomp": true' in confine.launch_command(spec, ["/bin/true"])[4]
    monkeypatch.setenv(confine.SECCOMP_ENV, "off")
    assert '"seccomp": false' in confine.launch_command(spec, ["/bin/true"])[4]


def test_the_seccomp_filter_can_be_left_out(monkeypatch):
    spec = {"mode": "limits", "cwd": "/", "ro": [], "rw": [], "rlimits": {}, "env": {}}
    if confine.launcher_binary() is None:
        pytest.skip("no C compiler to build the launcher")
    assert "--no-seccomp" not in confine.launch_command(spec, ["/bin/true"])
    monkeypatch.setenv(confine.SECCOMP_ENV, "off")
    assert "--no-seccomp" in confine.launch_command(spec, ["/bin/true"])


def test_threads_asking_for_the_launcher_at_once_build_it_once(tmp_path, monkeypatch):
    """A first step's nvcc check, builds and worker all start confined processes at the same moment."""
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("no C compiler to build the launcher")
    monkeypatch.setenv("CUDAPERF_CACHE_DIR", str(tmp_path / "cache"))
    compiles = []
    real_run = subprocess.run

    def counted(command, *args, **kwargs):
        compiles.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(confine.subprocess, "run", counted)
    confine._launcher_binary.cache_clear()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            binaries = list(pool.map(lambda _: confine.launcher_binary(), range(4)))
    finally:
        confine._launcher_binary.cache_clear()  # the next test's cache directory has its own
    assert len(set(binaries)) == 1 and binaries[0] is not None and binaries[0].is_file()
    assert len(compiles) == 1, compiles
